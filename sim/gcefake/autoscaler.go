package gcefake

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// insertAutoscaler attaches an autoscaler to the group its target names
// (https://cloud.google.com/compute/docs/reference/rest/v1/autoscalers/insert).
func (s *Server) insertAutoscaler(req *request) (any, error) {
	var a compute.Autoscaler
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	scope := req.parts[0] + "/" + req.parts[1]
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.addAutoscalerLocked(req.project, scope, &a); err != nil {
		return nil, err
	}
	return s.opLocked(req.project, scope, "insert", a.SelfLink), nil
}

func (s *Server) addAutoscalerLocked(project, scope string, a *compute.Autoscaler) error {
	key := project + "/" + scope + "/" + a.Name
	_, target, _ := resourceName(a.Target, "instanceGroupManagers")
	switch {
	case a.Name == "":
		return invalid("autoscaler.name is required")
	case s.autoscalers[key] != nil:
		return conflict("The resource 'projects/%s/%s/autoscalers/%s' already exists", project, scope, a.Name)
	case s.groups[project+"/"+scope+"/"+target] == nil:
		return invalid("autoscaler.target %q is no group in %s", a.Target, scope)
	case a.AutoscalingPolicy == nil || a.AutoscalingPolicy.MaxNumReplicas < 1:
		return invalid("autoscalingPolicy.maxNumReplicas is required")
	}
	if a.AutoscalingPolicy.Mode == "" {
		a.AutoscalingPolicy.Mode = "ON"
	}
	a.Target = s.groups[project+"/"+scope+"/"+target].igm.SelfLink
	a.Id, a.CreationTimestamp, a.Kind, a.Status = nextID(), now(), "compute#autoscaler", "ACTIVE"
	a.SelfLink = s.link(fmt.Sprintf("projects/%s/%s/autoscalers/%s", project, scope, a.Name))
	s.autoscalers[key] = a
	return nil
}

func (s *Server) getAutoscaler(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := req.project + "/" + req.parts[0] + "/" + req.parts[1] + "/" + req.parts[3]
	a := s.autoscalers[key]
	if a == nil {
		return nil, notFound("The resource 'projects/%s/%s/%s/autoscalers/%s' was not found", req.project, req.parts[0], req.parts[1], req.parts[3])
	}
	return a, nil
}

func (s *Server) listAutoscalers(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := req.project + "/" + req.parts[0] + "/" + req.parts[1] + "/"
	var items []*compute.Autoscaler
	for _, k := range slices.Sorted(maps.Keys(s.autoscalers)) {
		if strings.HasPrefix(k, prefix) {
			items = append(items, s.autoscalers[k])
		}
	}
	items, next, err := page(req, items)
	if req.parts[0] == "regions" {
		return &compute.RegionAutoscalerList{Items: items, NextPageToken: next}, err
	}
	return &compute.AutoscalerList{Items: items, NextPageToken: next}, err
}

// AddAutoscaler attaches an autoscaler (mode ON) to a group.
func (s *Server) AddAutoscaler(groupKey string, minReplicas, maxReplicas int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[groupKey]
	if g == nil {
		return fmt.Errorf("no group %s", groupKey)
	}
	return s.addAutoscalerLocked(g.project, g.scope, &compute.Autoscaler{
		Name: g.name, Target: g.igm.SelfLink,
		AutoscalingPolicy: &compute.AutoscalingPolicy{MinNumReplicas: minReplicas, MaxNumReplicas: maxReplicas},
	})
}

// Autoscale makes the group's autoscaler recommend size: it sets the
// group's target size, within the policy's minNumReplicas and
// maxNumReplicas, as an autoscaler in mode ON does
// (https://cloud.google.com/compute/docs/reference/rest/v1/autoscalers#AutoscalingPolicy).
// It returns the size set.
func (s *Server) Autoscale(groupKey string, size int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[groupKey]
	if g == nil {
		return 0, fmt.Errorf("no group %s", groupKey)
	}
	for _, a := range s.autoscalers {
		if a.Target != g.igm.SelfLink || a.AutoscalingPolicy.Mode == "OFF" {
			continue
		}
		p := a.AutoscalingPolicy
		size = min(max(size, p.MinNumReplicas), p.MaxNumReplicas)
		a.RecommendedSize = size
		g.igm.TargetSize = size
		s.notifyLocked()
		return size, nil
	}
	return 0, fmt.Errorf("group %s has no autoscaler in mode ON", groupKey)
}
