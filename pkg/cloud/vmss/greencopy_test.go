package vmss

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestBlueGreenCopyOfTheModel: blue/green's plan refuses (exit 2, nothing
// written) a model Azure would not create green from — a password
// login (adminPassword never returned), an application gateway's
// backend pool ("Multiple scale sets cannot use the same application
// gateway", armcompute) — and names what green loses or shares: a
// system-assigned identity's role grants, extensions' protectedSettings,
// load balancer pools (Basic: one scale set), customData. A surge plan
// is not held to them.
func TestBlueGreenCopyOfTheModel(t *testing.T) {
	pool := func(id string) []*armcompute.SubResource { return []*armcompute.SubResource{{ID: to.Ptr(id)}} }
	network := func(ip armcompute.VirtualMachineScaleSetIPConfigurationProperties) *armcompute.VirtualMachineScaleSetNetworkProfile {
		return &armcompute.VirtualMachineScaleSetNetworkProfile{NetworkInterfaceConfigurations: []*armcompute.VirtualMachineScaleSetNetworkConfiguration{{
			Properties: &armcompute.VirtualMachineScaleSetNetworkConfigurationProperties{IPConfigurations: []*armcompute.VirtualMachineScaleSetIPConfiguration{{Properties: &ip}}}}}}
	}
	for _, tc := range []struct {
		name    string
		change  func(m *armcompute.VirtualMachineScaleSet)
		refusal string
		note    string
	}{
		{name: "SSH keys alone: copied"},
		{name: "a Linux password login", change: func(m *armcompute.VirtualMachineScaleSet) {
			m.Properties.VirtualMachineProfile.OSProfile.LinuxConfiguration.DisablePasswordAuthentication = to.Ptr(false)
		}, refusal: "logs its instances in with a password"},
		{name: "Windows", change: func(m *armcompute.VirtualMachineScaleSet) {
			m.Properties.VirtualMachineProfile.OSProfile.WindowsConfiguration = &armcompute.WindowsConfiguration{}
		}, refusal: "logs its instances in with a password"},
		{name: "an application gateway", change: func(m *armcompute.VirtualMachineScaleSet) {
			m.Properties.VirtualMachineProfile.NetworkProfile = network(armcompute.VirtualMachineScaleSetIPConfigurationProperties{ApplicationGatewayBackendAddressPools: pool("/gw/pools/web")})
		}, refusal: `application gateway backend pools "/gw/pools/web"`},
		{name: "a load balancer", change: func(m *armcompute.VirtualMachineScaleSet) {
			m.Properties.VirtualMachineProfile.NetworkProfile = network(armcompute.VirtualMachineScaleSetIPConfigurationProperties{LoadBalancerBackendAddressPools: pool("/lb/pools/be")})
		}, note: `load balancer backend pools "/lb/pools/be"; a Basic SKU load balancer takes one scale set only`},
		{name: "a system-assigned identity", change: func(m *armcompute.VirtualMachineScaleSet) {
			m.Identity = &armcompute.VirtualMachineScaleSetIdentity{Type: to.Ptr(armcompute.ResourceIdentityTypeSystemAssignedUserAssigned)}
		}, note: "none of blue's role assignments"},
		{name: "extensions", change: func(m *armcompute.VirtualMachineScaleSet) {
			m.Properties.VirtualMachineProfile.ExtensionProfile = &armcompute.VirtualMachineScaleSetExtensionProfile{Extensions: []*armcompute.VirtualMachineScaleSetExtension{{Name: to.Ptr("cse")}}}
		}, note: `extensions "cse" without their protectedSettings`},
		{name: "no userData", change: func(m *armcompute.VirtualMachineScaleSet) { m.Properties.VirtualMachineProfile.UserData = nil }, note: "customData"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newComputeServer(t)
			m := f.addSet("ng", oldImage, 1)
			if tc.change != nil {
				tc.change(m)
			}
			nodes := []corev1.Node{*scaleSetNode("ng", "0")}
			bg := planTarget(newImage)
			bg.Strategy = plan.StrategyBlueGreen
			cg, p, err := (vmssCloud{}).Open(context.Background(), fake.NewClientset(), nodes, bg)
			if tc.refusal != "" {
				if err == nil || !isInputErr(err) || !strings.Contains(err.Error(), tc.refusal) {
					t.Errorf("blue/green Open: %v, want a refusal with %q", err, tc.refusal)
				}
				s, _ := openScaleSet(t, f, "ng", newImage)
				if err := s.CreateGreen(context.Background(), "ng-g", newImage, plan.Sizes{Desired: 1, Max: 1}); err == nil || len(f.writes()) != 0 {
					t.Errorf("CreateGreen: %v, writes %v; want refused, nothing written", err, f.writes())
				}
				if _, _, err := (vmssCloud{}).Open(context.Background(), fake.NewClientset(), nodes, planTarget(newImage)); err != nil {
					t.Errorf("surge Open: %v, want no refusal", err)
				}
				return
			}
			if err != nil || p == nil {
				t.Fatalf("blue/green Open: %v", err)
			}
			noted := slices.ContainsFunc(cg.Notes, func(n string) bool { return tc.note != "" && strings.Contains(n, tc.note) })
			if noted != (tc.note != "") {
				t.Errorf("notes %q, want one with %q", cg.Notes, tc.note)
			}
		})
	}
}
