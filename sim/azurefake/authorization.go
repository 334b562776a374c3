package azurefake

import (
	"net/http"
	"strings"
)

// Role is a role assignment's permission as the permissions list answers
// it (the Permission of Microsoft.Authorization 2022-04-01:
// https://learn.microsoft.com/en-us/rest/api/authorization/permissions/list-for-resource#permission),
// the fake's own, so that its evaluation can disagree with the
// providers'.
type Role struct {
	Actions    []string `json:"actions"`
	NotActions []string `json:"notActions"`
}

// permissionList is the permissions list's answer (PermissionGetResult).
type permissionList struct {
	Value []Role `json:"value"`
}

// assignment is a role assigned at a scope (an ARM resource ID): it
// applies to the scope and everything under it, never above
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/scope-overview).
type assignment struct {
	scope string
	role  Role
}

// covers reports whether the assignment applies to path: path is its
// scope or under it (ARM IDs are case-insensitive).
func (a assignment) covers(path string) bool {
	sc, p := strings.ToLower(strings.TrimSuffix(a.scope, "/")), strings.ToLower(strings.TrimSuffix(path, "/"))
	return p == sc || strings.HasPrefix(p, sc+"/")
}

// allows reports whether the role allows action as Azure RBAC evaluates
// it (https://learn.microsoft.com/en-us/azure/role-based-access-control/role-definitions#actions):
// one of its actions matches (a "*" matches any characters, names are
// case-insensitive) and none of its notActions does, which subtract from
// this role only ("NotActions is not a deny rule").
func (r Role) allows(action string) bool {
	return rbacMatch(r.Actions, action) && !rbacMatch(r.NotActions, action)
}

func rbacMatch(patterns []string, action string) bool {
	a := strings.ToLower(action)
	for _, p := range patterns {
		parts := strings.Split(strings.ToLower(p), "*")
		if len(parts) == 1 {
			if parts[0] == a {
				return true
			}
			continue
		}
		rest, ok := strings.CutPrefix(a, parts[0])
		for _, mid := range parts[1 : len(parts)-1] {
			i := strings.Index(rest, mid)
			if !ok || i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(mid):]
		}
		if ok && strings.HasSuffix(rest, parts[len(parts)-1]) {
			return true
		}
	}
	return false
}

// AKSContributorRole is the actions of the built-in role "Azure
// Kubernetes Service Contributor Role" (ed7f3fbd-7b88-4dd4-9017-9adb7ce333f8,
// https://learn.microsoft.com/en-us/azure/role-based-access-control/built-in-roles/containers#azure-kubernetes-service-contributor-role).
var AKSContributorRole = Role{Actions: []string{
	"Microsoft.Authorization/*/read",
	"Microsoft.ContainerService/locations/*",
	"Microsoft.ContainerService/managedClusters/*",
	"Microsoft.ContainerService/managedclustersnapshots/*",
	"Microsoft.ContainerService/snapshots/*",
	"Microsoft.Insights/alertRules/*",
	"Microsoft.Resources/deployments/*",
	"Microsoft.Resources/subscriptions/resourceGroups/read",
	"Microsoft.ContainerService/deploymentSafeguards/*",
}, NotActions: []string{}}

// VMContributorRole is the actions of the built-in role "Virtual
// Machine Contributor" (9980e02c-c2be-4d73-94e8-173b1dc7cf3c,
// https://learn.microsoft.com/en-us/azure/role-based-access-control/built-in-roles/compute#virtual-machine-contributor)
// that the fake's requests can meet: its Microsoft.Authorization,
// Microsoft.Compute and Microsoft.Resources actions. Its
// Microsoft.Network joins (a green's subnet, load balancer pools), which
// Azure checks on a scale set's PUT and the fake does not model, are left
// out. It holds every action the vmss provider needs and none of AKS's.
var VMContributorRole = Role{Actions: []string{
	"Microsoft.Authorization/*/read",
	"Microsoft.Compute/availabilitySets/*",
	"Microsoft.Compute/locations/*",
	"Microsoft.Compute/virtualMachines/*",
	"Microsoft.Compute/virtualMachineScaleSets/*",
	"Microsoft.Compute/cloudServices/*",
	"Microsoft.Compute/disks/write",
	"Microsoft.Compute/disks/read",
	"Microsoft.Compute/disks/delete",
	"Microsoft.Compute/hostgroups/write",
	"Microsoft.Compute/hostgroups/hosts/write",
	"Microsoft.Resources/deployments/*",
	"Microsoft.Resources/subscriptions/resourceGroups/read",
}, NotActions: []string{}}

// account is what the fake holds of the subscription beside its
// clusters: the caller's role assignments and the Compute quotas.
type account struct {
	// roles are the caller's role assignments; nil grants everything
	// (an Owner's "*" on the subscription), so that a test that sets none
	// is never refused.
	roles []assignment
	// limits are the vCPU quotas by usage name; see quotaLimit.
	limits map[string]int64
}

// SetRoles assigns the caller these roles on the subscription, in place
// of any: the permissions list of every scope answers them, and every
// request they do not allow is refused with 403 AuthorizationFailed, as
// ARM refuses it before the resource provider sees it. No role grants
// nothing; SetRoles is never undone to "everything" but by a role of "*".
func (s *Server) SetRoles(roles ...Role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acct.roles = []assignment{}
	s.assignLocked("/subscriptions/"+s.opts.Subscription, roles)
}

// AssignRole assigns the caller roles at scope (an ARM resource ID: a
// resource group, a cluster, a scale set) beside those it has: they
// apply there and below only, so a role on a scale set does not reach
// its resource group, nor the subscription's operation statuses.
func (s *Server) AssignRole(scope string, roles ...Role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acct.roles == nil {
		s.acct.roles = []assignment{}
	}
	s.assignLocked(scope, roles)
}

func (s *Server) assignLocked(scope string, roles []Role) {
	for _, r := range roles {
		s.acct.roles = append(s.acct.roles, assignment{scope: scope, role: r})
	}
}

// rolesAt are the roles that apply to path; nil (everything) with no
// roles set.
func (s *Server) rolesAt(path string) []Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acct.roles == nil {
		return []Role{{Actions: []string{"*"}, NotActions: []string{}}}
	}
	out := []Role{}
	for _, a := range s.acct.roles {
		if a.covers(path) {
			out = append(out, a.role)
		}
	}
	return out
}

// Operations the fake names by their Azure action, and the API versions
// their resource providers serve.
const (
	opPermissions = "Microsoft.Authorization/permissions/read"
	opUsages      = "Microsoft.Compute/locations/usages/read"
	opSKUs        = "Microsoft.Compute/skus/read"
)

var apiVersions = map[string]string{opPermissions: "2022-04-01", opUsages: "2025-04-01", opSKUs: "2021-07-01"}

// apiVersionOf is the API version an operation is served at.
func apiVersionOf(op string) string {
	if v, ok := apiVersions[op]; ok {
		return v
	}
	if strings.HasPrefix(op, computeAction) {
		return ComputeAPIVersion // the scale sets of vmss_handler.go
	}
	return APIVersion
}

// accountRoute names the requests on the subscription beside AKS's: the
// permissions list of any scope (an AKS cluster, a scale set, a resource
// group: the roles assigned there or above), and Microsoft.Compute's usages and
// resource SKUs. nil for another.
func (s *Server) accountRoute(q *request) (string, func(*request)) {
	p, n := q.parts, len(q.parts)
	if q.r.Method != http.MethodGet || n < 5 || p[0] != "subscriptions" {
		return "", nil
	}
	switch {
	case p[n-3] == "providers" && p[n-2] == "microsoft.authorization" && p[n-1] == "permissions":
		return opPermissions, s.listPermissions
	case n == 5 && p[2] == "providers" && p[3] == "microsoft.compute" && p[4] == "skus":
		return opSKUs, s.listSKUs
	case n == 7 && p[2] == "providers" && p[3] == "microsoft.compute" && p[4] == "locations" && p[6] == "usages":
		return opUsages, s.listUsages
	}
	return "", nil
}

// listPermissions answers the caller's permissions on a scope: one entry
// per role assignment at the scope or above it
// (https://learn.microsoft.com/en-us/rest/api/authorization/permissions/list-for-resource).
func (s *Server) listPermissions(q *request) {
	scope := strings.TrimSuffix(q.r.URL.Path, "/providers/Microsoft.Authorization/permissions")
	writeJSON(q.w, http.StatusOK, permissionList{Value: s.rolesAt(scope)})
}

// actionOf is the Azure action of one of the fake's operations
// (resource provider operations of Microsoft.ContainerService:
// https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/containers#microsoftcontainerservice).
func actionOf(op string) string {
	switch {
	case strings.HasPrefix(op, "Microsoft."):
		return op
	case strings.HasPrefix(op, "operations/"), strings.HasPrefix(op, "operationresults/"):
		return "Microsoft.ContainerService/locations/" + op
	case strings.HasPrefix(op, "managedClusters/"):
		return "Microsoft.ContainerService/" + op
	}
	return "Microsoft.ContainerService/managedClusters/" + op
}

// Actions lists the Azure actions of the requests answered so far, in
// order, once each.
func (s *Server) Actions() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range s.Calls() {
		if a := actionOf(c.Operation); !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// admit is ARM's and AKS's refusals before the operation's own: the
// caller's roles (authorize), then another pool's operation (clusterBusy).
func (s *Server) admit(op string, q *request) *armError {
	if e := s.authorize(op, q); e != nil {
		return e
	}
	return s.clusterBusy(q)
}

// clusterBusy is AKS's 409 to a change of a pool while an operation
// runs on another pool of the cluster: "Operation is not allowed: Another
// agentpool operation (nodepool1 - Creating) is in progress, please wait
// for it to finish before starting a new operation. See
// https://aka.ms/aks-pending-operation for more details" (as AKS answered
// it in https://github.com/cilium/cilium/issues/25944). An abort is of the
// pool's own operation, not refused.
func (s *Server) clusterBusy(q *request) *armError {
	p := q.parts
	if q.r.Method == http.MethodGet || len(p) < 10 || p[8] != "agentpools" || (len(p) == 11 && p[10] == "abort") {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[key(q.raw[3], q.raw[7])]
	if c == nil {
		return nil
	}
	for name, other := range c.pools {
		st := *other.model.Properties.ProvisioningState
		if name != p[9] && (other.op != nil || busyStates[st]) {
			return errorf(http.StatusConflict, "OperationNotAllowed", "Operation is not allowed: Another agentpool operation (%s - %s) is in progress, please wait for it to finish before starting a new operation. See https://aka.ms/aks-pending-operation for more details",
				*other.model.Name, st)
		}
	}
	return nil
}

// busyStates are the provisioning states of a pool whose operation
// runs (those the fake goes through, and AKS's Creating, Scaling,
// Deleting that SetPoolState may set).
var busyStates = map[string]bool{stateUpgrading: true, stateUpgradeImage: true, stateUpdating: true, stateCanceling: true,
	"Creating": true, "Scaling": true, "Deleting": true}

// authorize refuses a request the caller's roles do not allow, as ARM
// does before any resource provider, AKS's or Compute's, sees it (403
// AuthorizationFailed,
// https://learn.microsoft.com/en-us/azure/role-based-access-control/troubleshooting#symptom---authorization-failed);
// a Compute request's action is the operation name routeCompute gives it,
// evaluated with the roles assigned at the request's path or above (an
// operation status, /subscriptions/S/providers/RP/locations/L/operations/ID,
// only by the subscription's: "if you only have permission at the
// resource level, you can start the operation but you can't track its
// status",
// https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations).
// The permissions list itself needs no permission.
func (s *Server) authorize(op string, q *request) *armError {
	action := actionOf(op)
	if op == opPermissions {
		return nil
	}
	for _, r := range s.rolesAt(q.r.URL.Path) {
		if r.allows(action) {
			return nil
		}
	}
	return errorf(http.StatusForbidden, "AuthorizationFailed",
		"The client 'nodeupgrade-local' with object id '00000000-0000-0000-0000-00000000cafe' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
		action, q.r.URL.Path)
}
