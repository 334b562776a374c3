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
// limited it, less those Deny took away. The fakes guard it with their
// own lock.
type Role struct {
	// granted are the caller's permissions, nil for all; denied those
	// taken away from them.
	granted, denied []string
}

// Grant limits the caller's permissions to those given; nil grants every
// permission.
func (r *Role) Grant(permissions []string) { r.granted = slices.Clone(permissions) }

// Deny takes permissions away from what Grant gave: a role lacking one.
func (r *Role) Deny(permissions ...string) { r.denied = append(r.denied, permissions...) }

// Allows reports whether the caller holds permission.
func (r *Role) Allows(permission string) bool {
	return (r.granted == nil || slices.Contains(r.granted, permission)) && !slices.Contains(r.denied, permission)
}
