package aks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Policy is where the permissions are documented.
const Policy = "docs/providers/aks.md#azure-permissions"

// Call is one kind of request the provider sends to Azure Resource
// Manager and the Azure action that authorises it, by the resource
// provider operations of
// https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/containers#microsoftcontainerservice
// and .../permissions/compute#microsoftcompute.
type Call struct {
	// Action is the Azure action; Call says what the provider does with
	// it, by the SDK method or the REST path it sends.
	Action, Call string
	// Optional marks a read the plan does without: denied, the plan says
	// what it could not check (the quota); the probe does not ask for it.
	Optional bool
}

// Calls are every request the provider makes, with its action. Every run
// makes each of the required ones (AKS runs the upgrade; cancel's abort
// is asked for too, as GKE's cancel is). docs/providers/aks.md lists the
// same actions (TestAKSPermissionsOfEveryCall in sim/conformance holds the
// three together with the requests the provider sends).
var Calls = []Call{
	{Action: "Microsoft.ContainerService/managedClusters/read", Call: "read the cluster's control plane version and location (ManagedClustersClient.Get)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/read", Call: "read the pool, its settings and state, and the cluster's other pools (AgentPoolsClient.Get, NewListPager)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/upgradeProfiles/read", Call: "read the versions and the latest node image offered (AgentPoolsClient.GetUpgradeProfile)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/write", Call: "set the run's upgrade settings and back, start a Kubernetes version upgrade or its recovery (AgentPoolsClient.BeginCreateOrUpdate)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/upgradeNodeImageVersion/action", Call: "start a node image upgrade or its recovery (AgentPoolsClient.BeginUpgradeNodeImageVersion)"},
	{Action: "Microsoft.ContainerService/managedClusters/agentPools/abort/action", Call: "cancel the upgrade (AgentPoolsClient.BeginAbortLatestOperation)"},
	{Action: "Microsoft.ContainerService/locations/operations/read", Call: "follow the upgrade's operation (GET locations/{location}/operations/{id})"},
	{Action: "Microsoft.Compute/locations/usages/read", Call: "read the vCPU quota for the surge nodes (GET Microsoft.Compute/locations/{location}/usages)", Optional: true},
	{Action: "Microsoft.Compute/skus/read", Call: "read the pool's VM size's vCPUs and family (GET Microsoft.Compute/skus)", Optional: true},
}

// permissionsAPIVersion is the Microsoft.Authorization API version of
// the permissions list
// (https://learn.microsoft.com/en-us/rest/api/authorization/permissions/list-for-resource?view=rest-authorization-2022-04-01).
const permissionsAPIVersion = "2022-04-01"

// Permission is one entry of the permissions list: the actions of one
// of the caller's role assignments that apply to the scope, as the REST
// API's Permission names them.
type Permission struct {
	Actions        []string `json:"actions"`
	NotActions     []string `json:"notActions"`
	DataActions    []string `json:"dataActions,omitempty"`
	NotDataActions []string `json:"notDataActions,omitempty"`
}

// PermissionList is the permissions list's answer (PermissionGetResult).
type PermissionList struct {
	Value    []Permission `json:"value"`
	NextLink string       `json:"nextLink,omitempty"`
}

var _ cloud.PermissionProber = (*AgentPool)(nil)

// ProbePermissions implements cloud.PermissionProber: the caller's
// permissions on the cluster (Microsoft.Authorization/permissions, which
// any caller may list for itself), each required action of Calls matched
// against them as Azure evaluates them (Grants). A refusal to answer is
// CannotAsk, a warning.
func (a *AgentPool) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	var perms []Permission
	next := strings.TrimSuffix(endpoint(), "/") + a.clusterResourceID() + "/providers/Microsoft.Authorization/permissions"
	for next != "" {
		var page PermissionList
		if err := a.c.getJSON(ctx, next, permissionsAPIVersion, &page); err != nil {
			what := fmt.Sprintf("list the caller's permissions on AKS cluster %q (Microsoft.Authorization/permissions)", a.id.name)
			if _, status := code(err); status == http.StatusForbidden || status == http.StatusUnauthorized || status == http.StatusNotFound {
				return &plan.Permissions{Policy: Policy, CannotAsk: wrap(err, "%s", what).Error()}, nil
			}
			return nil, wrap(err, "%s", what)
		}
		perms = append(perms, page.Value...)
		next = page.NextLink
	}
	out := &plan.Permissions{Policy: Policy}
	for _, c := range Calls {
		if !c.Optional && !Grants(perms, c.Action) {
			out.Missing = append(out.Missing, plan.MissingPermission{Permission: c.Action, Call: c.Call})
		}
	}
	return out, nil
}

// clusterResourceID is the cluster's ARM resource ID, the scope whose
// permissions are asked.
func (a *AgentPool) clusterResourceID() string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.ContainerService/managedClusters/%s",
		url.PathEscape(a.id.subscription), url.PathEscape(a.id.group), url.PathEscape(a.id.name))
}

// Grants reports whether the permissions list allows a (control plane)
// action, as Azure RBAC evaluates it
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/role-definitions):
// an entry allows the action when one of its actions matches it and none
// of its notActions does ("NotActions" subtract from that role's Actions
// only: "NotActions is not a deny rule", so another entry that allows the
// action grants it). A "*" in an action matches any characters
// ("Microsoft.ContainerService/*", "*/read", "Microsoft.CostManagement/*/query/*");
// operation names are compared case-insensitively, as ARM's are. Deny
// assignments are not part of this answer: one would still refuse the
// call.
func Grants(perms []Permission, action string) bool {
	for _, p := range perms {
		if matchesAny(p.Actions, action) && !matchesAny(p.NotActions, action) {
			return true
		}
	}
	return false
}

func matchesAny(patterns []string, action string) bool {
	for _, p := range patterns {
		if wildcardMatch(strings.ToLower(p), strings.ToLower(action)) {
			return true
		}
	}
	return false
}

// wildcardMatch matches s against pattern, whose "*" stand for any
// characters.
func wildcardMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// getJSON GETs u (a full URL, or a nextLink that carries its own
// api-version) with apiVersion through the provider's pipeline and reads
// the answer into doc; an answer other than 200 is the azcore error.
func (c *clients) getJSON(ctx context.Context, u, apiVersion string, doc any) error {
	req, err := runtime.NewRequest(ctx, http.MethodGet, u)
	if err != nil {
		return err
	}
	q := req.Raw().URL.Query()
	if q.Get("api-version") == "" {
		q.Set("api-version", apiVersion)
		req.Raw().URL.RawQuery = q.Encode()
	}
	resp, err := c.pipeline.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return runtime.NewResponseError(resp)
	}
	return json.NewDecoder(resp.Body).Decode(doc)
}
