package vmss

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// protectedFindings are the blockers of the nodes whose instances are
// protected from scale set actions: "model updates or actions (including
// scale-in) initiated on the virtual machine scale set should not be
// applied" to them (armcompute v7 VirtualMachineScaleSetVMProtectionPolicy.ProtectFromScaleSetActions;
// https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-instance-protection),
// so the run's manual upgrade and reimage would never reach them, found
// before any node is drained. An instance protected from scale-in alone
// is no blocker: the run names the instances it deletes, which that
// protection does not stop.
func protectedFindings(ins []instance, nodes []*corev1.Node) []check.Finding {
	byKey := map[string]instance{}
	for _, in := range ins {
		byKey[key(in.set, str(in.vm.InstanceID))] = in
	}
	var out []check.Finding
	for _, n := range nodes {
		id, ok := parseProviderID(n.Spec.ProviderID)
		if !ok {
			continue
		}
		in, ok := byKey[key(id.scaleSet, id.instance)]
		if !ok || in.vm.Properties == nil || !protectedFromActions(in) {
			continue
		}
		name := in.set + "_" + str(in.vm.InstanceID)
		out = append(out, check.Finding{Check: check.CheckInstanceProtected, Severity: check.Blocker, Kind: "VirtualMachineScaleSetVM", Name: name, Nodes: []string{n.Name},
			Message: fmt.Sprintf("instance %q of scale set %q (node %q) is protected from scale set actions (protectionPolicy.protectFromScaleSetActions): Azure keeps the model update and reimage the run needs from it", name, in.set, n.Name),
			Fix:     fmt.Sprintf("lift it (\"az vmss update --resource-group %s --name %s --instance-id %s --protect-from-scale-set-actions false\") and plan again", in.group, in.set, str(in.vm.InstanceID))})
	}
	return out
}

func protectedFromActions(in instance) bool {
	p := in.vm.Properties.ProtectionPolicy
	return p != nil && p.ProtectFromScaleSetActions != nil && *p.ProtectFromScaleSetActions
}
