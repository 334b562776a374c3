package gce

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcpclient"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Policy is where the permissions are documented.
const Policy = "docs/providers/gce.md#permissions"

// calls are the permissions of the custom role in docs/providers/gce.md,
// by what needs them (https://cloud.google.com/compute/docs/access/iam-permissions);
// sim/gcefake's TestRolePermitsEveryProviderCall holds that role to the
// calls the provider makes, TestPermissionsAreTheRole this list to the
// role. For: blue/green alone creates and deletes groups; the target
// template is made for --image only, and used (useReadOnly) only where
// --image or --instance-template names another (see
// NodeGroup.ProbePermissions).
var calls = []gcpclient.Call{
	{Method: "instances.get", Permission: "compute.instances.get"},
	{Method: "instances.list (the instances' creation, the estimates' joins)", Permission: "compute.instances.list"},
	{Method: "instanceGroupManagers.get, listManagedInstances", Permission: "compute.instanceGroupManagers.get"},
	{Method: "instanceTemplates.get", Permission: "compute.instanceTemplates.get"},
	{Method: "images.get", Permission: "compute.images.get"},
	{Method: "images.getFromFamily", Permission: "compute.images.getFromFamily"},
	{Method: "autoscalers.list", Permission: "compute.autoscalers.list"},
	{Method: "regions.get", Permission: "compute.regions.get"},
	{Method: "machineTypes.get", Permission: "compute.machineTypes.get"},
	{Method: "instanceGroupManagers.resize, setInstanceTemplate, patch, deleteInstances, recreateInstances", Permission: "compute.instanceGroupManagers.update"},
	{Method: "instanceGroupManagers.insert", Permission: "compute.instanceGroupManagers.create", For: plan.CapNewGroups},
	{Method: "instanceGroupManagers.delete", Permission: "compute.instanceGroupManagers.delete", For: plan.CapNewGroups},
	{Method: "backendServices.list", Permission: "compute.backendServices.list", For: plan.CapNewGroups},
	{Method: "regionBackendServices.list", Permission: "compute.regionBackendServices.list", For: plan.CapNewGroups},
	{Method: "instanceGroupManagers.insert (the template's use)", Permission: "compute.instanceGroupManagers.use"},
	{Method: "instanceTemplates.insert", Permission: "compute.instanceTemplates.create"},
	{Method: "instanceGroupManagers.setInstanceTemplate (the target template's use)", Permission: useTemplate},
	{Method: "instanceTemplates.insert (the image's use)", Permission: "compute.images.useReadOnly"},
	{Method: "globalOperations.wait", Permission: "compute.globalOperations.get"},
	{Method: "instances created by resize and recreateInstances", Permission: "compute.instances.create"},
	{Method: "instances deleted by deleteInstances", Permission: "compute.instances.delete"},
	{Method: "instances created with metadata", Permission: "compute.instances.setMetadata"},
	{Method: "instances created with labels", Permission: "compute.instances.setLabels"},
	{Method: "instances created with tags", Permission: "compute.instances.setTags"},
	{Method: "disks of new instances", Permission: "compute.disks.create"},
	{Method: "disks of new instances, labelled", Permission: "compute.disks.setLabels"},
	{Method: "new instances' subnetwork", Permission: "compute.subnetworks.use"},
	{Method: "new instances' external IP", Permission: "compute.subnetworks.useExternalIp"},
	{Method: "new instances' network", Permission: "compute.networks.use"},
	{Method: "new instances' service account", Permission: "iam.serviceAccounts.actAs"},
}

// imageOnly are the permissions only making the target of --image needs.
var imageOnly = []string{"compute.instanceTemplates.create", "compute.images.useReadOnly", "compute.globalOperations.get"}

// useTemplate is the permission to launch from an instance template,
// which a run needs that moves the groups to another template: a copy
// (--image) or an existing one (--instance-template).
const useTemplate = "compute.instanceTemplates.useReadOnly"

var _ cloud.PermissionProber = (*NodeGroup)(nil)

// ProbePermissions implements cloud.PermissionProber: testIamPermissions on
// the project for the role's permissions the run may use, and on each
// resource the run uses whose own IAM policy may grant them (see
// resources).
func (n *NodeGroup) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	var need []gcpclient.Call
	for _, c := range calls {
		switch {
		case c.Permission == useTemplate && n.Image == "" && n.Template == "":
		case slices.Contains(imageOnly, c.Permission) && n.Image == "":
		default:
			need = append(need, c)
		}
	}
	res, untold := n.resources(ctx)
	perms, err := gcpclient.Probe(ctx, n.API.project, os.Getenv(EndpointEnv), Policy, n.API.probeOpts, need, res...)
	if err != nil || untold == "" {
		return perms, err
	}
	perms.CannotAsk = strings.TrimPrefix(perms.CannotAsk+"; "+untold, "; ")
	return perms, nil
}

// resources are those a run uses whose IAM policy Compute and IAM let be
// set on the resource itself
// (https://cloud.google.com/compute/docs/access/managing-access-to-resources):
// the target template's service accounts (actAs) and subnetworks
// (subnetworks.use, useExternalIp; a Shared VPC subnet is the host
// project's), the template --instance-template names (useReadOnly, get),
// and each group's instance group for the group's own permissions
// (Compute has no testIamPermissions on instanceGroupManagers; the
// group's instance group, of its name, is where a grant on the group can
// be asked). untold says why the template could not be read, its
// resources then not asked.
func (n *NodeGroup) resources(ctx context.Context) (out []gcpclient.Resource, untold string) {
	for _, m := range n.MIGs {
		out = append(out, n.instanceGroup(m))
	}
	name := lastSegment(n.Template)
	if name == "" {
		cur, err := n.API.templateOf(ctx, n.MIGs[0])
		if err != nil {
			return out, fmt.Sprintf("cannot read the group's instance template, so its service account and subnetworks were not asked: %s", oneLine(err.Error()))
		}
		name = cur
	}
	it, err := n.API.getTemplate(ctx, name)
	if err != nil || it == nil || it.Properties == nil {
		return out, fmt.Sprintf("cannot read instance template %q, so its service account and subnetworks were not asked", name)
	}
	if n.Template != "" {
		out = append(out, n.template(name))
	}
	for _, sa := range it.Properties.ServiceAccounts {
		out = append(out, gcpclient.ServiceAccount(ctx, os.Getenv(EndpointEnv), n.API.probeOpts, sa.Email))
	}
	for _, ni := range it.Properties.NetworkInterfaces {
		if ni.Subnetwork != "" {
			out = append(out, n.subnetwork(ni.Subnetwork, len(ni.AccessConfigs) > 0))
		}
	}
	return out, ""
}
