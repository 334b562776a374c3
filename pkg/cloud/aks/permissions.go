package aks

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
const Policy = "docs/providers/aks.md#azure-permissions"

// Call is one kind of request the provider sends to Azure Resource
// Manager and the Azure action that authorises it, by the resource
// provider operations of
// https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/containers#microsoftcontainerservice
// .../permissions/compute#microsoftcompute and
// .../permissions/networking#microsoftnetwork.
type Call = azarm.Call

// Calls are every request the provider makes, with its action. Every run
// makes each of the required ones (AKS runs the upgrade; cancel's abort
// is asked for too, as GKE's cancel is). docs/providers/aks.md lists the
// same actions (TestAKSPermissionsOfEveryCall in sim/conformance holds the
// three together with the requests the provider sends).
var Calls = []Call{
	{Action: "Microsoft.ContainerService/managedClusters/read", Call: "read the cluster's control plane version and location (ManagedClustersClient.Get)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/read", Call: "read the pool, its settings and state (GET of the pool at API 2025-05-01), and the cluster's other pools (AgentPoolsClient.NewListPager)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/upgradeProfiles/read", Call: "read the versions and the latest node image offered (AgentPoolsClient.GetUpgradeProfile)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/write", Call: "set the run's upgrade settings and back, start a Kubernetes version upgrade or its recovery (PUT of the pool at API 2025-05-01)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/upgradeNodeImageVersion/action", Call: "start a node image upgrade or its recovery (AgentPoolsClient.BeginUpgradeNodeImageVersion)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/abort/action", Call: "cancel the upgrade (AgentPoolsClient.BeginAbortLatestOperation)"},
	{Action: "Microsoft.ContainerService/locations/operations/read", Call: "follow the upgrade's operation (GET locations/{location}/operations/{id})", AtLocation: true},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/delete", Call: "delete blue at the end of a blue/green run, or green on its rollback (AgentPoolsClient.BeginDelete)", For: plan.CapNewGroups},
	{Action: "Microsoft.Compute/locations/usages/read", Call: "read the vCPU quota for the surge nodes (GET Microsoft.Compute/locations/{location}/usages)", Optional: true},
	{Action: "Microsoft.Compute/skus/read", Call: "read the pool's VM size's vCPUs and family (GET Microsoft.Compute/skus)", Optional: true},
	{Action: "Microsoft.Network/virtualNetworks/usages/read", Call: "read the free addresses of the pool's subnets, vnetSubnetID and podSubnetID (GET Microsoft.Network/virtualNetworks/{vnet}/usages)", Optional: true},
}

// permissionsAPIVersion is the permissions list's API version.
const permissionsAPIVersion = azarm.PermissionsAPIVersion

// Permission is one entry of the permissions list (azarm's, which vmss
// shares).
type Permission = azarm.Permission

// PermissionList is the permissions list's answer.
type PermissionList = azarm.PermissionList

var _ cloud.PermissionProber = (*AgentPool)(nil)

// ProbePermissions implements cloud.PermissionProber: the caller's
// permissions on the cluster (Microsoft.Authorization/permissions, which
// any caller may list for itself), each required action of Calls matched
// against them as Azure evaluates them (Grants). A refusal to answer is
// CannotAsk, a warning.
func (a *AgentPool) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	perms, err := armEndpoint.ListPermissions(ctx, a.c.pipeline, a.id.resourceID())
	if err != nil {
		what := fmt.Sprintf("list the caller's permissions on AKS cluster %q (Microsoft.Authorization/permissions)", a.id.name)
		if azarm.CannotAsk(err) {
			return &plan.Permissions{Policy: Policy, CannotAsk: wrap(err, "%s", what).Error()}, nil
		}
		return nil, wrap(err, "%s", what)
	}
	out := &plan.Permissions{Policy: Policy, Missing: azarm.Missing(Calls, perms)}
	atLocation, err := azarm.MissingAtLocation(ctx, a.c.pipeline, Calls, a.id.operationsURL(a.location), operationsAPIVersion)
	if err != nil {
		return nil, wrap(err, "read an operation's status in %s to check the caller may follow the upgrade", a.location)
	}
	out.Missing = append(out.Missing, atLocation...)
	return out, nil
}

// operationsURL is where AKS's asynchronous operations of the cluster's
// location are read (and their read authorised).
func (id clusterID) operationsURL(location string) string {
	return fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.ContainerService/locations/%s",
		strings.TrimSuffix(endpoint(), "/"), url.PathEscape(id.subscription), url.PathEscape(location))
}

// resourceID is the cluster's ARM resource ID, the scope whose
// permissions are asked.
func (id clusterID) resourceID() string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.ContainerService/managedClusters/%s",
		url.PathEscape(id.subscription), url.PathEscape(id.group), url.PathEscape(id.name))
}

// getJSON GETs u (a full URL, or a nextLink that carries its own
// api-version) with apiVersion through the provider's pipeline and reads
// the answer into doc; an answer other than 200 is the azcore error.
func (c *clients) getJSON(ctx context.Context, u, apiVersion string, doc any) error {
	return azarm.GetJSON(ctx, c.pipeline, u, apiVersion, doc)
}
