package gcefake

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Grant limits the caller's permissions on the project to those given, as
// Resource Manager's testIamPermissions answers them; nil (the default)
// grants every permission.
func (s *Server) Grant(permissions []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.granted = slices.Clone(permissions)
}

// permissionPattern is a permission's form, service.resource.verb
// (https://cloud.google.com/iam/docs/permissions-reference); wildcards
// "are not allowed" (TestIamPermissionsRequest.permissions,
// cloudresourcemanager v1).
var permissionPattern = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*\.[a-zA-Z0-9]+\.[a-zA-Z0-9]+$`)

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
	out := []string{}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{HTTPMethod: r.Method, Method: "cloudresourcemanager.projects.testIamPermissions"})
	for _, p := range req.Permissions {
		if !permissionPattern.MatchString(p) {
			writeError(w, invalid("Permission %s is not valid.", p))
			return true
		}
		if s.granted == nil || slices.Contains(s.granted, p) {
			out = append(out, p)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"permissions": out})
	return true
}
