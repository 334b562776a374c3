package gkefake

import (
	"context"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"
	"google.golang.org/api/option"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// TestPodBlockBits: a node's pod block is maxPodsPerNode rounded up to a
// power of 2 and doubled, as GKE's table has it (110 pods: /24, 32: /26,
// 8: /28).
func TestPodBlockBits(t *testing.T) {
	for maxPods, want := range map[int64]int64{110: 24, 64: 25, 32: 26, 16: 27, 8: 28} {
		if got := podBlockBits(maxPods); got != want {
			t.Errorf("%d pods: /%d, want /%d", maxPods, got, want)
		}
	}
}

// TestPoolPodRange: nodePools.get reports the pool's block size and how
// much of the cluster's pod range its nodes take (3 nodes of a /24 in a
// /22: 0.75), clusters.get the range; the gke provider reads them and
// finds room for 1 surge node, not 2.
func TestPoolPodRange(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, fake.NewClientset(), Options{Compute: gcefake.Options{LaunchDelay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.CreateCluster(ClusterSpec{Name: "c", Location: "us-central1", MasterVersion: "1.31.2-gke.1000", PodRange: "10.4.0.0/22"})
	if err := srv.CreatePool(ctx, PoolSpec{Cluster: "c", Location: "us-central1", Name: "p", Zones: []string{"us-central1-a", "us-central1-b", "us-central1-c"}, NodesPerZone: 1, Version: "1.30.5-gke.1000"}); err != nil {
		t.Fatal(err)
	}
	svc, err := container.NewService(ctx, option.WithEndpoint(srv.Endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	name := "projects/" + srv.Project() + "/locations/us-central1/clusters/c"
	p, err := svc.Projects.Locations.Clusters.NodePools.Get(name + "/nodePools/p").Do()
	if err != nil || p.PodIpv4CidrSize != 24 || p.MaxPodsConstraint == nil || p.MaxPodsConstraint.MaxPodsPerNode != 110 || p.NetworkConfig == nil || p.NetworkConfig.PodIpv4RangeUtilization != 0.75 {
		t.Fatalf("pool %+v %v: want /24 blocks of 110 pods, 0.75 of the range used", p, err)
	}
	cl, err := svc.Projects.Locations.Clusters.Get(name).Do()
	if err != nil || cl.IpAllocationPolicy == nil || cl.IpAllocationPolicy.ClusterIpv4CidrBlock != "10.4.0.0/22" {
		t.Fatalf("cluster %+v %v: want pod range 10.4.0.0/22", cl, err)
	}
	prover := openProvider(t, srv).(cloud.CapacityProver)
	for added, fits := range map[int32]bool{1: true, 2: false} {
		c, err := prover.ProveCapacity(ctx, added)
		if err != nil || len(c.Unprovable) > 0 || len(c.Quotas) == 0 {
			t.Fatalf("capacity %+v %v", c, err)
		}
		pods := c.Quotas[len(c.Quotas)-1]
		if pods.Unit != "IP" || pods.Free != 256 || pods.Fits() != fits || pods.Largest() != 1 {
			t.Errorf("%d surge nodes: pod range %+v, want 256 free, fits %v, 1 at most", added, pods, fits)
		}
	}
}
