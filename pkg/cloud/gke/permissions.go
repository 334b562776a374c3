package gke

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcpclient"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Policy is where the permissions are documented.
const Policy = "docs/providers/gke.md#iam-permissions"

// Methods of the container API the provider calls, by the discovery
// document's method IDs (container-api.json).
const (
	methodClusterGet      = "container.projects.locations.clusters.get"
	methodPoolGet         = "container.projects.locations.clusters.nodePools.get"
	methodPoolUpdate      = "container.projects.locations.clusters.nodePools.update"
	methodPoolRollback    = "container.projects.locations.clusters.nodePools.rollback"
	methodPoolComplete    = "container.projects.locations.clusters.nodePools.completeUpgrade"
	methodOperationGet    = "container.projects.locations.operations.get"
	methodOperationList   = "container.projects.locations.operations.list"
	methodOperationCancel = "container.projects.locations.operations.cancel"
	methodServerConfig    = "container.projects.locations.getServerConfig"
	methodInstanceGet     = "compute.instances.get"
)

// calls are the methods the provider calls and the IAM permission each
// needs, as https://cloud.google.com/kubernetes-engine/docs/reference/api-permissions
// lists them: clusters.get and nodePools.get/list need
// container.clusters.get; nodePools.update, rollback and completeUpgrade
// change the cluster, container.clusters.update; operations.get, list and
// cancel need container.operations.*. getServerConfig is listed nowhere:
// GKE checks container.clusters.list on the project for it (its 403 says
// so), the permission roles/container.clusterViewer carries.
// compute.instances.get reads the cluster from an instance's metadata
// (https://cloud.google.com/compute/docs/reference/rest/v1/instances/get).
// Every run makes each (For 0): GKE runs every strategy itself.
var calls = []gcpclient.Call{
	{Method: methodClusterGet, Permission: "container.clusters.get"},
	{Method: methodPoolGet, Permission: "container.clusters.get"},
	{Method: methodPoolUpdate, Permission: "container.clusters.update"},
	{Method: methodPoolRollback, Permission: "container.clusters.update"},
	{Method: methodPoolComplete, Permission: "container.clusters.update"},
	{Method: methodOperationGet, Permission: "container.operations.get"},
	{Method: methodOperationList, Permission: "container.operations.list"},
	{Method: methodOperationCancel, Permission: "container.operations.cancel"},
	{Method: methodServerConfig, Permission: "container.clusters.list"},
	{Method: methodInstanceGet, Permission: "compute.instances.get"},
}

var _ cloud.PermissionProber = (*NodePool)(nil)

// ProbePermissions implements cloud.PermissionProber: testIamPermissions on
// the project for every permission of calls; compute.instances.get only
// where the cluster was read from the instances' metadata, not given with
// --gke-cluster and --location.
func (n *NodePool) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	var need []gcpclient.Call
	for _, c := range calls {
		if c.Method != methodInstanceGet || n.fromMetadata {
			need = append(need, c)
		}
	}
	return gcpclient.Probe(ctx, n.project, n.c.endpoint, Policy, n.c.probeOpts, need)
}
