package gkefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
)

// permissionOf is the IAM permission GKE checks for each method the fake
// answers (https://cloud.google.com/kubernetes-engine/docs/reference/api-permissions:
// clusters.get, nodePools.get and nodePools.list need
// container.clusters.get; nodePools.update, rollback and completeUpgrade
// container.clusters.update, as nodePools.create and delete do;
// operations.get and list container.operations.get and .list).
// getServerConfig and operations.cancel are not on that page: the fake
// takes container.clusters.list for the one (the permission GKE's 403
// names for it) and container.operations.cancel for the other.
var permissionOf = map[string]string{
	"container.projects.locations.clusters.get":                       "container.clusters.get",
	"container.projects.locations.clusters.nodePools.get":             "container.clusters.get",
	"container.projects.locations.clusters.nodePools.list":            "container.clusters.get",
	"container.projects.locations.clusters.nodePools.update":          "container.clusters.update",
	"container.projects.locations.clusters.nodePools.rollback":        "container.clusters.update",
	"container.projects.locations.clusters.nodePools.completeUpgrade": "container.clusters.update",
	"container.projects.locations.operations.get":                     "container.operations.get",
	"container.projects.locations.operations.list":                    "container.operations.list",
	"container.projects.locations.operations.cancel":                  "container.operations.cancel",
	"container.projects.locations.getServerConfig":                    "container.clusters.list",
}

// Grant limits what the caller may do to the permissions given; nil (the
// default) grants every permission. A call whose permission is not granted
// is refused with 403 PERMISSION_DENIED, as GKE refuses it.
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

// authorize refuses a call whose permission is not granted, in GKE's
// words: `Required "P" permission(s) for "RESOURCE".`
func (s *Server) authorize(method string, q *request) error {
	p, ok := permissionOf[method]
	if !ok {
		return fmt.Errorf("no permission known for %s", method)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.role.Allows(p) {
		return nil
	}
	resource := strings.Join(q.parts[:min(len(q.parts), 6)], "/")
	return &apiError{http.StatusForbidden, "PERMISSION_DENIED", fmt.Sprintf("Required %q permission(s) for %q.", p, resource)}
}

// testIamPermissions answers Resource Manager's projects.testIamPermissions
// (v1: POST v1/projects/{resource}:testIamPermissions, "Returns permissions
// that a caller has on the specified Project"; the answer is "a subset of
// TestPermissionsRequest.permissions that the caller is allowed"), served
// at the endpoint's root for the permission probe of pkg/cloud/gke.
func (s *Server) testIamPermissions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Permissions []string `json:"permissions"`
	}
	if r.Method != http.MethodPost {
		writeError(w, notFound("no method %s %q", r.Method, r.URL.Path))
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, invalidArg("invalid JSON payload: %v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{HTTPMethod: r.Method, Method: "cloudresourcemanager.projects.testIamPermissions"})
	out, err := gcpiam.Allowed(req.Permissions, s.role.Allows)
	if err != nil {
		writeError(w, invalidArg("%s", err))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"permissions": out})
}
