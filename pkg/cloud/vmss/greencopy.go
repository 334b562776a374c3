package vmss

import (
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// What blue/green's copy of blue's model (greenModel) cannot carry, read
// from the model before anything is written: what Azure would refuse of
// green's creation is refused (greenCopyRefusal), what green would lose
// or not share is noted in the plan (greenCopyNotes).

// greenCopyRefusal refuses a model green cannot be created from:
//   - one that logs in with a password: a Windows model, or a Linux one
//     without linuxConfiguration.disablePasswordAuthentication. The
//     password is a write-only secret a GET never returns (armcompute
//     VirtualMachineScaleSetOSProfile.AdminPassword is sent, never read
//     back), so green's copy would lack the adminPassword its creation
//     needs;
//   - one on an application gateway's backend pool: "Multiple scale sets
//     cannot use the same application gateway" (armcompute
//     VirtualMachineScaleSetIPConfigurationProperties.ApplicationGatewayBackendAddressPools).
func greenCopyRefusal(m *armcompute.VirtualMachineScaleSet) error {
	prof := m.Properties.VirtualMachineProfile
	if os := prof.OSProfile; os != nil {
		lc := os.LinuxConfiguration
		if os.WindowsConfiguration != nil || lc == nil || lc.DisablePasswordAuthentication == nil || !*lc.DisablePasswordAuthentication {
			return inputErrorf("scale set %q logs its instances in with a password, which Azure never returns: blue/green cannot copy its model into green; use SSH keys alone (linuxConfiguration.disablePasswordAuthentication true) or --strategy surge", str(m.Name))
		}
	}
	if gw := backendPools(prof, true); len(gw) > 0 {
		return inputErrorf("scale set %q is in application gateway backend pools %s, which a second scale set cannot share: blue/green cannot make green beside it; use --strategy surge", str(m.Name), strings.Join(gw, ", "))
	}
	return nil
}

// greenCopyNotes are the plan's notes on what green's copy loses or
// shares.
func greenCopyNotes(m *armcompute.VirtualMachineScaleSet) []string {
	var out []string
	if id := m.Identity; id != nil && id.Type != nil && strings.Contains(string(*id.Type), string(armcompute.ResourceIdentityTypeSystemAssigned)) {
		out = append(out, fmt.Sprintf("scale set %q has a system-assigned identity: green gets its own, with none of blue's role assignments; grant them to green's identity, or give the model a user-assigned identity", str(m.Name)))
	}
	prof := m.Properties.VirtualMachineProfile
	if ep := prof.ExtensionProfile; ep != nil && len(ep.Extensions) > 0 {
		var names []string
		for _, e := range ep.Extensions {
			names = append(names, quote(str(e.Name)))
		}
		out = append(out, fmt.Sprintf("green copies extensions %s without their protectedSettings, which Azure never returns; an extension that needs them fails on green", strings.Join(names, ", ")))
	}
	if lb := backendPools(prof, false); len(lb) > 0 {
		out = append(out, fmt.Sprintf("green joins load balancer backend pools %s; a Basic SKU load balancer takes one scale set only (\"multiple scale sets cannot use the same basic sku load balancer\"), so Azure refuses green's creation there", strings.Join(lb, ", ")))
	}
	if prof.UserData == nil {
		out = append(out, "the model has no userData: if its instances boot their kubelet from customData, which Azure never returns, green's instances will not join (the run stops waiting for them)")
	}
	return out
}

// backendPools are the backend pools the model's IP configurations name:
// application gateways' (gateways), or load balancers'.
func backendPools(prof *armcompute.VirtualMachineScaleSetVMProfile, gateways bool) []string {
	var out []string
	if prof.NetworkProfile == nil {
		return nil
	}
	for _, nic := range prof.NetworkProfile.NetworkInterfaceConfigurations {
		if nic == nil || nic.Properties == nil {
			continue
		}
		for _, ip := range nic.Properties.IPConfigurations {
			if ip == nil || ip.Properties == nil {
				continue
			}
			pools := ip.Properties.LoadBalancerBackendAddressPools
			if gateways {
				pools = ip.Properties.ApplicationGatewayBackendAddressPools
			}
			for _, p := range pools {
				out = append(out, quote(str(p.ID)))
			}
		}
	}
	return out
}
