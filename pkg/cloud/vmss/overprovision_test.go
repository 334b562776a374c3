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
)

// TestOverprovisionedExtrasAreNotWaitedOn: of a scale set that
// overprovisions (Azure's default: Learn, "Design considerations for
// scale sets", Overprovisioning), the instances past its capacity that
// have not succeeded are the extra ones Azure deletes: leaving, not
// pending, so the run waits for as many as the capacity; the plan
// names the behaviour. One with overprovision false waits on them all.
func TestOverprovisionedExtrasAreNotWaitedOn(t *testing.T) {
	for _, tc := range []struct {
		name          string
		overprovision *bool
		pending       []string
		note          bool
	}{
		{"overprovision unset: Azure's default, on", nil, []string{"ng/3"}, true},
		{"overprovision true", to.Ptr(true), []string{"ng/3"}, true},
		{"overprovision false", to.Ptr(false), []string{"ng/3", "ng/4", "ng/5"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newComputeServer(t)
			m := f.addSet("ng", oldImage, 6)
			m.Properties.Overprovision = tc.overprovision
			// Capacity 4: three joined, one asked-for and two extra still
			// creating.
			m.SKU.Capacity = to.Ptr(int64(4))
			for _, id := range []string{"3", "4", "5"} {
				f.instance("ng", id).Properties.ProvisioningState = to.Ptr("Creating")
			}
			kube := fake.NewClientset()
			var nodes []corev1.Node
			for _, id := range []string{"0", "1", "2"} {
				nodes = append(nodes, *scaleSetNode("ng", id))
				_ = kube.Tracker().Add(scaleSetNode("ng", id))
			}
			cg, p, err := (vmssCloud{}).Open(context.Background(), kube, nodes, planTarget(newImage))
			if err != nil {
				t.Fatal(err)
			}
			var pending []string
			for _, u := range cg.Unjoined {
				if !u.Leaving() {
					pending = append(pending, u.ID)
				}
			}
			if !slices.Equal(pending, tc.pending) {
				t.Errorf("pending %v, want %v", pending, tc.pending)
			}
			if got := slices.ContainsFunc(cg.Notes, func(n string) bool { return strings.Contains(n, "overprovision=false") }); got != tc.note {
				t.Errorf("notes %v, the overprovisioning note want %v", cg.Notes, tc.note)
			}
			_, later, err := p.(*ScaleSet).Machines(context.Background(), nodePtrs(t, kube))
			if err != nil || len(later) != 3 || later[1].Leaving() != tc.note || later[2].Leaving() != tc.note {
				t.Errorf("Machines: %+v, %v", later, err)
			}
		})
	}
}

func TestMarkSurplus(t *testing.T) {
	vm := func(id, state string) instance {
		return instance{set: "ng", vm: &armcompute.VirtualMachineScaleSetVM{InstanceID: to.Ptr(id),
			Properties: &armcompute.VirtualMachineScaleSetVMProperties{ProvisioningState: to.Ptr(state)}}}
	}
	for _, tc := range []struct {
		name     string
		ins      []instance
		capacity int64
		want     []bool
	}{
		{"at capacity", []instance{vm("0", "Succeeded"), vm("1", "Creating")}, 2, []bool{false, false}},
		{"one extra", []instance{vm("0", "Succeeded"), vm("1", "Creating"), vm("2", "Creating")}, 2, []bool{false, false, true}},
		{"a deleting one is no extra", []instance{vm("0", "Deleting"), vm("1", "Creating"), vm("2", "Succeeded")}, 2, []bool{false, false, false}},
		{"all succeeded: none marked", []instance{vm("0", "Succeeded"), vm("1", "Succeeded"), vm("2", "Succeeded")}, 2, []bool{false, false, false}},
		{"the highest IDs first", []instance{vm("10", "Creating"), vm("9", "Creating"), vm("2", "Creating")}, 1, []bool{true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			markSurplus(tc.ins, tc.capacity)
			for i, in := range tc.ins {
				if in.surplus != tc.want[i] {
					t.Errorf("instance %s surplus %v, want %v", str(in.vm.InstanceID), in.surplus, tc.want[i])
				}
			}
		})
	}
}
