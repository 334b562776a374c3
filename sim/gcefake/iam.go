package gcefake

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
)

// Grant limits the caller's permissions on the project to those given, as
// Resource Manager's testIamPermissions answers them; nil (the default)
// grants every permission.
func (s *Server) Grant(permissions []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.granted = slices.Clone(permissions)
}

// testIamPermissions answers Resource Manager's projects.testIamPermissions
// (v1: POST v1/projects/{resource}:testIamPermissions; the answer is "a
// subset of TestPermissionsRequest.permissions that the caller is
// allowed"), served at the endpoint's root for pkg/cloud/gce's permission
// probe. It reports whether the request was one.
func (s *Server) testIamPermissions(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/projects/")
	if !ok || !strings.HasSuffix(rest, ":testIamPermissions") || r.Method != http.MethodPost {
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
	out, err := gcpiam.Allowed(req.Permissions, func(p string) bool { return s.granted == nil || slices.Contains(s.granted, p) })
	if err != nil {
		writeError(w, invalid("%s", err))
		return true
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"permissions": out})
	return true
}
