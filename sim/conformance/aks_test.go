package conformance

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"

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
	// On a subnet with room (Azure CNI Overlay), so that every plan reads
	// its virtual network's usages (aks_subnet_test.go).
	subnet := srv.CreateSubnet(azurefake.SubnetSpec{ResourceGroup: "net-rg", VNet: "vnet", Name: "nodes", PrefixBits: 16})
	if err := srv.SetPoolNetwork("rg", "c1", "pool", azurefake.PoolNetwork{VNetSubnetID: subnet, MaxPods: 30, Plugin: "azure", PluginMode: "overlay"}); err != nil {
		t.Fatal(err)
	}
	return srv
}

func setUpAKS(t *testing.T, client kubernetes.Interface, o conformance.Options) conformance.Env {
	t.Helper()
	srv := startAKS(t, client, azurefake.Options{Faults: o.Faults, FaultSeed: o.Seed, RetryAfter: time.Second}, 3)
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

// TestAKSOwnUpgradeUnderFaults: the suite's faults case runs the first
// strategy a provider serves, for aks blue-green since it serves
// blue/green; AKS's own upgrade is held to it here: a run finishes under
// 5% injected 429s, 5xx and lost answers with every node on the target.
func TestAKSOwnUpgradeUnderFaults(t *testing.T) {
	client := fake.NewClientset()
	conformance.StartKubelet(t, client)
	env := setUpAKS(t, client, conformance.Options{Faults: 0.05})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nodes := func() []corev1.Node {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	for len(nodes()) < 3 || !conformance.Ready(&nodes()[0]) {
		time.Sleep(20 * time.Millisecond)
	}
	stdout, stderr, code := plugin.Drive(ctx, client, "run", "pool", "--provider", aks.Name, "--node-image", "latest",
		"--post-drain-wait", "0s", "--seed", "1", "--yes", "--node-ready-timeout", "60s", "--drain-timeout", "30s")
	if code != plugin.ExitOK {
		t.Fatalf("run: exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, n := range nodes() {
		if !env.Current(&n) || n.Spec.Unschedulable {
			t.Errorf("node %q after the run: on the target %v, cordoned %v", n.Name, env.Current(&n), n.Spec.Unschedulable)
		}
	}
	if env.Faults() == 0 {
		t.Errorf("the fake injected no fault in the run: the test proved nothing")
	}
}
