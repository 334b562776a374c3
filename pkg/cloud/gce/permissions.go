package gce

import (
	"context"
	"os"
	"slices"

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
// template is made for --image only (see NodeGroup.ProbePermissions).
var calls = []gcpclient.Call{
	{Method: "instances.get", Permission: "compute.instances.get"},
	{Method: "instanceGroupManagers.get, listManagedInstances", Permission: "compute.instanceGroupManagers.get"},
	{Method: "instanceTemplates.get", Permission: "compute.instanceTemplates.get"},
	{Method: "images.get", Permission: "compute.images.get"},
	{Method: "images.getFromFamily", Permission: "compute.images.getFromFamily"},
	{Method: "autoscalers.list", Permission: "compute.autoscalers.list"},
	{Method: "regions.get", Permission: "compute.regions.get"},
	{Method: "instanceGroupManagers.resize, setInstanceTemplate, patch, deleteInstances, recreateInstances", Permission: "compute.instanceGroupManagers.update"},
	{Method: "instanceGroupManagers.insert", Permission: "compute.instanceGroupManagers.create", For: plan.CapNewGroups},
	{Method: "instanceGroupManagers.delete", Permission: "compute.instanceGroupManagers.delete", For: plan.CapNewGroups},
	{Method: "backendServices.list", Permission: "compute.backendServices.list", For: plan.CapNewGroups},
	{Method: "regionBackendServices.list", Permission: "compute.regionBackendServices.list", For: plan.CapNewGroups},
	{Method: "instanceGroupManagers.insert (the template's use)", Permission: "compute.instanceGroupManagers.use"},
	{Method: "instanceTemplates.insert", Permission: "compute.instanceTemplates.create"},
	{Method: "instanceTemplates.insert (the source's use)", Permission: "compute.instanceTemplates.useReadOnly"},
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
var imageOnly = []string{"compute.instanceTemplates.create", "compute.instanceTemplates.useReadOnly", "compute.images.useReadOnly", "compute.globalOperations.get"}

var _ cloud.PermissionProber = (*NodeGroup)(nil)

// ProbePermissions implements cloud.PermissionProber: testIamPermissions on
// the project for the role's permissions the run may use.
func (n *NodeGroup) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	var need []gcpclient.Call
	for _, c := range calls {
		if n.Image != "" || !slices.Contains(imageOnly, c.Permission) {
			need = append(need, c)
		}
	}
	return gcpclient.Probe(ctx, n.API.project, os.Getenv(EndpointEnv), Policy, n.API.probeOpts, need)
}
