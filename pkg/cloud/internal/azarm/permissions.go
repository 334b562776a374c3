package azarm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// PermissionsAPIVersion is the Microsoft.Authorization API version of
// the permissions list
// (https://learn.microsoft.com/en-us/rest/api/authorization/permissions/list-for-resource?view=rest-authorization-2022-04-01).
const PermissionsAPIVersion = "2022-04-01"

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

// Call is one kind of request a provider sends to Azure Resource Manager
// and the Azure action that authorises it (the resource provider
// operations of
// https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/).
type Call struct {
	// Action is the Azure action; Call says what the provider does with
	// it, by the SDK method or the REST path it sends.
	Action, Call string
	// Optional marks a read the plan does without: denied, the plan says
	// what it could not check; the probe does not ask for it.
	Optional bool
	// For is the capability whose strategies make the call (blue/green's
	// CapNewGroups), 0 for every run's.
	For plan.Capability
	// AtLocation marks the read of an asynchronous operation's status,
	// which ARM authorises at the subscription's location
	// (/subscriptions/S/providers/RP/locations/L/operations/ID), not at
	// the resource: "if you only have permission at the resource level,
	// you can start the operation but you can't track its status"
	// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations).
	// The permissions list of the resource cannot say; StatusReadable
	// asks where ARM evaluates it.
	AtLocation bool
}

// Pipeline sends a request through a provider's ARM pipeline (its
// credential, retries and endpoint).
type Pipeline interface {
	Do(*policy.Request) (*http.Response, error)
}

// GetJSON GETs u (a full URL, or a nextLink that carries its own
// api-version) with apiVersion through pl and reads the answer into doc;
// an answer other than 200 is the azcore error.
func GetJSON(ctx context.Context, pl Pipeline, u, apiVersion string, doc any) error {
	req, err := runtime.NewRequest(ctx, http.MethodGet, u)
	if err != nil {
		return err
	}
	q := req.Raw().URL.Query()
	if q.Get("api-version") == "" {
		q.Set("api-version", apiVersion)
		req.Raw().URL.RawQuery = q.Encode()
	}
	resp, err := pl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return runtime.NewResponseError(resp)
	}
	return json.NewDecoder(resp.Body).Decode(doc)
}

// ListPermissions reads the caller's permissions on scope (a resource
// ID: /subscriptions/S/resourceGroups/G[/providers/...]), every page;
// any caller may list its own
// (Microsoft.Authorization/permissions/read is in every role's reach:
// https://learn.microsoft.com/en-us/rest/api/authorization/permissions).
func (e Endpoint) ListPermissions(ctx context.Context, pl Pipeline, scope string) ([]Permission, error) {
	var perms []Permission
	next := strings.TrimSuffix(e.URL(), "/") + scope + "/providers/Microsoft.Authorization/permissions"
	for next != "" {
		var page PermissionList
		if err := GetJSON(ctx, pl, next, PermissionsAPIVersion, &page); err != nil {
			return nil, err
		}
		perms = append(perms, page.Value...)
		next = page.NextLink
	}
	return perms, nil
}

// unknownOperation is the ID StatusReadable asks for: no operation has it.
const unknownOperation = "00000000-0000-0000-0000-000000000000"

// StatusReadable reports whether the caller may read the asynchronous
// operation statuses under location (the URL of
// /subscriptions/S/providers/RP/locations/L), where ARM authorises the
// read, by reading the status of an operation that does not exist: ARM
// refuses it with 403 AuthorizationFailed before the resource provider
// sees it when no role of the caller allows the read at that scope
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/troubleshooting#symptom---authorization-failed);
// any other refusal is the resource provider's (the operation is not
// found), so ARM let the read through. An error is one that says neither.
func StatusReadable(ctx context.Context, pl Pipeline, location, apiVersion string) (bool, error) {
	var doc map[string]any
	err := GetJSON(ctx, pl, strings.TrimSuffix(location, "/")+"/operations/"+unknownOperation, apiVersion, &doc)
	code, status := Code(err)
	switch {
	case err == nil, status == http.StatusNotFound, status == http.StatusBadRequest:
		return true, nil
	case status == http.StatusForbidden && code == "AuthorizationFailed":
		return false, nil
	}
	return false, err
}

// MissingAtLocation are the AtLocation calls the caller may not make at
// location (StatusReadable), each saying where the role must be.
func MissingAtLocation(ctx context.Context, pl Pipeline, calls []Call, location, apiVersion string) ([]plan.MissingPermission, error) {
	var out []plan.MissingPermission
	for _, c := range calls {
		if !c.AtLocation {
			continue
		}
		ok, err := StatusReadable(ctx, pl, location, apiVersion)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, plan.MissingPermission{Permission: c.Action, For: c.For,
				Call: c.Call + "; ARM checks it at the subscription, not at the resource: assign a role that holds it on the subscription"})
		}
	}
	return out, nil
}

// CannotAsk reports whether err is Azure refusing to list the
// permissions (403, 401, or 404 where the API is not offered): the plan
// warns that it could not check rather than failing.
func CannotAsk(err error) bool {
	_, s := Code(err)
	return s == http.StatusForbidden || s == http.StatusUnauthorized || s == http.StatusNotFound
}

// Missing are the required calls (not Optional) whose action perms do
// not grant, as the plan lists them.
func Missing(calls []Call, perms []Permission) []plan.MissingPermission {
	var out []plan.MissingPermission
	for _, c := range calls {
		if !c.Optional && !c.AtLocation && !Grants(perms, c.Action) {
			out = append(out, plan.MissingPermission{Permission: c.Action, Call: c.Call, For: c.For})
		}
	}
	return out
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
