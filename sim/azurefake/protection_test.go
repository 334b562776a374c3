package azurefake

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// TestProtectedInstancesRefuseScaleSetActions holds the fake to Learn's
// "Instance Protection for Azure Virtual Machine Scale Set instances"
// (and armcompute's VirtualMachineScaleSetVMProtectionPolicy): an
// instance protected from scale set actions refuses a manualupgrade or
// reimage naming it, changing nothing; deleteInstances, a user's
// instance delete, is not blocked; scale-in passes by an instance under
// either protection; protection from scale-in alone blocks no action.
func TestProtectedInstancesRefuseScaleSetActions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids := func(id string) armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs {
		return armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: []*string{to.Ptr(id)}}
	}
	for _, tc := range []struct {
		name             string
		scaleIn, actions bool
		refused          bool
	}{
		{"protected from scale set actions", false, true, true},
		{"protected from scale-in alone", true, false, false},
		{"unprotected", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newVMSSScene(t)
			if err := sc.srv.SetInstanceProtection("rg", "ng", 1, tc.scaleIn, tc.actions); err != nil {
				t.Fatal(err)
			}
			pm, err := sc.sets.BeginUpdateInstances(ctx, "rg", "ng", ids("1"), nil)
			if err == nil {
				_, err = pm.PollUntilDone(ctx, &runtimePollOptions)
			}
			code, status := armCode(err)
			if tc.refused != (status == http.StatusConflict && code == "OperationNotAllowed" && strings.Contains(err.Error(), "protected from scale set actions")) || !tc.refused && err != nil {
				t.Errorf("manualupgrade: %v, refused want %v", err, tc.refused)
			}
			pr, err := sc.sets.BeginReimage(ctx, "rg", "ng", &armcompute.VirtualMachineScaleSetsClientBeginReimageOptions{
				VMScaleSetReimageInput: &armcompute.VirtualMachineScaleSetReimageParameters{InstanceIDs: []*string{to.Ptr("1")}}})
			if err == nil {
				_, err = pr.PollUntilDone(ctx, &runtimePollOptions)
			}
			if _, status := armCode(err); tc.refused != (status == http.StatusConflict) || !tc.refused && err != nil {
				t.Errorf("reimage: %v, refused want %v", err, tc.refused)
			}
			// Scale-in to one instance: the protected one stays.
			pu, err := sc.sets.BeginUpdate(ctx, "rg", "ng", armcompute.VirtualMachineScaleSetUpdate{SKU: &armcompute.SKU{Capacity: to.Ptr(int64(1))}}, nil)
			if err == nil {
				_, err = pu.PollUntilDone(ctx, &runtimePollOptions)
			}
			ins, _ := sc.srv.ScaleSetInstances("rg", "ng")
			protected := tc.scaleIn || tc.actions
			if err != nil || len(ins) != 1 || protected != (ins[0].ID == 1) {
				t.Errorf("scale-in to 1: %v, instances %+v; instance 1 kept want %v", err, ins, protected)
			}
			// A user's delete of the instances it names is not blocked.
			pd, err := sc.sets.BeginDeleteInstances(ctx, "rg", "ng", ids(strconv.Itoa(ins[0].ID)), nil)
			if err == nil {
				_, err = pd.PollUntilDone(ctx, &runtimePollOptions)
			}
			if err != nil {
				t.Errorf("deleteInstances of instance %d: %v, want it deleted", ins[0].ID, err)
			}
		})
	}
}
