package gcefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
)

// Resource-level IAM: the resources whose own IAM policy can grant a
// permission, as Compute and IAM document them
// (https://cloud.google.com/compute/docs/access/managing-access-to-resources),
// answer their testIamPermissions with what the caller holds there or on
// the project (gcpiam.Role.AllowsOn), and the calls that launch from a
// template check those permissions on the template's resources.

// GrantOn grants permissions on one resource only, as a binding in its
// own IAM policy: projects/P/global/instanceTemplates/T,
// projects/P/regions/R/subnetworks/S, projects/P/zones/Z/instanceGroups/G
// (or regions/R), or gcpiam.ServiceAccount(email).
func (s *Server) GrantOn(resource string, permissions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.role.GrantOn(resource, permissions...)
}

// testResourceIam answers compute's testIamPermissions of a template, a
// subnetwork or an instance group ("Returns permissions that a caller has
// on the specified resource"): 404 for a resource that does not exist,
// else the permissions asked that the caller holds on it. The method needs
// no permission of its own (see permissionOf).
func (s *Server) testResourceIam(req *request) (any, error) {
	var body compute.TestPermissionsRequest
	if err := decode(req, &body); err != nil {
		return nil, err
	}
	resource := "projects/" + req.project + "/" + strings.Join(req.parts[:len(req.parts)-1], "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.existsLocked(req) {
		return nil, notFound("The resource '%s' was not found", resource)
	}
	out, err := gcpiam.Allowed(body.Permissions, func(p string) bool { return s.role.AllowsOn(resource, p) })
	if err != nil {
		return nil, invalid("%s", err)
	}
	return &compute.TestPermissionsResponse{Permissions: out}, nil
}

// existsLocked reports whether the resource of a testIamPermissions call
// exists: a template, a group's instance group (of the group's name), or
// a subnetwork RegisterSubnetwork made.
func (s *Server) existsLocked(req *request) bool {
	p := req.parts
	switch {
	case len(p) == 4 && p[1] == "instanceTemplates":
		return s.templates[req.project+"/"+p[2]] != nil
	case len(p) == 5 && p[2] == "subnetworks":
		return s.subnetworks[req.project+"/"+p[1]+"/"+p[3]]
	case len(p) == 5 && p[2] == "instanceGroups":
		return s.groups[req.project+"/"+p[0]+"/"+p[1]+"/"+p[3]] != nil
	}
	return false
}

// RegisterSubnetwork makes a subnetwork that templates can name
// (projects/P/regions/R/subnetworks/S): in a Shared VPC, P is the host
// project.
func (s *Server) RegisterSubnetwork(project, region, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subnetworks[project+"/"+region+"/"+name] = true
}

// mayLaunchLocked refuses a call that sets template ref on a group
// (insert, setInstanceTemplate, patch) unless the caller holds, on each
// resource, what Compute checks for it: compute.instanceTemplates.useReadOnly
// on the template, iam.serviceAccounts.actAs on its service accounts
// ("the user must have the iam.serviceAccounts.actAs permission on the
// service account", https://cloud.google.com/compute/docs/access/iam#the_serviceaccountuser_role)
// and compute.subnetworks.use on its subnetworks (a Shared VPC's on the
// host project's subnet,
// https://cloud.google.com/vpc/docs/shared-vpc#iam_in_shared_vpc).
func (s *Server) mayLaunchLocked(project, ref string) error {
	it, err := s.templateLocked(project, ref)
	if err != nil {
		return nil // the call refuses it itself
	}
	p, name, _ := resourceName(ref, "instanceTemplates")
	if p == "" {
		p = project
	}
	need := [][2]string{{"projects/" + p + "/global/instanceTemplates/" + name, "compute.instanceTemplates.useReadOnly"}}
	for _, sa := range it.Properties.ServiceAccounts {
		need = append(need, [2]string{gcpiam.ServiceAccount(sa.Email), "iam.serviceAccounts.actAs"})
	}
	for _, ni := range it.Properties.NetworkInterfaces {
		if ni.Subnetwork != "" {
			need = append(need, [2]string{subnetworkName(project, ni.Subnetwork), "compute.subnetworks.use"})
		}
	}
	for _, n := range need {
		if !s.role.AllowsOn(n[0], n[1]) {
			return &apiError{http.StatusForbidden, "forbidden", fmt.Sprintf("Required '%s' permission for '%s'", n[1], n[0])}
		}
	}
	return nil
}

// subnetworkName is a subnetwork URL's name projects/P/regions/R/subnetworks/S,
// in project when it names none.
func subnetworkName(project, url string) string {
	if i := strings.Index(url, "projects/"); i >= 0 {
		return url[i:]
	}
	return "projects/" + project + "/" + strings.TrimPrefix(url, "/")
}

// testServiceAccountIam answers IAM's projects.serviceAccounts.testIamPermissions
// (v1: POST v1/projects/{project}/serviceAccounts/{email}:testIamPermissions,
// "-" for the project "will infer the project from the account"), served
// at the endpoint's root for pkg/cloud/gce's permission probe: 404 for an
// account no template runs as, else the permissions asked that the
// caller holds on it. It reports whether the request was one.
func (s *Server) testServiceAccountIam(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/projects/")
	_, account, isSA := strings.Cut(rest, "/serviceAccounts/")
	email, isTest := strings.CutSuffix(account, ":testIamPermissions")
	if !ok || !isSA || !isTest || r.Method != http.MethodPost {
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
	s.calls = append(s.calls, Call{HTTPMethod: r.Method, Method: "iam.projects.serviceAccounts.testIamPermissions"})
	if !s.accountLocked(email) {
		writeError(w, notFound("Unknown service account"))
		return true
	}
	out, err := gcpiam.Allowed(req.Permissions, func(p string) bool { return s.role.AllowsOn(gcpiam.ServiceAccount(email), p) })
	if err != nil {
		writeError(w, invalid("%s", err))
		return true
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"permissions": out})
	return true
}

// accountLocked reports whether a template runs as the account: the
// fake keeps no service accounts of its own.
func (s *Server) accountLocked(email string) bool {
	for _, it := range s.templates {
		for _, sa := range it.Properties.ServiceAccounts {
			if sa.Email == email {
				return true
			}
		}
	}
	return false
}
