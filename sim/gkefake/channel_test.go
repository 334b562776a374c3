package gkefake

import (
	"context"
	"net/http"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// TestReleaseChannel: a cluster on a channel says so, getServerConfig
// lists the channel's valid versions, and its pools take only those.
func TestReleaseChannel(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, fake.NewClientset(), Options{Compute: gcefake.Options{LaunchDelay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.CreateCluster(ClusterSpec{Name: "c", Location: "us-central1", MasterVersion: "1.31.2-gke.1000",
		ValidNodeVersions: []string{"1.30.5-gke.1000"}, Channel: "REGULAR", ChannelVersions: []string{"1.30.9-gke.1300"}})
	if err := srv.CreatePool(ctx, PoolSpec{Cluster: "c", Location: "us-central1", Name: "p", Zones: []string{"us-central1-a"}, NodesPerZone: 1, Version: "1.30.9-gke.1300"}); err != nil {
		t.Fatal(err)
	}
	svc, err := container.NewService(ctx, option.WithEndpoint(srv.Endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	loc := "projects/" + srv.Project() + "/locations/us-central1"
	cl, err := svc.Projects.Locations.Clusters.Get(loc + "/clusters/c").Do()
	if err != nil || cl.ReleaseChannel == nil || cl.ReleaseChannel.Channel != "REGULAR" {
		t.Fatalf("cluster %+v, %v: want release channel REGULAR", cl, err)
	}
	sc, err := svc.Projects.Locations.GetServerConfig(loc).Do()
	if err != nil || len(sc.Channels) != 1 || sc.Channels[0].Channel != "REGULAR" || len(sc.Channels[0].ValidVersions) != 2 {
		t.Fatalf("server config %+v, %v: want REGULAR's versions", sc, err)
	}
	_, err = svc.Projects.Locations.Clusters.NodePools.Update(loc+"/clusters/c/nodePools/p", &container.UpdateNodePoolRequest{NodeVersion: "1.30.5-gke.1000"}).Do()
	if ge, ok := err.(*googleapi.Error); !ok || ge.Code != http.StatusBadRequest {
		t.Errorf("a version outside the channel: got %v, want HTTP 400", err)
	}
}
