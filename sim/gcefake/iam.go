package gcefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
)

// permissionOf is the IAM permission Compute checks for each API method
// the fake serves (https://cloud.google.com/compute/docs/access/iam-permissions):
// the regional methods of managed instance groups and autoscalers are
// checked as the zonal ones, listManagedInstances as get, the custom verbs
// of a group (resize, setInstanceTemplate, deleteInstances, ...) as
// update, and inserts as create. Both the fake's refusals (authorize) and
// the test holding docs/providers/gce.md's role to the provider's calls
// (TestRolePermitsEveryProviderCall) read this one map.
var permissionOf = map[string]string{
	"compute.instances.get":                              "compute.instances.get",
	"compute.instances.list":                             "compute.instances.list",
	"compute.instanceTemplates.list":                     "compute.instanceTemplates.list",
	"compute.instanceTemplates.get":                      "compute.instanceTemplates.get",
	"compute.instanceTemplates.insert":                   "compute.instanceTemplates.create",
	"compute.images.get":                                 "compute.images.get",
	"compute.images.getFromFamily":                       "compute.images.getFromFamily",
	"compute.globalOperations.get":                       "compute.globalOperations.get",
	"compute.zoneOperations.get":                         "compute.zoneOperations.get",
	"compute.regionOperations.get":                       "compute.regionOperations.get",
	"compute.regions.get":                                "compute.regions.get",
	"compute.machineTypes.get":                           "compute.machineTypes.get",
	"compute.autoscalers.list":                           "compute.autoscalers.list",
	"compute.autoscalers.get":                            "compute.autoscalers.get",
	"compute.autoscalers.insert":                         "compute.autoscalers.create",
	"compute.regionAutoscalers.list":                     "compute.autoscalers.list",
	"compute.regionAutoscalers.get":                      "compute.autoscalers.get",
	"compute.regionAutoscalers.insert":                   "compute.autoscalers.create",
	"compute.backendServices.list":                       "compute.backendServices.list",
	"compute.backendServices.insert":                     "compute.backendServices.create",
	"compute.regionBackendServices.list":                 "compute.regionBackendServices.list",
	"compute.regionBackendServices.insert":               "compute.regionBackendServices.create",
	"compute.instanceGroupManagers.list":                 "compute.instanceGroupManagers.list",
	"compute.instanceGroupManagers.get":                  "compute.instanceGroupManagers.get",
	"compute.instanceGroupManagers.insert":               "compute.instanceGroupManagers.create",
	"compute.instanceGroupManagers.delete":               "compute.instanceGroupManagers.delete",
	"compute.instanceGroupManagers.patch":                "compute.instanceGroupManagers.update",
	"compute.instanceGroupManagers.resize":               "compute.instanceGroupManagers.update",
	"compute.instanceGroupManagers.setInstanceTemplate":  "compute.instanceGroupManagers.update",
	"compute.instanceGroupManagers.deleteInstances":      "compute.instanceGroupManagers.update",
	"compute.instanceGroupManagers.recreateInstances":    "compute.instanceGroupManagers.update",
	"compute.instanceGroupManagers.listManagedInstances": "compute.instanceGroupManagers.get",
	// A resource's testIamPermissions needs no permission: it answers
	// what the caller holds, as Resource Manager's does.
	"compute.instanceTemplates.testIamPermissions":    "",
	"compute.subnetworks.testIamPermissions":          "",
	"compute.instanceGroups.testIamPermissions":       "",
	"compute.regionInstanceGroups.testIamPermissions": "",
}

func init() {
	// The regional managed instance group methods take the zonal ones'
	// permissions (no compute.regionInstanceGroupManagers.* permission
	// exists on the page cited above).
	for m, p := range permissionOf {
		if rest, ok := strings.CutPrefix(m, "compute.instanceGroupManagers."); ok {
			permissionOf["compute.regionInstanceGroupManagers."+rest] = p
		}
	}
}

// Grant limits the caller's permissions on the project to those given, as
// Resource Manager's testIamPermissions answers them and Compute enforces
// them (see authorize); nil (the default) grants every permission.
func (s *Server) Grant(permissions []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.role.Grant(permissions)
}

// Deny takes permissions away from what Grant gave (every permission by
// default): a role lacking one.
func (s *Server) Deny(permissions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.role.Deny(permissions...)
}

// authorize refuses a call whose permission is not granted as Compute
// does: 403, reason "forbidden", "Required 'P' permission for 'RESOURCE'"
// (the message gcloud and the client libraries show for a missing
// permission, e.g. "Required 'compute.instances.create' permission for
// 'projects/p/zones/z/instances/i'"). A method with no known permission
// is the fake's own defect, answered 500 so a test notices it.
func (s *Server) authorize(method string, req *request) error {
	p, ok := permissionOf[method]
	if !ok {
		return fmt.Errorf("gcefake knows no permission for %s", method)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == "" || s.role.AllowsOn(grantedOn(method, req), p) {
		return nil
	}
	resource := "projects/" + req.project
	if len(req.parts) >= 4 {
		resource += "/" + strings.Join(req.parts[:4], "/")
	}
	return &apiError{http.StatusForbidden, "forbidden", fmt.Sprintf("Required '%s' permission for '%s'", p, resource)}
}

// grantedOn is the resource whose own IAM policy can grant a call's
// permission: a group's instance group (of its name) for the group's
// methods; "" (the project only) for the others.
func grantedOn(method string, req *request) string {
	if !strings.Contains(method, "nstanceGroupManagers.") || len(req.parts) < 4 {
		return ""
	}
	return "projects/" + req.project + "/" + req.parts[0] + "/" + req.parts[1] + "/instanceGroups/" + req.parts[3]
}

// testIamPermissions answers Resource Manager's projects.testIamPermissions
// (v1: POST v1/projects/{resource}:testIamPermissions; the answer is "a
// subset of TestPermissionsRequest.permissions that the caller is
// allowed"), served at the endpoint's root for pkg/cloud/gce's permission
// probe. It reports whether the request was one.
func (s *Server) testIamPermissions(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/projects/")
	if !ok || !strings.HasSuffix(rest, ":testIamPermissions") || strings.Contains(rest, "/") || r.Method != http.MethodPost {
		return false
	}
	var req struct {
		Permissions []string `json:"permissions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, invalid("invalid JSON payload: %v", err))
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{HTTPMethod: r.Method, Method: "cloudresourcemanager.projects.testIamPermissions"})
	out, err := gcpiam.Allowed(req.Permissions, s.role.Allows)
	if err != nil {
		writeError(w, invalid("%s", err))
		return true
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"permissions": out})
	return true
}
