// Package gcpiam answers Resource Manager's projects.testIamPermissions
// for the Google fakes (sim/gcefake, sim/gkefake), which serve it beside
// their own API for the providers' permission probes.
package gcpiam

import (
	"fmt"
	"regexp"
	"slices"
)

// permissionPattern is a permission's form, service.resource.verb
// (https://cloud.google.com/iam/docs/permissions-reference); wildcards
// "are not allowed" (TestIamPermissionsRequest.permissions,
// cloudresourcemanager v1).
var permissionPattern = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*\.[a-zA-Z0-9]+\.[a-zA-Z0-9]+$`)

// Allowed is the answer to testIamPermissions for the permissions asked:
// "a subset of TestPermissionsRequest.permissions that the caller is
// allowed" (v1), those granted says yes to. A permission not of the
// documented form is refused with the service's message.
func Allowed(asked []string, granted func(permission string) bool) ([]string, error) {
	out := []string{}
	for _, p := range asked {
		if !permissionPattern.MatchString(p) {
			return nil, fmt.Errorf("Permission %s is not valid.", p) //lint:ignore ST1005 the service's own words
		}
		if granted(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Role is what a fake's caller may do: every permission unless Grant
// limited it, less those Deny took away, on every project; and
// permissions GrantOn gave on one resource only, as a role bound in that
// resource's own IAM policy. A grant on the project is inherited by its
// resources ("If you grant access to a parent resource, you implicitly
// grant access to all its child resources",
// https://cloud.google.com/compute/docs/access/managing-access-to-resources);
// a resource's grant reaches no other. The fakes guard it with their own
// lock.
type Role struct {
	// granted are the caller's permissions, nil for all; denied those
	// taken away from them.
	granted, denied []string
	// on are the permissions granted on one resource, by its name.
	on map[string][]string
}

// Grant limits the caller's permissions to those given; nil grants every
// permission.
func (r *Role) Grant(permissions []string) { r.granted = slices.Clone(permissions) }

// Deny takes permissions away from what Grant gave: a role lacking one.
func (r *Role) Deny(permissions ...string) { r.denied = append(r.denied, permissions...) }

// GrantOn grants permissions on one resource, named as its
// testIamPermissions names it: projects/P/regions/R/subnetworks/S,
// projects/P/global/instanceTemplates/T, projects/P/zones/Z/instanceGroups/G,
// or ServiceAccount(email).
func (r *Role) GrantOn(resource string, permissions ...string) {
	if r.on == nil {
		r.on = map[string][]string{}
	}
	r.on[resource] = append(r.on[resource], permissions...)
}

// Allows reports whether the caller holds permission on the project.
func (r *Role) Allows(permission string) bool {
	return (r.granted == nil || slices.Contains(r.granted, permission)) && !slices.Contains(r.denied, permission)
}

// AllowsOn reports whether the caller holds permission on resource: on
// its project, inherited, or on the resource itself.
func (r *Role) AllowsOn(resource, permission string) bool {
	return r.Allows(permission) || slices.Contains(r.on[resource], permission)
}

// ServiceAccount is the name a service account's grants are kept under:
// IAM's projects/-/serviceAccounts/EMAIL, whatever project a request
// names ("Using - as a wildcard for the PROJECT_ID will infer the project
// from the account", projects.serviceAccounts.testIamPermissions).
func ServiceAccount(email string) string { return "projects/-/serviceAccounts/" + email }
