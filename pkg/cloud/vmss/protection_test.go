package vmss

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// TestProtectedInstancesAreBlockers: a node whose instance is protected
// from scale set actions is a blocker naming the instance and the node
// (Azure keeps the run's model update and reimage from it); protection
// from scale-in alone, or none, is not.
func TestProtectedInstancesAreBlockers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		policy      *armcompute.VirtualMachineScaleSetVMProtectionPolicy
		wantBlocker bool
	}{
		{"no protection", nil, false},
		{"protected from scale-in alone", &armcompute.VirtualMachineScaleSetVMProtectionPolicy{ProtectFromScaleIn: to.Ptr(true), ProtectFromScaleSetActions: to.Ptr(false)}, false},
		{"protected from scale set actions", &armcompute.VirtualMachineScaleSetVMProtectionPolicy{ProtectFromScaleIn: to.Ptr(true), ProtectFromScaleSetActions: to.Ptr(true)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := []instance{{group: "rg", set: "ng", vm: &armcompute.VirtualMachineScaleSetVM{InstanceID: to.Ptr("3"),
				Properties: &armcompute.VirtualMachineScaleSetVMProperties{ProtectionPolicy: tc.policy}}}}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ng000003"},
				Spec: corev1.NodeSpec{ProviderID: "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/ng/virtualMachines/3"}}
			got := protectedFindings(ins, []*corev1.Node{node})
			if !tc.wantBlocker {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Severity != check.Blocker || got[0].Check != check.CheckInstanceProtected ||
				strings.Join(got[0].Nodes, ",") != "ng000003" || !strings.Contains(got[0].Message, `"ng_3"`) || !strings.Contains(got[0].Fix, "--instance-id 3") {
				t.Errorf("findings %+v, want one instance-protected blocker naming ng_3 and node ng000003", got)
			}
		})
	}
}
