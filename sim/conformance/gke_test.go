package conformance

import (
	"context"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gke"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gkefake"
)

// The GKE pool's versions: it runs gkeOld, the control plane gkeNew.
const (
	gkeOld = "1.30.5-gke.1000"
	gkeNew = "1.31.2-gke.1000"
)

// TestGKEConformance runs the suite over provider gke and sim/gkefake: a
// node pool of three nodes in three zones, upgraded to gkeNew.
func TestGKEConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:  gke.Name,
		NodeGroup: "pool",
		Args:      []string{"--node-version", gkeNew},
		Nodes:     3,
		Setup:     setUpGKE,
	})
}

func setUpGKE(t *testing.T, client kubernetes.Interface, o conformance.Options) conformance.Env {
	t.Helper()
	srv, err := gkefake.Start(context.Background(), client, gkefake.Options{
		Compute:    gcefake.Options{LaunchDelay: 50 * time.Millisecond, DeleteDelay: 20 * time.Millisecond},
		PollEvery:  20 * time.Millisecond,
		EvictRetry: 50 * time.Millisecond, NodeReadyTimeout: time.Minute,
		SettingsDuration: 100 * time.Millisecond,
		Faults:           o.Faults, FaultSeed: o.Seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Setenv(gke.EndpointEnv, srv.Endpoint)
	t.Setenv(gke.NoAuthEnv, "true")
	t.Setenv(gce.EndpointEnv, srv.Compute.Endpoint)
	t.Setenv(gce.NoAuthEnv, "true")
	srv.CreateCluster(gkefake.ClusterSpec{Name: "c", Location: "us-central1", MasterVersion: gkeNew, ValidNodeVersions: []string{gkeOld}})
	spec := gkefake.PoolSpec{Cluster: "c", Location: "us-central1", Name: "pool", Zones: []string{"us-central1-a", "us-central1-b", "us-central1-c"},
		NodesPerZone: 1, Version: gkeOld, Upgrade: &container.UpgradeSettings{Strategy: "SURGE", MaxSurge: 1}}
	if err := srv.CreatePool(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	env := conformance.Env{
		Changes: srv.ChangingCalls,
		Current: func(n *corev1.Node) bool { return n.Status.NodeInfo.KubeletVersion == "v"+gkeNew },
	}
	if o.Faults > 0 {
		env.Faults = srv.Faults
	}
	return env
}
