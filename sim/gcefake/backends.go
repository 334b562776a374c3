package gcefake

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// routeBackendServices routes backendServices (scope "global") and
// regionBackendServices (scope "regions/R") list and insert; p starts at
// "backendServices".
func (s *Server) routeBackendServices(scope string, p []string, m string) (string, handler) {
	if len(p) != 1 || p[0] != "backendServices" {
		return "", nil
	}
	api := "compute.backendServices."
	if scope != "global" {
		api = "compute.regionBackendServices."
	}
	list := func(req *request) (any, error) { return s.listBackendServices(req, scope) }
	insert := func(req *request) (any, error) { return s.insertBackendService(req, scope) }
	switch m {
	case http.MethodGet:
		return api + "list", list
	case http.MethodPost:
		return api + "insert", insert
	}
	return "", nil
}

// instanceGroupLink is the URL of the instance group a managed instance
// group manages, of its name in its scope, as instanceGroupManagers.get
// reports it (InstanceGroupManager.instanceGroup) and backend services
// name it (Backend.group).
func (s *Server) instanceGroupLink(g *group) string {
	return s.link(fmt.Sprintf("projects/%s/%s/instanceGroups/%s", g.project, g.scope, g.name))
}

// AddBackendService makes a backend service, global (region "") or
// regional, whose backends are the instance groups of the given groups
// (keys): what a load balancer in front of them has.
func (s *Server) AddBackendService(project, region, name string, groups ...string) error {
	scope := "global"
	if region != "" {
		scope = "regions/" + region
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := &compute.BackendService{Name: name}
	for _, k := range groups {
		g := s.groups[k]
		if g == nil {
			return fmt.Errorf("no group %q", k)
		}
		bs.Backends = append(bs.Backends, &compute.Backend{Group: s.instanceGroupLink(g)})
	}
	return s.insertBackendServiceLocked(project, scope, bs)
}

func (s *Server) insertBackendServiceLocked(project, scope string, bs *compute.BackendService) error {
	key := project + "/" + scope + "/" + bs.Name
	if !groupNamePattern.MatchString(bs.Name) {
		return invalid("Invalid value for field 'resource.name': '%s'", bs.Name)
	}
	if s.backendServices[key] != nil {
		return conflict("The resource 'projects/%s/%s/backendServices/%s' already exists", project, scope, bs.Name)
	}
	bs.Id, bs.Kind = nextID(), "compute#backendService"
	bs.SelfLink = s.link(fmt.Sprintf("projects/%s/%s/backendServices/%s", project, scope, bs.Name))
	s.backendServices[key] = bs
	return nil
}

func (s *Server) insertBackendService(req *request, scope string) (any, error) {
	var bs compute.BackendService
	if err := decode(req, &bs); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.insertBackendServiceLocked(req.project, scope, &bs); err != nil {
		return nil, err
	}
	return s.opLocked(req.project, scope, "insert", bs.SelfLink), nil
}

func (s *Server) listBackendServices(req *request, scope string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := req.project + "/" + scope + "/"
	var items []*compute.BackendService
	for _, k := range slices.Sorted(maps.Keys(s.backendServices)) {
		if strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "/") {
			items = append(items, s.backendServices[k])
		}
	}
	items, next, err := page(req, items)
	return &compute.BackendServiceList{Items: items, NextPageToken: next}, err
}

// usedByLocked names the backend service that has g's instance group as
// a backend; "" when none has.
func (s *Server) usedByLocked(g *group) string {
	ig := s.instanceGroupLink(g)
	for _, k := range slices.Sorted(maps.Keys(s.backendServices)) {
		for _, b := range s.backendServices[k].Backends {
			if b.Group == ig {
				return s.backendServices[k].SelfLink
			}
		}
	}
	return ""
}
