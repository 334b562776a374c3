package conformance

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aks"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
)

// The AKS pool's versions and images: it runs aksVersion and aksOld, the
// latest image AKS offers it is aksLatest.
const (
	aksControl = "1.32.2"
	aksVersion = "1.31.5"
	aksOld     = "AKSUbuntu-2204gen2containerd-202501.01.0"
	aksLatest  = "AKSUbuntu-2204gen2containerd-202502.01.0"
)

// TestAKSConformance runs the suite over provider aks and sim/azurefake:
// an agent pool of three nodes in three zones, its node image upgraded to
// the latest.
func TestAKSConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:  aks.Name,
		NodeGroup: "pool",
		Args:      []string{"--node-image", "latest"},
		Nodes:     3,
		Setup:     setUpAKS,
	})
}

// startAKS starts the fake with a cluster "c1" in resource group "rg" and
// an agent pool "pool" of count nodes, and points the provider at it.
func startAKS(t *testing.T, client kubernetes.Interface, o azurefake.Options, count int) *azurefake.Server {
	t.Helper()
	o.PollEvery, o.EvictRetry, o.MinuteIs, o.SettingsDuration = 20*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
	o.NodeReadyTimeout = time.Minute
	srv, err := azurefake.Start(context.Background(), client, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Setenv(aks.EndpointEnv, srv.URL)
	t.Setenv(aks.NoAuthEnv, "true")
	srv.CreateCluster(azurefake.ClusterSpec{ResourceGroup: "rg", Name: "c1", Version: aksControl, Versions: []string{aksVersion, aksControl}})
	spec := azurefake.PoolSpec{ResourceGroup: "rg", Cluster: "c1", Name: "pool", Count: count, Zones: []string{"1", "2", "3"},
		Version: aksVersion, Image: aksOld, LatestImage: aksLatest}
	if err := srv.CreatePool(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	return srv
}

func setUpAKS(t *testing.T, client kubernetes.Interface, o conformance.Options) conformance.Env {
	t.Helper()
	srv := startAKS(t, client, azurefake.Options{Faults: o.Faults, FaultSeed: 54}, 3)
	env := conformance.Env{
		Changes: srv.ChangingCalls,
		Current: func(n *corev1.Node) bool {
			return n.Labels[azurefake.NodeImageLabel] == aksLatest && n.Status.NodeInfo.KubeletVersion == "v"+aksVersion
		},
	}
	if o.Faults > 0 {
		env.Faults = srv.Faults
	}
	return env
}
