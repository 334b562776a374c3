package azurefake

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// computeAction is the prefix of the Compute operations the fake names
// calls by: the Azure RBAC actions that permit them
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/compute#microsoftcompute).
const computeAction = "Microsoft.Compute/"

// isCompute reports whether a request names a Microsoft.Compute resource
// or operation.
func isCompute(p []string) bool {
	return len(p) >= 4 && p[3] == "microsoft.compute" || len(p) >= 6 && p[2] == "resourcegroups" && p[5] == "microsoft.compute"
}

// routeCompute names the Compute operation of a request (its RBAC
// action) and its handler, nil for none.
func (s *Server) routeCompute(q *request) (string, func(*request)) {
	p, m := q.parts, q.r.Method
	const sets = computeAction + "virtualMachineScaleSets/"
	switch {
	case len(p) == 8 && p[2] == "providers" && p[4] == "locations" && p[6] == "operations" && m == http.MethodGet:
		return computeAction + "locations/operations/read", s.getComputeOp
	case len(p) < 8 || p[6] != "virtualmachinescalesets":
		return "unknown", nil
	case len(p) == 8 && m == http.MethodGet:
		return sets + "read", s.getScaleSet
	case len(p) == 8 && m == http.MethodPut:
		return sets + "write", s.putScaleSet
	case len(p) == 8 && m == http.MethodPatch:
		return sets + "write", s.patchScaleSet
	case len(p) == 8 && m == http.MethodDelete:
		return sets + "delete", s.deleteScaleSet
	case len(p) == 9 && p[8] == "delete" && m == http.MethodPost:
		return sets + "delete/action", s.deleteInstances
	case len(p) == 9 && p[8] == "manualupgrade" && m == http.MethodPost:
		return sets + "manualUpgrade/action", s.updateInstances
	case len(p) == 9 && p[8] == "reimage" && m == http.MethodPost:
		return sets + "reimage/action", s.reimageInstances
	case len(p) == 9 && p[8] == "virtualmachines" && m == http.MethodGet:
		return sets + "virtualMachines/read", s.listVMs
	case len(p) == 10 && p[8] == "virtualmachines" && m == http.MethodGet:
		return sets + "virtualMachines/read", s.getVM
	}
	return "unknown", nil
}

// scaleSetOfLocked is the request's scale set, or the 404 ARM answers.
func (s *Server) scaleSetOfLocked(q *request) (*scaleSet, *armError) {
	ss := s.scaleSetsLocked()[key(q.raw[3], q.raw[7])]
	if ss == nil {
		return nil, errorf(http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachineScaleSets/%s' under resource group '%s' was not found.", q.raw[7], q.raw[3])
	}
	return ss, nil
}

// scaleSetBusyLocked is the 409 a change gets while an operation runs on the
// scale set (ARM's 409 Conflict for a request that conflicts with the
// resource's state: https://github.com/Azure/azure-resource-manager-rpc/blob/master/v1.0/common-api-details.md#error-response-content).
func scaleSetBusyLocked(ss *scaleSet) *armError {
	if ss.op == nil {
		return nil
	}
	return errorf(http.StatusConflict, "OperationNotAllowed", "Operation '%s' is not allowed on Virtual Machine Scale Set '%s' since another operation is in progress on it.", ss.op.kind, ss.name)
}

// scaleSetView is the model as GET answers it: the provisioning state
// now, and userData only with $expand=userData (armcompute
// ExpandTypesForGetVMScaleSetsUserData).
func scaleSetView(ss *scaleSet, userData bool) armcompute.VirtualMachineScaleSet {
	m := ss.model
	props := *m.Properties
	props.ProvisioningState = to.Ptr(vmSucceeded)
	if ss.op != nil {
		props.ProvisioningState = to.Ptr(vmUpdating)
	}
	prof := *props.VirtualMachineProfile
	if !userData {
		prof.UserData = nil
	}
	props.VirtualMachineProfile = &prof
	m.Properties = &props
	return m
}

func (s *Server) getScaleSet(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.scaleSetOfLocked(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	writeJSON(q.w, http.StatusOK, scaleSetView(ss, strings.EqualFold(q.r.URL.Query().Get("$expand"), "userData")))
}

// CheckScaleSetModel checks what the fake needs of a scale set's model
// written by PUT, with the rules of armcompute's model comments: a
// capacity (SKU.Capacity, "Specifies the number of virtual machines in
// the scale set"), an image reference, and a computerNamePrefix of 1 to
// 15 characters ("Computer name prefixes must be 1 to 15 characters
// long"), of 1 to 9 for Windows, whose computer names (the prefix and six
// characters of the instance) are at most 15 (Learn's "Naming rules and
// restrictions for Azure resources", Microsoft.Compute
// virtualMachineScaleSets: computer name prefix "Windows: 1-9";
// https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/resource-name-rules#microsoftcompute).
func CheckScaleSetModel(m armcompute.VirtualMachineScaleSet) error {
	switch p := m.Properties; {
	case m.SKU == nil || m.SKU.Capacity == nil || *m.SKU.Capacity < 0:
		return fmt.Errorf("sku.capacity must be given, at least 0")
	case p == nil || p.VirtualMachineProfile == nil || p.VirtualMachineProfile.StorageProfile == nil || p.VirtualMachineProfile.StorageProfile.ImageReference == nil:
		return fmt.Errorf("properties.virtualMachineProfile.storageProfile.imageReference must be given")
	case p.VirtualMachineProfile.OSProfile == nil || p.VirtualMachineProfile.OSProfile.ComputerNamePrefix == nil:
		return fmt.Errorf("properties.virtualMachineProfile.osProfile.computerNamePrefix must be given")
	}
	prof := m.Properties.VirtualMachineProfile
	limit := 15
	if windowsModel(prof) {
		limit = 9
	}
	if n := len(*prof.OSProfile.ComputerNamePrefix); n < 1 || n > limit {
		return fmt.Errorf("properties.virtualMachineProfile.osProfile.computerNamePrefix must be 1 to %d characters long", limit)
	}
	return nil
}

// windowsModel reports whether the model's instances run Windows: its
// osProfile has a windowsConfiguration, or its OS disk says Windows
// (armcompute VirtualMachineScaleSetOSDisk.OSType).
func windowsModel(prof *armcompute.VirtualMachineScaleSetVMProfile) bool {
	if prof.OSProfile != nil && prof.OSProfile.WindowsConfiguration != nil {
		return true
	}
	sp := prof.StorageProfile
	return sp != nil && sp.OSDisk != nil && sp.OSDisk.OSType != nil && *sp.OSDisk.OSType == armcompute.OperatingSystemTypesWindows
}

// putScaleSet creates a scale set, or replaces the model of one, and
// brings its instances to the capacity.
func (s *Server) putScaleSet(q *request) {
	var in armcompute.VirtualMachineScaleSet
	if err := decodeModel(q.body, &in); err != nil {
		writeError(q.w, err)
		return
	}
	if err := CheckScaleSetModel(in); err != nil {
		writeError(q.w, errorf(http.StatusBadRequest, "InvalidParameter", "%v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sets := s.scaleSetsLocked()
	ss, status := sets[key(q.raw[3], q.raw[7])], http.StatusOK
	if ss == nil {
		ss, status = &scaleSet{group: q.raw[3], name: q.raw[7]}, http.StatusCreated
		sets[key(q.raw[3], q.raw[7])] = ss
	} else if err := scaleSetBusyLocked(ss); err != nil {
		writeError(q.w, err)
		return
	}
	in.Properties.UniqueID = nil
	if ss.model.Properties != nil {
		in.Properties.UniqueID = ss.model.Properties.UniqueID
	}
	s.setModelLocked(ss, in)
	o := s.startComputeOpLocked(ss, "virtualMachineScaleSets/write", s.resizeLocked(ss))
	s.computeHeaders(q.w, o)
	writeJSON(q.w, status, scaleSetView(ss, false))
}

// patchScaleSet changes the capacity, the upgrade policy, the image or
// the tags of a scale set. A changed image is a new model: the instances
// keep theirs (latestModelApplied false) but with upgradePolicy.mode
// Automatic, where Compute updates them all at once
// (https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-upgrade-policy).
func (s *Server) patchScaleSet(q *request) {
	var in armcompute.VirtualMachineScaleSetUpdate
	if err := decodeModel(q.body, &in); err != nil {
		writeError(q.w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.scaleSetOfLocked(q)
	if err == nil {
		err = scaleSetBusyLocked(ss)
	}
	if err != nil {
		writeError(q.w, err)
		return
	}
	if err := s.scaleOutRefusalLocked(ss, in.SKU); err != nil {
		writeError(q.w, err)
		return
	}
	m := ss.model
	props, prof := *m.Properties, *m.Properties.VirtualMachineProfile
	m.Properties, props.VirtualMachineProfile = &props, &prof
	if in.SKU != nil && in.SKU.Capacity != nil {
		m.SKU = &armcompute.SKU{Name: m.SKU.Name, Tier: m.SKU.Tier, Capacity: in.SKU.Capacity}
	}
	if in.Tags != nil {
		m.Tags = in.Tags
	}
	newModel := false
	if up := in.Properties; up != nil {
		if up.UpgradePolicy != nil {
			props.UpgradePolicy = up.UpgradePolicy
		}
		if vp := up.VirtualMachineProfile; vp != nil && vp.StorageProfile != nil && vp.StorageProfile.ImageReference != nil {
			sp := *prof.StorageProfile
			sp.ImageReference, prof.StorageProfile, newModel = vp.StorageProfile.ImageReference, &sp, true
		}
		if vp := up.VirtualMachineProfile; vp != nil && vp.UserData != nil {
			prof.UserData, newModel = vp.UserData, true
		}
	}
	ss.model = m
	ch := s.resizeLocked(ss)
	if newModel {
		ss.gen++
		if props.UpgradePolicy != nil && props.UpgradePolicy.Mode != nil && *props.UpgradePolicy.Mode == armcompute.UpgradeModeAutomatic {
			up := s.upgradeLocked(ss, unprotected(activeVMs(ss)))
			ch.update, ch.inPlace = up.update, up.inPlace
		}
	}
	o := s.startComputeOpLocked(ss, "virtualMachineScaleSets/write", ch)
	s.computeHeaders(q.w, o)
	writeJSON(q.w, http.StatusOK, scaleSetView(ss, false))
}

// scaleOutRefusalLocked is Compute's refusal of the instances a new
// capacity adds, for the quota or the capacity; nil when it fits or adds
// none.
func (s *Server) scaleOutRefusalLocked(ss *scaleSet, sku *armcompute.SKU) *armError {
	if sku == nil || sku.Capacity == nil || *sku.Capacity <= int64(len(ss.vms)) {
		return nil
	}
	add := *sku.Capacity - int64(len(ss.vms))
	if err := s.quotaRefusalLocked(sizeOf(ss.model.SKU.Name), add); err != nil {
		return err
	}
	return s.launchRefusalLocked(ss.name, ss.name, str(ss.model.SKU.Name), int(add))
}

// deleteScaleSet deletes a scale set and its instances; one that does not
// exist answers 204, as ARM's DELETE does
// (https://github.com/Azure/azure-resource-manager-rpc/blob/master/v1.0/resource-api-reference.md#delete-resource).
func (s *Server) deleteScaleSet(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.scaleSetOfLocked(q)
	if err != nil {
		q.w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := scaleSetBusyLocked(ss); err != nil {
		writeError(q.w, err)
		return
	}
	ch := change{remove: s.markLocked(ss, activeVMs(ss), vmDeleting), drop: true}
	o := s.startComputeOpLocked(ss, "virtualMachineScaleSets/delete", ch)
	s.computeHeaders(q.w, o)
	q.w.WriteHeader(http.StatusAccepted)
}

// instancesOfLocked reads the instance IDs of a deleteInstances or
// manualupgrade body; an ID the scale set has no instance of is a 404.
func (s *Server) instancesOfLocked(q *request, ss *scaleSet) ([]*vmssVM, *armError) {
	var in armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs
	if err := decodeModel(q.body, &in); err != nil {
		return nil, err
	}
	if len(in.InstanceIDs) == 0 {
		return nil, errorf(http.StatusBadRequest, "InvalidParameter", "instanceIds must name at least one instance")
	}
	var out []*vmssVM
	for _, id := range in.InstanceIDs {
		i := slices.IndexFunc(ss.vms, func(vm *vmssVM) bool { return strconv.Itoa(vm.id) == derefString(id) })
		if i < 0 || ss.vms[i].state == vmDeleting {
			return nil, errorf(http.StatusNotFound, "NotFound", "The entity was not found in this Azure location: instance %q of Virtual Machine Scale Set %q.", derefString(id), ss.name)
		}
		out = append(out, ss.vms[i])
	}
	return out, nil
}

// onInstances runs a POST on named instances of a scale set; refused
// names the action a protected instance refuses ("" for none).
func (s *Server) onInstances(q *request, kind, refused string, act func(ss *scaleSet, vms []*vmssVM) change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.scaleSetOfLocked(q)
	if err == nil {
		err = scaleSetBusyLocked(ss)
	}
	var vms []*vmssVM
	if err == nil {
		vms, err = s.instancesOfLocked(q, ss)
	}
	if err == nil && refused != "" {
		err = refuseProtected(ss, vms, refused)
	}
	if err != nil {
		writeError(q.w, err)
		return
	}
	o := s.startComputeOpLocked(ss, kind, act(ss, vms))
	s.computeHeaders(q.w, o)
	q.w.WriteHeader(http.StatusAccepted)
}

// deleteInstances deletes instances and lowers the capacity by as many
// ("Deletes virtual machines in a VM scale set", the capacity counting
// the instances left:
// https://learn.microsoft.com/en-us/rest/api/compute/virtual-machine-scale-sets/delete-instances).
func (s *Server) deleteInstances(q *request) {
	s.onInstances(q, "virtualMachineScaleSets/delete/action", "", func(ss *scaleSet, vms []*vmssVM) change {
		c := *ss.model.SKU.Capacity - int64(len(vms))
		ss.model.SKU = &armcompute.SKU{Name: ss.model.SKU.Name, Tier: ss.model.SKU.Tier, Capacity: &c}
		return change{remove: s.markLocked(ss, vms, vmDeleting)}
	})
}

// updateInstances (manualupgrade) brings instances to the scale set's
// latest model; the instance ID and computer name stay
// (https://learn.microsoft.com/en-us/rest/api/compute/virtual-machine-scale-sets/update-instances).
// Only an instance whose image the model changed is reimaged (its
// kubelet starts anew and registers); the model's other changes are
// applied to the running machine, whose kubelet goes on as it was
// ("Modify a Virtual Machine Scale Set": an OS image reference update
// reimages, other properties apply in place:
// https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-upgrade-scale-set#how-to-bring-vms-up-to-date-with-the-latest-scale-set-model).
func (s *Server) updateInstances(q *request) {
	s.onInstances(q, "virtualMachineScaleSets/manualUpgrade/action", "manualUpgrade", s.upgradeLocked)
}

// upgradeLocked brings vms to the latest model: reimaged where the
// model's image is not theirs, in place otherwise.
func (s *Server) upgradeLocked(ss *scaleSet, vms []*vmssVM) change {
	var ch change
	model := ImageString(*ss.model.Properties.VirtualMachineProfile.StorageProfile.ImageReference)
	for _, vm := range s.markLocked(ss, vms, vmUpdating) {
		if ImageString(vm.image) != model {
			ch.update = append(ch.update, vm)
		} else {
			ch.inPlace = append(ch.inPlace, vm)
		}
	}
	return ch
}

// reimageInstances reimages instances with the image they run: a new OS
// disk, the machine booted anew (its kubelet registers again), its model
// left as it was; no instanceIds is every instance
// (https://learn.microsoft.com/en-us/rest/api/compute/virtual-machine-scale-sets/reimage,
// armcompute.VirtualMachineScaleSetReimageParameters).
func (s *Server) reimageInstances(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.scaleSetOfLocked(q)
	if err == nil {
		err = scaleSetBusyLocked(ss)
	}
	var in armcompute.VirtualMachineScaleSetReimageParameters
	if err == nil && len(q.body) > 0 {
		err = decodeModel(q.body, &in)
	}
	var vms []*vmssVM
	switch {
	case err == nil && len(in.InstanceIDs) > 0:
		if vms, err = s.instancesOfLocked(q, ss); err == nil {
			err = refuseProtected(ss, vms, "reimage")
		}
	case err == nil:
		vms = unprotected(activeVMs(ss))
	}
	if err != nil {
		writeError(q.w, err)
		return
	}
	o := s.startComputeOpLocked(ss, "virtualMachineScaleSets/reimage/action", change{reimage: s.markLocked(ss, vms, vmUpdating)})
	s.computeHeaders(q.w, o)
	q.w.WriteHeader(http.StatusAccepted)
}

func (s *Server) listVMs(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.scaleSetOfLocked(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	var out armcompute.VirtualMachineScaleSetVMListResult
	for _, vm := range ss.vms {
		v := s.vmView(ss, vm)
		out.Value = append(out.Value, &v)
	}
	writeJSON(q.w, http.StatusOK, out)
}

func (s *Server) getVM(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, err := s.scaleSetOfLocked(q)
	if err != nil {
		writeError(q.w, err)
		return
	}
	i := slices.IndexFunc(ss.vms, func(vm *vmssVM) bool { return strconv.Itoa(vm.id) == q.raw[9] })
	if i < 0 {
		writeError(q.w, errorf(http.StatusNotFound, "NotFound", "The entity was not found in this Azure location."))
		return
	}
	writeJSON(q.w, http.StatusOK, s.vmView(ss, ss.vms[i]))
}

// vmView is an instance as Compute lists it: named <scale set>_<instance
// ID>, latestModelApplied against the scale set's model now.
func (s *Server) vmView(ss *scaleSet, vm *vmssVM) armcompute.VirtualMachineScaleSetVM {
	img := vm.image
	v := armcompute.VirtualMachineScaleSetVM{
		ID:         to.Ptr(s.scaleSetID(ss.group, ss.name) + "/virtualMachines/" + strconv.Itoa(vm.id)),
		Name:       to.Ptr(ss.name + "_" + strconv.Itoa(vm.id)),
		Type:       to.Ptr("Microsoft.Compute/virtualMachineScaleSets/virtualMachines"),
		InstanceID: to.Ptr(strconv.Itoa(vm.id)),
		Location:   to.Ptr(s.opts.Location),
		Properties: &armcompute.VirtualMachineScaleSetVMProperties{
			LatestModelApplied: to.Ptr(vm.gen == ss.gen), ProvisioningState: to.Ptr(vm.state), VMID: to.Ptr(vm.vmID), TimeCreated: to.Ptr(vm.created),
			OSProfile:      &armcompute.OSProfile{ComputerName: to.Ptr(vm.name)},
			StorageProfile: &armcompute.StorageProfile{ImageReference: &img},
		},
	}
	if vm.zone != "" {
		v.Zones = []*string{to.Ptr(vm.zone)}
	}
	if vm.protection != nil {
		p := *vm.protection
		v.Properties.ProtectionPolicy = &p
	}
	return v
}

// SetInstanceProtection sets an instance's protectionPolicy, as its
// owner's "az vmss update --instance-id ... --protect-from-scale-in
// --protect-from-scale-set-actions" does
// (VirtualMachineScaleSetVMProtectionPolicy: protectFromScaleIn,
// protectFromScaleSetActions, https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-instance-protection).
func (s *Server) SetInstanceProtection(group, name string, id int, scaleIn, actions bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.scaleSetsLocked()[key(group, name)]
	if ss == nil {
		return fmt.Errorf("no scale set %s/%s", group, name)
	}
	for _, vm := range ss.vms {
		if vm.id == id {
			vm.protection = &armcompute.VirtualMachineScaleSetVMProtectionPolicy{ProtectFromScaleIn: to.Ptr(scaleIn), ProtectFromScaleSetActions: to.Ptr(actions)}
			return nil
		}
	}
	return fmt.Errorf("no instance %d in scale set %s/%s", id, group, name)
}

// activeVMs are the instances not being deleted.
func activeVMs(ss *scaleSet) []*vmssVM {
	return slices.DeleteFunc(slices.Clone(ss.vms), func(vm *vmssVM) bool { return vm.state == vmDeleting })
}

// markLocked sets the instances' state and returns them.
func (s *Server) markLocked(_ *scaleSet, vms []*vmssVM, state string) []*vmssVM {
	for _, vm := range vms {
		vm.state = state
	}
	return vms
}

// resizeLocked brings the instances to the model's capacity: new ones
// from the model, or, for fewer, those the default scale-in policy
// takes: zones balanced, then the highest instance ID
// (https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-scale-in-policy),
// never a protected one (protection.go).
func (s *Server) resizeLocked(ss *scaleSet) change {
	var ch change
	active := activeVMs(ss)
	want := int(*ss.model.SKU.Capacity)
	for n := len(active); n < want; n++ {
		ch.create = append(ch.create, s.newVMLocked(ss))
	}
	candidates := slices.DeleteFunc(slices.Clone(active), protectedFromScaleIn)
	for n := len(active); n > want && len(candidates) > 0; n-- {
		victim := scaleInVictim(candidates)
		candidates = slices.DeleteFunc(candidates, func(vm *vmssVM) bool { return vm == victim })
		ch.remove = append(ch.remove, s.markLocked(ss, []*vmssVM{victim}, vmDeleting)...)
	}
	return ch
}

// scaleInVictim is the instance the default scale-in policy deletes: of
// the zone with the most instances, the highest instance ID.
func scaleInVictim(vms []*vmssVM) *vmssVM {
	perZone := map[string]int{}
	for _, vm := range vms {
		perZone[vm.zone]++
	}
	var victim *vmssVM
	for _, vm := range vms {
		if victim == nil || perZone[vm.zone] > perZone[victim.zone] || perZone[vm.zone] == perZone[victim.zone] && vm.id > victim.id {
			victim = vm
		}
	}
	return victim
}

// change is what an operation does to instances once Compute is done:
// make them, update them to the model, remove them; drop deletes the scale
// set too.
// inPlace are updated to the model without a reimage, reimage reimaged
// on their own image.
type change struct {
	create, update, remove []*vmssVM
	inPlace, reimage       []*vmssVM
	drop                   bool
}

// finishChange carries a change out after Compute's delay: the instances made
// or updated join as nodes (a kubelet takes over a node of its name), the
// removed ones' nodes are deleted, as the cloud node controller does.
func (s *Server) finishChange(ctx context.Context, ss *scaleSet, o *computeOp, ch change) {
	delay := s.vmssDelay()
	if len(ch.update)+len(ch.reimage) > 0 {
		delay = s.reimageDelay()
	}
	if sleep(ctx, delay) != nil {
		return
	}
	s.mu.Lock()
	for _, vm := range append(slices.Clone(ch.create), ch.update...) {
		prof := ss.model.Properties.VirtualMachineProfile
		vm.state, vm.image, vm.gen, vm.labels = vmSucceeded, *prof.StorageProfile.ImageReference, ss.gen, labelsOfUserData(prof.UserData)
	}
	for _, vm := range ch.inPlace {
		vm.state, vm.gen = vmSucceeded, ss.gen
	}
	for _, vm := range ch.reimage {
		vm.state = vmSucceeded
	}
	ss.vms = slices.DeleteFunc(ss.vms, func(vm *vmssVM) bool { return slices.Contains(ch.remove, vm) })
	if ch.drop {
		delete(s.scaleSetsLocked(), key(ss.group, ss.name))
	}
	s.endComputeOpLocked(o, nil)
	s.mu.Unlock()
	for _, vm := range ch.remove {
		if err := s.leaveNode(ctx, vm.name); err != nil {
			s.logf("vmss %s: cannot delete node %q: %v", ss.name, vm.name, err)
		}
	}
	for _, vm := range slices.Concat(ch.create, ch.update, ch.reimage) {
		if err := s.joinVM(ctx, ss, vm); err != nil {
			s.logf("vmss %s: node %q cannot join: %v", ss.name, vm.name, err)
		}
	}
}

// computeOp is a long-running Compute operation, as its
// Azure-AsyncOperation URL reports it
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations).
type computeOp struct {
	id, kind, status string
	start, end       time.Time
	ss               *scaleSet
}

// startComputeOpLocked starts the change as the scale set's operation.
func (s *Server) startComputeOpLocked(ss *scaleSet, kind string, ch change) *computeOp {
	s.scaleSetsLocked()
	o := &computeOp{id: s.nextIDLocked("cop-"), kind: kind, status: opInProgress, start: time.Now().UTC(), ss: ss}
	s.vmss.ops[o.id], ss.op = o, o
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.finishChange(s.ctx, ss, o, ch) }()
	return o
}

func (s *Server) endComputeOpLocked(o *computeOp, _ *armError) {
	o.status, o.end = opSucceeded, time.Now().UTC()
	if o.ss.op == o {
		o.ss.op = nil
	}
}

// computeHeaders point the caller at the operation's status
// (Azure-AsyncOperation; no Retry-After, which is optional, so the SDK
// polls at its own pace). Compute's operations are read
// there alone: the SDK's poller for them reads no final Location
// (FinalStateViaLocation with none given: the status is the result; PUT
// and PATCH read the scale set again).
func (s *Server) computeHeaders(w http.ResponseWriter, o *computeOp) {
	w.Header().Set("Azure-AsyncOperation", fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.Compute/locations/%s/operations/%s?api-version=%s",
		s.URL, s.opts.Subscription, s.opts.Location, o.id, ComputeAPIVersion))
}

// getComputeOp answers the Azure-AsyncOperation URL.
func (s *Server) getComputeOp(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scaleSetsLocked()
	o := s.vmss.ops[q.raw[7]]
	if o == nil || !strings.EqualFold(q.raw[1], s.opts.Subscription) {
		writeError(q.w, errorf(http.StatusNotFound, "NotFound", "operation %q not found", q.raw[7]))
		return
	}
	doc := map[string]any{"name": o.id, "status": o.status, "startTime": o.start.Format(time.RFC3339Nano)}
	if !o.end.IsZero() {
		doc["endTime"] = o.end.Format(time.RFC3339Nano)
	}
	writeJSON(q.w, http.StatusOK, doc)
}
