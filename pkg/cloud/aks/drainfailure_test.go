package aks

import (
	"context"
	"fmt"
	"strings"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestDrainFailureSaysWhatAKSDid: AKS's drain failure names the pod and
// the PDB its message names (the PDB in the pod's namespace), and under
// undrainableNodeBehavior Schedule what AKS did as the cluster shows it:
// the node schedulable again, the pool down to its count (the surge nodes
// deleted); under Cordon (no failure of this kind) nothing is claimed.
func TestDrainFailureSaysWhatAKSDid(t *testing.T) {
	const msg = "Drain node aks-pool-1 failed when evicting pod web-1 failed with Too Many Requests error. This is often caused by a restrictive Pod Disruption Budget (PDB) policy. See http://aka.ms/aks/debugdrainfailures. Original error: Cannot evict pod as it would violate the pod's disruption budget. PDB debug info: shop/web-1 blocked by pdb web with 0 unready pods."
	for _, tc := range []struct {
		name        string
		behavior    string
		nodes       int
		unscheduled bool
		want        plan.ServiceDrainFailure
	}{
		{"Schedule, done", "", 3, false, plan.ServiceDrainFailure{Node: "aks-pool-1", Pod: "shop/web-1", PDB: "shop/web", Behavior: "Schedule", Schedulable: true, SurgeRemoved: true}},
		{"Schedule, a surge node and the cordon kept", "Schedule", 4, true, plan.ServiceDrainFailure{Node: "aks-pool-1", Pod: "shop/web-1", PDB: "shop/web", Behavior: "Schedule"}},
		{"Cordon", "Cordon", 3, false, plan.ServiceDrainFailure{Node: "aks-pool-1", Pod: "shop/web-1", PDB: "shop/web", Behavior: "Cordon"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset()
			for i := 1; i <= tc.nodes; i++ {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("aks-pool-%d", i), Labels: map[string]string{AgentPoolLabel: "pool"}}}
				n.Spec.Unschedulable = i == 1 && tc.unscheduled
				if _, err := kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			count := int32(3)
			a := &AgentPool{name: "pool", kube: kube, raw: rawPool{extra: upgradeExtra{UndrainableNodeBehavior: tc.behavior}},
				pool: armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{Count: &count}}}
			got := poolNodesOf(a).withDrain(context.Background(), failure(opStatus{Error: &struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}{"UpgradeFailed", msg}}))
			if got.Code != cloud.CodePodEviction || got.Drain == nil || *got.Drain != tc.want {
				t.Errorf("failure %+v drain %+v, want %+v", got, got.Drain, tc.want)
			}
		})
	}
}

// TestLaunchFailureSaysNothingWasDrained: AKS's refusal of the new nodes
// says it came before any drain only while none of the pool's nodes is
// cordoned; other failures are left as they are.
func TestLaunchFailureSaysNothingWasDrained(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     string
		cordoned bool
		before   bool
	}{
		{"nothing cordoned", cloud.CodeNodeCreation, false, true},
		{"a node cordoned", cloud.CodeNodeCreation, true, false},
		{"another failure", "InternalOperationError", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "aks-pool-1", Labels: map[string]string{AgentPoolLabel: "pool"}}}
			n.Spec.Unschedulable = tc.cordoned
			got := poolNodes{kube: fake.NewClientset(n), pool: "pool"}.withLaunch(context.Background(), cloud.UpdateError{Code: tc.code, Message: "SkuNotAvailable: not available"})
			if strings.Contains(got.Message, "before it drained any node") != tc.before {
				t.Errorf("message %q: want it to say it came before any drain: %v", got.Message, tc.before)
			}
		})
	}
}
