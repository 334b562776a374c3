package vmss

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// Overprovisioning: "Scale sets currently default to overprovisioning
// VMs. With overprovisioning turned on, the scale set actually spins up
// more VMs than you asked for, then deletes the extra VMs once the
// requested number of VMs are successfully provisioned" (Learn, "Design
// considerations for scale sets", Overprovisioning; armcompute v7
// VirtualMachineScaleSetProperties.Overprovision). The extra instances'
// kubelets may join and vanish: the run does not wait on them, and the
// plan says so.

// overprovisions reports whether the scale set overprovisions: unset is
// Azure's default, on.
func overprovisions(m *armcompute.VirtualMachineScaleSet) bool {
	p := m.Properties
	return p == nil || p.Overprovision == nil || *p.Overprovision
}

// overprovisionNote is the plan's note on a scale set that
// overprovisions.
func overprovisionNote(m *armcompute.VirtualMachineScaleSet, group string) string {
	return fmt.Sprintf("scale set %q overprovisions (overprovision true, Azure's default): on each scale-out Azure makes extra instances and deletes them, undrained, once the asked-for ones succeed; their kubelets may join and vanish, and the run does not wait on them. To keep pods off them, set it off for the run: az vmss update --resource-group %s --name %s --set overprovision=false",
		str(m.Name), group, str(m.Name))
}

// markSurplus marks leaving the instances of a scale set past its
// capacity that have not succeeded (the extra ones Azure deletes once
// the asked-for ones succeed), the highest instance ID first: the run
// waits for as many instances as the capacity, whichever Azure keeps.
func markSurplus(ins []instance, capacity int64) {
	var active, unsettled []int
	for i, in := range ins {
		switch st := machine(in).Lifecycle; {
		case st == "Deleting":
		case st != "Succeeded":
			unsettled = append(unsettled, i)
			fallthrough
		default:
			active = append(active, i)
		}
	}
	surplus := len(active) - int(capacity)
	slices.SortFunc(unsettled, func(a, b int) int {
		x, _ := strconv.Atoi(str(ins[a].vm.InstanceID))
		y, _ := strconv.Atoi(str(ins[b].vm.InstanceID))
		return cmp.Compare(y, x)
	})
	for _, i := range unsettled[:max(0, min(surplus, len(unsettled)))] {
		ins[i].surplus = true
	}
}
