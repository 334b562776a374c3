package azurefake

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// greenBody is a new pool's body as a blue/green run sends it: blue's
// settings with the control plane's version.
func greenBody(version string, count int32, os armcs.OSType) armcs.AgentPool {
	return armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{
		Count: ptr(count), VMSize: ptr("Standard_D4s_v5"), OSType: ptr(os), Mode: ptr(armcs.AgentPoolModeUser),
		OrchestratorVersion: ptr(version), AvailabilityZones: []*string{ptr("1"), ptr("2")},
		NodeLabels: map[string]*string{"team": ptr("web")}, Tags: map[string]*string{"role": ptr("green")},
	}}
}

// TestCreatePool: a PUT of a new pool, polled to its end by the SDK,
// makes it Creating, then Succeeded once its nodes joined, at the
// version asked with the latest node image, its nodes carrying the
// pool's labels; a change while it is created is refused with 409.
func TestCreatePool(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	s.kubelet.Hold()
	poller, err := s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", "green", greenBody("1.32.2", 2, armcs.OSTypeLinux), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.pools.Get(ctx, "rg", "c1", "green", nil)
	if err != nil || *g.Properties.ProvisioningState != stateCreating {
		t.Fatalf("green while its nodes join: %v %+v", err, g.Properties)
	}
	_, err = s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", "green", greenBody("1.32.2", 2, armcs.OSTypeLinux), nil)
	if c, status := armCode(err); status != http.StatusConflict || c != "OperationNotAllowed" {
		t.Errorf("a PUT while the pool is created: %v, want 409 OperationNotAllowed", err)
	}
	s.kubelet.Release()
	if _, err := poller.PollUntilDone(ctx, poll); err != nil {
		t.Fatal(err)
	}
	g, _ = s.pools.Get(ctx, "rg", "c1", "green", nil)
	p := g.Properties
	if *p.ProvisioningState != stateSucceeded || *p.CurrentOrchestratorVersion != "1.32.2" || *p.NodeImageVersion != latestImage || *p.Count != 2 || *p.Tags["role"] != "green" {
		t.Errorf("green after the create: %s, %s/%s, count %d, tags %v", *p.ProvisioningState, *p.CurrentOrchestratorVersion, *p.NodeImageVersion, *p.Count, p.Tags)
	}
	nodes, _ := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: AgentPoolLabel + "=green"})
	if len(nodes.Items) != 2 {
		t.Fatalf("%d green nodes, want 2", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if n.Labels["team"] != "web" || n.Labels[NodeImageLabel] != latestImage || !strings.HasPrefix(n.Name, "aks-green-") {
			t.Errorf("green node %s: labels %v", n.Name, n.Labels)
		}
	}
	if got := s.srv.Pools("rg", "c1"); !slices.Equal(got, []string{"green", "pool"}) {
		t.Errorf("pools %v", got)
	}
}

// TestCreatePoolRefused: what AKS refuses of a new pool is refused with
// 400 and makes nothing: names that are not lowercase alphanumeric from a
// letter, or longer than 12 characters (6 for Windows), a version above
// the control plane's or not offered, a count out of the model's range,
// a field the model lacks.
func TestCreatePoolRefused(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name, pool, code string
		body             armcs.AgentPool
	}{
		{"upper case", "Green", "InvalidParameter", greenBody("1.32.2", 1, armcs.OSTypeLinux)},
		{"starts with a digit", "1green", "InvalidParameter", greenBody("1.32.2", 1, armcs.OSTypeLinux)},
		{"hyphen", "gr-een", "InvalidParameter", greenBody("1.32.2", 1, armcs.OSTypeLinux)},
		{"13 characters", "greenpool1234", "InvalidParameter", greenBody("1.32.2", 1, armcs.OSTypeLinux)},
		{"windows over 6", "wingreen", "InvalidParameter", greenBody("1.32.2", 1, armcs.OSTypeWindows)},
		{"above the control plane", "green", "NodePoolMcVersionIncompatible", greenBody("1.33.0", 1, armcs.OSTypeLinux)},
		{"not offered", "green", "AgentPoolK8sVersionNotSupported", greenBody("1.30.9", 1, armcs.OSTypeLinux)},
		{"count over 1000", "green", "InvalidParameter", greenBody("1.32.2", 1001, armcs.OSTypeLinux)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", tc.pool, tc.body, nil)
			if c, status := armCode(err); status != http.StatusBadRequest || c != tc.code {
				t.Errorf("create %q: %v, want 400 %s", tc.pool, err, tc.code)
			}
		})
	}
	t.Run("12 characters and windows 6 are taken", func(t *testing.T) {
		s.kubelet.Hold()
		defer s.kubelet.Release()
		for _, ok := range []struct {
			name string
			os   armcs.OSType
		}{{"greenpool123", armcs.OSTypeLinux}, {"wingrn", armcs.OSTypeWindows}} {
			if _, err := s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", ok.name, greenBody("1.32.2", 0, ok.os), nil); err != nil {
				t.Errorf("create %q: %v", ok.name, err)
			}
		}
	})
	if got := s.srv.Pools("rg", "c1"); !slices.Equal(got, []string{"greenpool123", "pool", "wingrn"}) {
		t.Errorf("pools %v: refused creates must make nothing", got)
	}
}

// TestDeletePool: DELETE is an operation (202, the pool Deleting, then
// gone); its nodes go without a drain and the pods left on them are
// recorded; a delete while the pool is busy is refused with 409, and of
// a pool that is not there answered 204.
func TestDeletePool(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	nodes, _ := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: "shop"}, Spec: corev1.PodSpec{NodeName: nodes.Items[0].Name}}
	if _, err := s.kube.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.kubelet.Hold()
	if _, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.pools.BeginDelete(ctx, "rg", "c1", "pool", nil)
	if c, status := armCode(err); status != http.StatusConflict || c != "OperationNotAllowed" {
		t.Errorf("delete while upgrading: %v, want 409 OperationNotAllowed", err)
	}
	if _, err := s.pools.BeginAbortLatestOperation(ctx, "rg", "c1", "pool", nil); err != nil {
		t.Fatal(err)
	}
	s.waitState(t, stateCanceled)
	s.kubelet.Release()
	poller, err := s.pools.BeginDelete(ctx, "rg", "c1", "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, poll); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pools.Get(ctx, "rg", "c1", "pool", nil); !hasStatus(err, http.StatusNotFound) {
		t.Errorf("GET after the delete: %v, want 404", err)
	}
	forced, deleted := s.srv.DeleteForced("rg", "c1", "pool")
	if !deleted || !slices.Contains(forced, "shop/left") {
		t.Errorf("deleted %v, pods taken down %v: want deleted, shop/left among them", deleted, forced)
	}
	left, _ := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: AgentPoolLabel + "=pool"})
	if len(left.Items) != 0 {
		t.Errorf("%d nodes of the deleted pool left", len(left.Items))
	}
	poller, err = s.pools.BeginDelete(ctx, "rg", "c1", "pool", nil)
	if err == nil {
		_, err = poller.PollUntilDone(ctx, poll)
	}
	if err != nil {
		t.Errorf("delete of a pool that is not there: %v, want ARM's 204", err)
	}
}

// TestSpotPoolRefusesMaxSurge: "There are no surge nodes available for
// Spot node pool upgrades"
// (https://learn.microsoft.com/en-us/azure/aks/spot-node-pool#upgrade-a-spot-node-pool):
// a maxSurge PUT on a Spot pool is refused, changing nothing; a regular
// pool takes it.
func TestSpotPoolRefusesMaxSurge(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	if err := s.srv.CreatePool(ctx, PoolSpec{ResourceGroup: "rg", Cluster: "c1", Name: "spot", Count: 1, Version: "1.31.5", Image: oldImage, LatestImage: latestImage, Spot: true}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"spot", "pool"} {
		got, err := s.pools.Get(ctx, "rg", "c1", name, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := got.AgentPool
		p.Properties.UpgradeSettings = &armcs.AgentPoolUpgradeSettings{MaxSurge: ptr("1")}
		_, err = s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", name, p, nil)
		c, status := armCode(err)
		if refused := status == http.StatusBadRequest && c == "InvalidParameter"; refused != (name == "spot") {
			t.Errorf("maxSurge 1 on pool %s: %v, want refused %v", name, err, name == "spot")
		}
	}
}

// TestPutKeepsTheSettingsItLeavesOut: a PUT whose upgradeSettings leave a
// field out keeps the pool's value; only a value sent replaces it.
func TestPutKeepsTheSettingsItLeavesOut(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	put := func(u *armcs.AgentPoolUpgradeSettings) armcs.AgentPool {
		t.Helper()
		got, err := s.pools.Get(ctx, "rg", "c1", "pool", nil)
		if err != nil {
			t.Fatal(err)
		}
		p := got.AgentPool
		p.Properties.UpgradeSettings = u
		poller, err := s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", "pool", p, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := poller.PollUntilDone(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out.AgentPool
	}
	put(&armcs.AgentPoolUpgradeSettings{DrainTimeoutInMinutes: ptr(int32(45))})
	got := put(&armcs.AgentPoolUpgradeSettings{MaxSurge: ptr("2")})
	if u := got.Properties.UpgradeSettings; u == nil || u.DrainTimeoutInMinutes == nil || *u.DrainTimeoutInMinutes != 45 || *u.MaxSurge != "2" {
		t.Errorf("after a PUT leaving the drain timeout out: %+v, want it kept at 45 and maxSurge 2", u)
	}
}
