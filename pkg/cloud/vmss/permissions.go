package vmss

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Policy is where the permissions are documented.
const Policy = "docs/providers/vmss.md#azure-permissions"

// Actions of Microsoft.Compute the provider's requests need, as the
// resource provider operations name them
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/compute#microsoftcompute).
const (
	actionRead          = "Microsoft.Compute/virtualMachineScaleSets/read"
	actionInstancesRead = "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read"
	actionWrite         = "Microsoft.Compute/virtualMachineScaleSets/write"
	actionDeleteVMs     = "Microsoft.Compute/virtualMachineScaleSets/delete/action"
	actionManualUpgrade = "Microsoft.Compute/virtualMachineScaleSets/manualUpgrade/action"
	actionReimage       = "Microsoft.Compute/virtualMachineScaleSets/reimage/action"
	actionOperations    = "Microsoft.Compute/locations/operations/read"
	actionDelete        = "Microsoft.Compute/virtualMachineScaleSets/delete"
	actionUsages        = "Microsoft.Compute/locations/usages/read"
	actionSKUs          = "Microsoft.Compute/skus/read"
)

// Calls are every request the provider sends to Azure Resource Manager,
// with its action; no run can do without those it makes but the
// Optional reads of the plan's capacity proof (ProveCapacity), which
// denied make a capacity-unprovable warning. For: the scale set's delete is blue/green's alone;
// manualupgrade is every strategy's but blue/green's, which removes no
// node from blue but by deleting blue (plan.Permissions.NeededBy keeps a
// call whose For shares a capability with the strategy's needs).
// docs/providers/vmss.md lists the same actions
// (TestVMSSPermissionsOfEveryCall in sim/conformance holds the three
// together with the requests the provider sends).
var Calls = []azarm.Call{
	{Action: actionRead, Call: "read the scale set's model with its userData, image and capacity (VirtualMachineScaleSetsClient.Get)"},
	{Action: actionInstancesRead, Call: "list and read the instances, their image, latestModelApplied and state (VirtualMachineScaleSetVMsClient.NewListPager, Get)"},
	{Action: actionWrite, Call: "point the model at the target image and raise the capacity (VirtualMachineScaleSetsClient.BeginUpdate), create green (BeginCreateOrUpdate)"},
	{Action: actionDeleteVMs, Call: "delete a drained node's instance, or those of a scale-down, lowering the capacity (VirtualMachineScaleSetsClient.BeginDeleteInstances)"},
	{Action: actionManualUpgrade, Call: "bring a drained node's instance to the latest model (VirtualMachineScaleSetsClient.BeginUpdateInstances: manualupgrade)",
		For: plan.CapRemoveNodes | plan.CapResize},
	{Action: actionReimage, Call: "reimage a drained node's instance that the latest model does not reimage, its image already the target (VirtualMachineScaleSetsClient.BeginReimage)",
		For: plan.CapRemoveNodes | plan.CapResize},
	{Action: actionUsages, Call: "read the vCPU quotas the added instances count against (UsageClient.NewListPager)", Optional: true},
	{Action: actionSKUs, Call: "read the VM size's vCPUs, family and zone restrictions (ResourceSKUsClient.NewListPager)", Optional: true},
	{Action: actionVNetUsages, Call: "read the free addresses of the scale set's subnets (GET Microsoft.Network/virtualNetworks/{vnet}/usages)", Optional: true},
	{Action: actionOperations, Call: "follow the long-running operations (GET Microsoft.Compute/locations/{location}/operations/{id})", AtLocation: true},
	{Action: actionDelete, Call: "delete blue at the end of a blue/green run, or green on its rollback (VirtualMachineScaleSetsClient.BeginDelete)", For: plan.CapNewGroups},
}

var _ cloud.PermissionProber = (*ScaleSet)(nil)

// ProbePermissions implements cloud.PermissionProber: the caller's
// permissions (Microsoft.Authorization/permissions, which any caller may
// list for itself), each action of Calls matched against them as Azure
// evaluates them (azarm.Grants), at two scopes. The scale set's resource
// ID is every run's scope: a role assigned on the scale set alone (or
// inherited from its group or subscription) allows every call on it.
// Blue/green's green does not exist before the run creates it in the
// scale set's resource group, so its calls are allowed only by a role on
// the resource group or above: blue/green's actions are asked there
// (For: plan.CapNewGroups), so that a role on the scale set alone blocks
// blue/green but not the strategies that keep to the one scale set. A
// refusal to answer is CannotAsk, a warning.
func (s *ScaleSet) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	out := &plan.Permissions{Policy: Policy}
	onSet, err := s.permissionsOn(ctx, s.scaleSetID(), "scale set "+quote(s.name))
	if err != nil {
		return cannotAsk(out, err)
	}
	for _, c := range Calls {
		if onBlue(c) && !c.AtLocation && !azarm.Grants(onSet, c.Action) {
			out.Missing = append(out.Missing, plan.MissingPermission{Permission: c.Action, Call: c.Call, For: c.For})
		}
	}
	onGroup, err := s.permissionsOn(ctx, groupID(s.sub, s.group), "resource group "+quote(s.group))
	if err != nil {
		return cannotAsk(out, err)
	}
	for _, c := range Calls {
		missingOnSet := onBlue(c) && !azarm.Grants(onSet, c.Action)
		if onGreen(c) && !c.AtLocation && !missingOnSet && !azarm.Grants(onGroup, c.Action) {
			out.Missing = append(out.Missing, plan.MissingPermission{Permission: c.Action, For: plan.CapNewGroups,
				Call: fmt.Sprintf("%s; blue/green needs it on resource group %q, where it makes green (a role on scale set %q alone does not reach green)", c.Call, s.group, s.name)})
		}
	}
	return s.missingAtLocation(ctx, out, onSet)
}

// missingAtLocation adds to out the operation status read, which ARM
// authorises at the subscription's location (azarm.Call.AtLocation),
// asked there; the location is the scale set's, read when the caller may
// read it (a caller who may not is refused already).
func (s *ScaleSet) missingAtLocation(ctx context.Context, out *plan.Permissions, onSet []azarm.Permission) (*plan.Permissions, error) {
	if !azarm.Grants(onSet, actionRead) {
		return out, nil
	}
	m, err := s.mustGet(ctx, s.name)
	if err != nil {
		return nil, err
	}
	loc := fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.Compute/locations/%s",
		strings.TrimSuffix(armEndpoint.URL(), "/"), url.PathEscape(s.sub), url.PathEscape(str(m.Location)))
	missing, err := azarm.MissingAtLocation(ctx, s.c.pipeline, Calls, loc, computeAPIVersion)
	if err != nil {
		return nil, wrap(err, "read an operation's status in %s to check the caller may follow the scale set's operations", str(m.Location))
	}
	out.Missing = append(out.Missing, missing...)
	return out, nil
}

// computeAPIVersion is the API version armcompute/v7 sends, that of
// Compute's operation statuses.
const computeAPIVersion = "2025-04-01"

// onBlue reports whether a call is asked on the scale set: those of every
// strategy but blue/green's own (the scale set's delete, whose
// permission on the group is asked and holds for blue too).
func onBlue(c azarm.Call) bool { return !c.Optional && c.For != plan.CapNewGroups }

// onGreen reports whether blue/green makes the call on green, which needs
// it on the resource group: those of every run and blue/green's own.
func onGreen(c azarm.Call) bool { return !c.Optional && (c.For == 0 || c.For&plan.CapNewGroups != 0) }

// permissionsOn lists the caller's permissions on scope, what names it.
func (s *ScaleSet) permissionsOn(ctx context.Context, scope, what string) ([]azarm.Permission, error) {
	perms, err := armEndpoint.ListPermissions(ctx, s.c.pipeline, scope)
	if err != nil {
		return nil, wrap(err, "list the caller's permissions on %s (Microsoft.Authorization/permissions)", what)
	}
	return perms, nil
}

// cannotAsk is out with what Azure refused to answer, a warning; an
// error that is no refusal (a network failure, a server error) is
// returned.
func cannotAsk(out *plan.Permissions, err error) (*plan.Permissions, error) {
	if !azarm.CannotAsk(err) {
		return nil, err
	}
	out.CannotAsk = err.Error()
	return out, nil
}

// scaleSetID is the scale set's ARM resource ID.
func (s *ScaleSet) scaleSetID() string {
	return groupID(s.sub, s.group) + "/providers/Microsoft.Compute/virtualMachineScaleSets/" + url.PathEscape(s.name)
}

// groupID is a resource group's ARM resource ID.
func groupID(sub, group string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", url.PathEscape(sub), url.PathEscape(group))
}
