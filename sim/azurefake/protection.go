package azurefake

import (
	"net/http"
	"slices"
	"strconv"
)

// The rules of instance protection, from Learn's "Instance Protection
// for Azure Virtual Machine Scale Set instances"
// (https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-instance-protection):
//   - protectFromScaleIn "protects instance from Autoscale initiated
//     scale-in"; "operations initiated on the scale set (upgrade,
//     reimage, deallocate, etc.) are not blocked";
//   - protectFromScaleSetActions also "protects instance from
//     operations initiated on the scale set (such as upgrade, reimage,
//     deallocate, etc.)";
//   - with either, "user-initiated instance operations (including
//     instance delete) are not blocked", nor is the delete of the whole
//     scale set.
// armcompute v7's VirtualMachineScaleSetVMProtectionPolicy says the same:
// "model updates or actions (including scale-in) initiated on the virtual
// machine scale set should not be applied to the virtual machine scale set VM".
// A manualupgrade or reimage naming a protected instance is refused (409
// OperationNotAllowed; the message's wording is the fake's own, Learn
// quoting none), changing nothing; one of every instance, and an
// Automatic model update, pass it by. Scale-in takes no protected
// instance; deleteInstances, which names its instances, is the user's
// and not blocked.

// protectedFromActions reports whether vm is protected from scale set
// actions.
func protectedFromActions(vm *vmssVM) bool {
	p := vm.protection
	return p != nil && p.ProtectFromScaleSetActions != nil && *p.ProtectFromScaleSetActions
}

// protectedFromScaleIn reports whether scale-in passes vm by: either
// protection.
func protectedFromScaleIn(vm *vmssVM) bool {
	p := vm.protection
	return protectedFromActions(vm) || p != nil && p.ProtectFromScaleIn != nil && *p.ProtectFromScaleIn
}

// refuseProtected is the refusal of action on the instances of ss that
// vms names, nil when none is protected from scale set actions.
func refuseProtected(ss *scaleSet, vms []*vmssVM, action string) *armError {
	for _, vm := range vms {
		if protectedFromActions(vm) {
			return errorf(http.StatusConflict, "OperationNotAllowed",
				"Operation '%s' is not allowed on instance %s of Virtual Machine Scale Set '%s' since it is protected from scale set actions (protectionPolicy.protectFromScaleSetActions).",
				action, strconv.Itoa(vm.id), ss.name)
		}
	}
	return nil
}

// unprotected are vms without protection from scale set actions.
func unprotected(vms []*vmssVM) []*vmssVM {
	return slices.DeleteFunc(slices.Clone(vms), protectedFromActions)
}
