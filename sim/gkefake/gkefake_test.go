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

// TestUpdateRefusals: a stale etag is refused with ABORTED, a version
// above the master's or not offered with INVALID_ARGUMENT, and none of
// them changes the pool. Instances never launch here (no kube nodes).
func TestUpdateRefusals(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, fake.NewClientset(), Options{Compute: gcefake.Options{LaunchDelay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.CreateCluster(ClusterSpec{Name: "c", Location: "us-central1", MasterVersion: "1.31.2-gke.1000", ValidNodeVersions: []string{"1.30.5-gke.1000", "1.32.1-gke.1000"}})
	if err := srv.CreatePool(ctx, PoolSpec{Cluster: "c", Location: "us-central1", Name: "p", Zones: []string{"us-central1-a"}, NodesPerZone: 1, Version: "1.30.5-gke.1000"}); err != nil {
		t.Fatal(err)
	}
	svc, err := container.NewService(ctx, option.WithEndpoint(srv.Endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	name := "projects/" + srv.Project() + "/locations/us-central1/clusters/c/nodePools/p"
	before, err := svc.Projects.Locations.Clusters.NodePools.Get(name).Do()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  container.UpdateNodePoolRequest
		code int
	}{
		{"stale etag", container.UpdateNodePoolRequest{NodeVersion: "1.31.2-gke.1000", Etag: "stale"}, http.StatusConflict},
		{"above the master", container.UpdateNodePoolRequest{NodeVersion: "1.32.1-gke.1000"}, http.StatusBadRequest},
		{"not offered", container.UpdateNodePoolRequest{NodeVersion: "1.29"}, http.StatusBadRequest},
		{"unknown image type", container.UpdateNodePoolRequest{ImageType: "FANCY"}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Projects.Locations.Clusters.NodePools.Update(name, &tc.req).Do()
			ge, ok := err.(*googleapi.Error)
			if !ok || ge.Code != tc.code {
				t.Errorf("want HTTP %d, got %v", tc.code, err)
			}
		})
	}
	after, _ := svc.Projects.Locations.Clusters.NodePools.Get(name).Do()
	if after.Etag != before.Etag || after.Version != before.Version {
		t.Errorf("refused updates changed the pool: etag %s -> %s, version %s -> %s", before.Etag, after.Etag, before.Version, after.Version)
	}
	if n := srv.UpgradeCalls(); n != 4 {
		t.Errorf("%d upgrade calls recorded, want the 4 refused ones", n)
	}
}
