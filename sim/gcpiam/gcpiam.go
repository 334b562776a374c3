// Package gcpiam answers Resource Manager's projects.testIamPermissions
// for the Google fakes (sim/gcefake, sim/gkefake), which serve it beside
// their own API for the providers' permission probes.
package gcpiam

import (
	"fmt"
	"regexp"
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
