package gcefake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	compute "google.golang.org/api/compute/v1"
)

// group is a managed instance group, zonal (scope zones/Z) or regional
// (scope regions/R).
type group struct {
	key, project, scope, name string
	regional                  bool
	zones                     []string
	igm                       compute.InstanceGroupManager
	members                   []string // instance keys, in creation order
	deleting                  bool
	// redistributing is the instance a proactive redistribution created
	// and waits for before it deletes one in the fullest zone.
	redistributing string
}

// instance is a managed instance; its VM exists while Status is set.
type instance struct {
	Instance
	key      string
	due      time.Time // when the current action ends
	busy     bool      // a callback runs for it
	launched bool      // OnLaunch succeeded for the VM that runs now
	// admitted is a creation the region's quotas hold (see
	// quotaErrorLocked): it counts against them from then on.
	admitted bool
	// lastErr is the last failed attempt to create its VM.
	lastErr *compute.ManagedInstanceLastAttemptErrorsErrors
}

// Group is a snapshot of a managed instance group.
type Group struct {
	// Key is project/zones/ZONE/NAME or project/regions/REGION/NAME.
	Key, Project, Name string
	Regional           bool
	Zones              []string
	// Template is the name of the group's instance template.
	Template   string
	TargetSize int64
	// UpdateType and Redistribution are the update policy's type and
	// instanceRedistributionType.
	UpdateType, Redistribution string
	Deleting                   bool
	Instances                  []Instance
}

// Stable reports whether the group runs its target size with no action
// under way (the API's status.isStable).
func (g Group) Stable() bool {
	if int64(len(g.Instances)) != g.TargetSize {
		return false
	}
	for _, in := range g.Instances {
		if in.Action != ActionNone {
			return false
		}
	}
	return true
}

// GroupSpec describes a group to make with CreateGroup.
type GroupSpec struct {
	Project, Name string
	// Zone makes a zonal group; Region with Zones a regional one.
	Zone, Region string
	Zones        []string
	Template     string
	Size         int64
	// UpdateType defaults to PROACTIVE and Redistribution, of a regional
	// group, to PROACTIVE, the API's defaults.
	UpdateType, Redistribution string
	// ListResults is listManagedInstancesResults: PAGINATED pages
	// listManagedInstances; default PAGELESS.
	ListResults string
}

// paginated is the listManagedInstancesResults that pages.
const paginated = "PAGINATED"

// GroupKey is the key of a zonal (region "") or regional group.
func GroupKey(project, zone, region, name string) string {
	if region != "" {
		return project + "/regions/" + region + "/" + name
	}
	return project + "/zones/" + zone + "/" + name
}

// CreateGroup makes a managed instance group and returns its key; it
// creates its instances as insert does.
func (s *Server) CreateGroup(spec GroupSpec) (string, error) {
	igm := &compute.InstanceGroupManager{
		Name: spec.Name, BaseInstanceName: spec.Name, TargetSize: spec.Size, ForceSendFields: []string{"TargetSize"},
		InstanceTemplate:            fmt.Sprintf("projects/%s/global/instanceTemplates/%s", spec.Project, spec.Template),
		UpdatePolicy:                &compute.InstanceGroupManagerUpdatePolicy{Type: spec.UpdateType, InstanceRedistributionType: spec.Redistribution},
		ListManagedInstancesResults: spec.ListResults,
	}
	scope := "zones/" + spec.Zone
	if spec.Region != "" {
		scope = "regions/" + spec.Region
		igm.DistributionPolicy = &compute.DistributionPolicy{}
		for _, z := range spec.Zones {
			igm.DistributionPolicy.Zones = append(igm.DistributionPolicy.Zones, &compute.DistributionPolicyZoneConfiguration{Zone: "zones/" + z})
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.insertGroupLocked(spec.Project, scope, igm)
	if err != nil {
		return "", err
	}
	return g.key, nil
}

// insertGroupLocked makes a group from an insert request: the template
// must exist, the name be free in the scope, a regional group gets every
// zone of distributionPolicy.zones, and the update policy the API's
// defaults (type PROACTIVE; instanceRedistributionType PROACTIVE for a
// regional group)
// (https://cloud.google.com/compute/docs/reference/rest/v1/regionInstanceGroupManagers/insert).
func (s *Server) insertGroupLocked(project, scope string, igm *compute.InstanceGroupManager) (*group, error) {
	kind, where, _ := strings.Cut(scope, "/")
	key := project + "/" + scope + "/" + igm.Name
	switch {
	case igm.Name == "":
		return nil, invalid("instanceGroupManager.name is required")
	case s.groups[key] != nil:
		return nil, conflict("The resource 'projects/%s/%s/instanceGroupManagers/%s' already exists", project, scope, igm.Name)
	case igm.TargetSize < 0:
		return nil, invalid("targetSize must be at least 0")
	}
	if err := validInsert(igm); err != nil {
		return nil, err
	}
	region := where
	if kind == "zones" {
		region = RegionOf(where)
	}
	if s.groupsInRegionLocked(project, region) >= s.opts.MaxGroups {
		return nil, &apiError{403, "quotaExceeded", fmt.Sprintf("Quota 'INSTANCE_GROUP_MANAGERS' exceeded. Limit: %d in region %s.", s.opts.MaxGroups, region)}
	}
	if len(igm.Versions) > 0 {
		igm.InstanceTemplate = igm.Versions[0].InstanceTemplate
	}
	if _, err := s.templateLocked(project, igm.InstanceTemplate); err != nil {
		return nil, invalid("instance template %q: %s", igm.InstanceTemplate, err)
	}
	g := &group{key: key, project: project, scope: scope, name: igm.Name, regional: kind == "regions", igm: *igm}
	if g.regional {
		if igm.DistributionPolicy == nil || len(igm.DistributionPolicy.Zones) == 0 {
			return nil, invalid("distributionPolicy.zones is required here: the fake knows no region's zones")
		}
		for _, z := range igm.DistributionPolicy.Zones {
			_, zone, _ := resourceName(z.Zone, "zones")
			g.zones = append(g.zones, zone)
		}
	} else {
		g.zones = []string{where}
	}
	g.defaultPolicy()
	if err := zoneRules(len(g.zones), g.regional, g.igm.UpdatePolicy); err != nil {
		return nil, err
	}
	g.igm.BaseInstanceName = cmpOr(g.igm.BaseInstanceName, g.name)
	g.igm.Id, g.igm.CreationTimestamp, g.igm.Kind = nextID(), now(), "compute#instanceGroupManager"
	g.igm.SelfLink = s.link(fmt.Sprintf("projects/%s/%s/instanceGroupManagers/%s", project, scope, g.name))
	s.groups[key] = g
	s.notifyLocked()
	return g, nil
}

// validInsert checks what compute-api.json states of an inserted group's
// names, listManagedInstancesResults (its enum) and update policy.
func validInsert(igm *compute.InstanceGroupManager) error {
	if err := validNames(igm); err != nil {
		return err
	}
	switch igm.ListManagedInstancesResults {
	case "", "PAGELESS", paginated:
	default:
		return invalid("Invalid value for field 'resource.listManagedInstancesResults': '%s'", igm.ListManagedInstancesResults)
	}
	if up := igm.UpdatePolicy; up != nil {
		return validPolicy(igm.TargetSize, up)
	}
	return nil
}

// defaultPolicy gives the group the API's update policy defaults: type
// PROACTIVE, and instanceRedistributionType PROACTIVE for a regional group.
func (g *group) defaultPolicy() {
	up := g.igm.UpdatePolicy
	if up == nil {
		up = &compute.InstanceGroupManagerUpdatePolicy{}
		g.igm.UpdatePolicy = up
	}
	if up.Type == "" {
		up.Type = Proactive
	}
	if up.InstanceRedistributionType == "" && g.regional {
		up.InstanceRedistributionType = Proactive
	}
}

// The name and baseInstanceName rules of compute-api.json
// (InstanceGroupManager): the name "1-63 characters long, and comply
// with RFC1035" (its pattern), the base instance name "The maximum
// character length is 58 and the name must comply with RFC1035 format",
// with the @pattern its description states (the "-###" form asks for
// sequential numbers).
var (
	groupNamePattern = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)
	baseNamePattern  = regexp.MustCompile(`^[a-z](([-a-z0-9]{0,57})|([-a-z0-9]{0,51}-#{1,10}(\[[0-9]{1,10}\])?))$`)
)

// validNames refuses an insert whose name or baseInstanceName (its name
// when unset) breaks the document's rules, as the API does with 400.
func validNames(igm *compute.InstanceGroupManager) error {
	if !groupNamePattern.MatchString(igm.Name) {
		return invalid("Invalid value for field 'resource.name': '%s'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", igm.Name)
	}
	if base := cmpOr(igm.BaseInstanceName, igm.Name); !baseNamePattern.MatchString(base) {
		return invalid("Invalid value for field 'resource.baseInstanceName': '%s'. The maximum character length is 58 and the name must comply with RFC1035 format", base)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Server) groupsInRegionLocked(project, region string) int {
	n := 0
	for _, g := range s.groups {
		_, where, _ := strings.Cut(g.scope, "/")
		if g.project == project && (g.regional && where == region || !g.regional && RegionOf(where) == region) {
			n++
		}
	}
	return n
}

// templateLocked finds a template by URL or name.
func (s *Server) templateLocked(project, ref string) (*compute.InstanceTemplate, error) {
	p, name, ok := resourceName(ref, "instanceTemplates")
	if !ok {
		return nil, notFound("no instance template in %q", ref)
	}
	if p != "" {
		project = p
	}
	it := s.templates[project+"/"+name]
	if it == nil {
		return nil, notFound("The resource 'projects/%s/global/instanceTemplates/%s' was not found", project, name)
	}
	return it, nil
}

// Group returns a snapshot of a group by key.
func (s *Server) Group(key string) (Group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groupLocked(key)
}

func (s *Server) groupLocked(key string) (Group, bool) {
	g := s.groups[key]
	if g == nil {
		return Group{}, false
	}
	_, tmpl, _ := resourceName(g.igm.InstanceTemplate, "instanceTemplates")
	out := Group{
		Key: key, Project: g.project, Name: g.name, Regional: g.regional, Zones: slices.Clone(g.zones),
		Template: tmpl, TargetSize: g.igm.TargetSize, Deleting: g.deleting,
		UpdateType: g.igm.UpdatePolicy.Type, Redistribution: g.igm.UpdatePolicy.InstanceRedistributionType,
	}
	for _, k := range g.members {
		in := s.instances[k].Instance
		in.Labels, in.LastError = maps.Clone(in.Labels), s.instances[k].lastErr
		out.Instances = append(out.Instances, in)
	}
	return out, true
}

// GroupKeys lists the keys of a project's groups, sorted.
func (s *Server) GroupKeys(project string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.groups {
		if strings.HasPrefix(k, project+"/") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// scopedGroup finds the group a call names: parts are
// (zones|regions)/{scope}/instanceGroupManagers/{name}/....
func (s *Server) scopedGroup(req *request) (*group, error) {
	p := req.parts
	g := s.groups[req.project+"/"+p[0]+"/"+p[1]+"/"+p[3]]
	if g == nil {
		return nil, notFound("The resource 'projects/%s/%s/%s/instanceGroupManagers/%s' was not found", req.project, p[0], p[1], p[3])
	}
	return g, nil
}

// view is the group as get and list answer: with currentActions counted
// from its instances and status.isStable
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/get).
func (s *Server) view(g *group) *compute.InstanceGroupManager {
	igm := g.igm
	up := *g.igm.UpdatePolicy
	up.MaxSurge, up.MaxUnavailable = calculated(up.MaxSurge, g.igm.TargetSize), calculated(up.MaxUnavailable, g.igm.TargetSize)
	igm.UpdatePolicy = &up
	igm.Versions = []*compute.InstanceGroupManagerVersion{{InstanceTemplate: g.igm.InstanceTemplate}}
	if g.regional {
		igm.Region = s.link(g.project + "/" + g.scope)
	} else {
		igm.Zone = s.link(g.project + "/" + g.scope)
	}
	acts := &compute.InstanceGroupManagerActionsSummary{}
	for _, k := range g.members {
		switch s.instances[k].Action {
		case ActionCreating:
			acts.Creating++
		case ActionRecreating:
			acts.Recreating++
		case ActionDeleting:
			acts.Deleting++
		default:
			acts.None++
		}
	}
	igm.CurrentActions = acts
	igm.InstanceGroup = s.instanceGroupLink(g)
	snap, _ := s.groupLocked(g.key)
	igm.Status = &compute.InstanceGroupManagerStatus{IsStable: snap.Stable(), ForceSendFields: []string{"IsStable"}}
	return &igm
}

// calculated is v with its output-only calculated value, "percent/100 *
// targetSize" for a percent, "rounded" where there is a remainder, and
// the fixed value for a fixed one (compute-api.json, FixedOrPercent).
func calculated(v *compute.FixedOrPercent, size int64) *compute.FixedOrPercent {
	if v == nil {
		return nil
	}
	out := *v
	out.Calculated = v.Fixed
	if v.Percent > 0 {
		out.Calculated = (v.Percent*size + 50) / 100
	}
	return &out
}

func (s *Server) getGroup(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.scopedGroup(req)
	if err != nil {
		return nil, err
	}
	return s.view(g), nil
}

func (s *Server) listGroups(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := req.project + "/" + req.parts[0] + "/" + req.parts[1] + "/"
	var items []*compute.InstanceGroupManager
	for _, k := range slices.Sorted(maps.Keys(s.groups)) {
		if strings.HasPrefix(k, prefix) {
			items = append(items, s.view(s.groups[k]))
		}
	}
	items, next, err := page(req, items)
	if req.parts[0] == "regions" {
		return &compute.RegionInstanceGroupManagerList{Items: items, NextPageToken: next}, err
	}
	return &compute.InstanceGroupManagerList{Items: items, NextPageToken: next}, err
}

func (s *Server) insertGroup(req *request) (any, error) {
	var igm compute.InstanceGroupManager
	if err := decode(req, &igm); err != nil {
		return nil, err
	}
	scope := req.parts[0] + "/" + req.parts[1]
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := igm.InstanceTemplate
	if len(igm.Versions) > 0 {
		ref = igm.Versions[0].InstanceTemplate
	}
	if err := s.mayLaunchLocked(req.project, ref); err != nil {
		return nil, err
	}
	g, err := s.insertGroupLocked(req.project, scope, &igm)
	if err != nil {
		return nil, err
	}
	return s.opLocked(req.project, scope, "insert", g.igm.SelfLink), nil
}

// deleteGroup deletes the group and all its instances; the group goes once
// they are gone
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/delete).
func (s *Server) deleteGroup(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.scopedGroup(req)
	if err != nil {
		return nil, err
	}
	if bs := s.usedByLocked(g); bs != "" {
		// compute-api.json, instanceGroupManagers.delete: "the
		// instance group must not belong to a backend service".
		return nil, &apiError{http.StatusBadRequest, "resourceInUseByAnotherResource",
			fmt.Sprintf("The instance_group resource '%s' is already being used by '%s'", s.instanceGroupLink(g), bs)}
	}
	g.deleting, g.igm.TargetSize = true, 0
	for _, k := range g.members {
		s.deleteLocked(s.instances[k])
	}
	s.notifyLocked()
	return s.opLocked(g.project, g.scope, "delete", g.igm.SelfLink), nil
}

// resizeGroup sets the target size; the group then creates or deletes
// instances to meet it
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/resize).
func (s *Server) resizeGroup(req *request) (any, error) {
	size, err := strconv.ParseInt(req.r.URL.Query().Get("size"), 10, 64)
	if err != nil || size < 0 {
		return nil, invalid("Invalid value for field 'size': %q", req.r.URL.Query().Get("size"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.scopedGroup(req)
	if err != nil {
		return nil, err
	}
	g.igm.TargetSize = size
	s.notifyLocked()
	return s.opLocked(g.project, g.scope, "compute.instanceGroupManagers.resize", g.igm.SelfLink), nil
}

// setGroupTemplate points the group at a template for the instances it
// creates from now on; existing ones change only through a recreate or a
// PROACTIVE update policy
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/setInstanceTemplate).
func (s *Server) setGroupTemplate(req *request) (any, error) {
	var body compute.InstanceGroupManagersSetInstanceTemplateRequest
	if err := decode(req, &body); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.scopedGroup(req)
	if err != nil {
		return nil, err
	}
	if _, err := s.templateLocked(g.project, body.InstanceTemplate); err != nil {
		return nil, err
	}
	if err := s.mayLaunchLocked(g.project, body.InstanceTemplate); err != nil {
		return nil, err
	}
	g.igm.InstanceTemplate = body.InstanceTemplate
	s.notifyLocked()
	return s.opLocked(g.project, g.scope, "compute.instanceGroupManagers.setInstanceTemplate", g.igm.SelfLink), nil
}

// patchGroup applies a JSON merge patch: the fields it carries replace the
// group's, updatePolicy field by field
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/patch).
// Only targetSize, instanceTemplate, versions and updatePolicy are taken.
func (s *Server) patchGroup(req *request) (any, error) {
	var raw map[string]json.RawMessage
	if err := decode(req, &raw); err != nil {
		return nil, err
	}
	var body compute.InstanceGroupManager
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, invalid("invalid patch: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.scopedGroup(req)
	if err != nil {
		return nil, err
	}
	if err := s.patchLocked(g, raw, &body); err != nil {
		return nil, err
	}
	s.notifyLocked()
	return s.opLocked(g.project, g.scope, "compute.instanceGroupManagers.patch", g.igm.SelfLink), nil
}

func (s *Server) patchLocked(g *group, raw map[string]json.RawMessage, body *compute.InstanceGroupManager) error {
	if _, ok := raw["versions"]; ok && len(body.Versions) > 0 {
		body.InstanceTemplate = body.Versions[0].InstanceTemplate
	}
	if body.InstanceTemplate != "" && body.InstanceTemplate != g.igm.InstanceTemplate {
		if _, err := s.templateLocked(g.project, body.InstanceTemplate); err != nil {
			return err
		}
		if err := s.mayLaunchLocked(g.project, body.InstanceTemplate); err != nil {
			return err
		}
	}
	size := g.igm.TargetSize
	if _, ok := raw["targetSize"]; ok {
		size = body.TargetSize
	}
	policy := *g.igm.UpdatePolicy
	if up := body.UpdatePolicy; up != nil {
		if err := validPolicy(size, up); err != nil {
			return err
		}
		mergePolicy(&policy, up)
		if err := zoneRules(len(g.zones), g.regional, &policy); err != nil {
			return err
		}
	}
	// Refused or taken whole, as a patch is.
	g.igm.InstanceTemplate = cmpOr(body.InstanceTemplate, g.igm.InstanceTemplate)
	g.igm.TargetSize, *g.igm.UpdatePolicy = size, policy
	return nil
}

// mergePolicy applies a patch's update policy field by field.
func mergePolicy(cur, up *compute.InstanceGroupManagerUpdatePolicy) {
	cur.Type = cmpOr(up.Type, cur.Type)
	cur.InstanceRedistributionType = cmpOr(up.InstanceRedistributionType, cur.InstanceRedistributionType)
	cur.MinimalAction = cmpOr(up.MinimalAction, cur.MinimalAction)
	cur.ReplacementMethod = cmpOr(up.ReplacementMethod, cur.ReplacementMethod)
	if up.MaxSurge != nil {
		cur.MaxSurge = up.MaxSurge
	}
	if up.MaxUnavailable != nil {
		cur.MaxUnavailable = up.MaxUnavailable
	}
}

// zoneRules are two rules of the MIG update docs that compute-api.json
// does not state, refused with Compute's own 400 messages
// (https://cloud.google.com/compute/docs/instance-groups/rolling-out-updates-to-managed-instance-groups):
// a regional group's fixed maxSurge or maxUnavailable "must be at least
// equal to the number of zones" unless 0 (#max_surge, #max_unavailable),
// and replacementMethod RECREATE needs maxSurge 0 (#replacement_method).
// An unset maxSurge is the default, the number of zones (1 for a zonal
// group), so RECREATE needs it set.
func zoneRules(zones int, regional bool, up *compute.InstanceGroupManagerUpdatePolicy) error {
	if up.ReplacementMethod == "RECREATE" && !zero(up.MaxSurge) {
		return invalid("Invalid value for field 'resource.updatePolicy.maxSurge': maxSurge must be equal to 0 when replacement method is set to RECREATE")
	}
	if !regional {
		return nil
	}
	for field, v := range map[string]*compute.FixedOrPercent{"maxSurge": up.MaxSurge, "maxUnavailable": up.MaxUnavailable} {
		if v != nil && v.Percent == 0 && v.Fixed > 0 && v.Fixed < int64(zones) {
			return invalid("Invalid value for field 'resource.updatePolicy.%s.fixed': %d. Fixed updatePolicy.%s for regional managed instance group has to be either 0 or at least equal to the number of zones", field, v.Fixed, field)
		}
	}
	return nil
}

// validPolicy checks the update policy values the API takes: type
// PROACTIVE or OPPORTUNISTIC, instanceRedistributionType PROACTIVE or NONE
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers#InstanceGroupManagerUpdatePolicy),
// and maxSurge and maxUnavailable as compute-api.json states them
// (InstanceGroupManagerUpdatePolicy, FixedOrPercent): "a fixed number
// or, if the group has 10 or more instances, a percentage", a percent
// "between 0 to 100%", and "At least one of either maxSurge or
// maxUnavailable must be greater than 0". size is the group's target size.
func validPolicy(size int64, up *compute.InstanceGroupManagerUpdatePolicy) error {
	switch up.Type {
	case "", Proactive, Opportunistic:
	default:
		return invalid("Invalid value for field 'resource.updatePolicy.type': %q", up.Type)
	}
	switch up.InstanceRedistributionType {
	case "", Proactive, NoRedistrib:
	default:
		return invalid("Invalid value for field 'resource.updatePolicy.instanceRedistributionType': %q", up.InstanceRedistributionType)
	}
	for field, v := range map[string]*compute.FixedOrPercent{"maxSurge": up.MaxSurge, "maxUnavailable": up.MaxUnavailable} {
		switch {
		case v == nil:
		case v.Percent < 0 || v.Percent > 100 || v.Fixed < 0:
			return invalid("Invalid value for field 'resource.updatePolicy.%s': out of range", field)
		case v.Percent > 0 && size < 10:
			return invalid("Invalid value for field 'resource.updatePolicy.%s.percent': %d. Percent values can be used only for managed instance groups with 10 or more instances; the group's target size is %d", field, v.Percent, size)
		}
	}
	if zero(up.MaxSurge) && zero(up.MaxUnavailable) {
		return invalid("Invalid value for field 'resource.updatePolicy': at least one of maxSurge or maxUnavailable must be greater than 0")
	}
	return nil
}

// zero reports whether v is set, to a fixed 0 (unset is the default,
// the number of zones).
func zero(v *compute.FixedOrPercent) bool {
	return v != nil && v.Fixed == 0 && v.Percent == 0
}

// instancesOf resolves the instance URLs of a deleteInstances or
// recreateInstances request to members of the group; one that is not a
// member fails the call
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/deleteInstances).
func (s *Server) instancesOf(g *group, urls []string) ([]*instance, error) {
	var out []*instance
	for _, u := range urls {
		p, name, _ := resourceName(u, "instances")
		_, zone, _ := resourceName(strings.TrimSuffix(u, "/instances/"+name), "zones")
		if p == "" {
			p = g.project
		}
		in := s.instances[p+"/"+zone+"/"+name]
		if in == nil || in.Group != g.key {
			return nil, invalid("The instance '%s' is not a member of the group '%s'", u, g.name)
		}
		out = append(out, in)
	}
	return out, nil
}

type instancesRequest struct {
	Instances []string `json:"instances"`
}

// onInstances answers a call that acts on instances of a group
// (deleteInstances, recreateInstances): act runs on them under the lock,
// and the operation, of type opType, is DONE at once.
func (s *Server) onInstances(req *request, opType string, act func(*group, []*instance)) (any, error) {
	var body instancesRequest
	if err := decode(req, &body); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.scopedGroup(req)
	if err != nil {
		return nil, err
	}
	ins, err := s.instancesOf(g, body.Instances)
	if err != nil {
		return nil, err
	}
	act(g, ins)
	s.notifyLocked()
	return s.opLocked(g.project, g.scope, opType, g.igm.SelfLink), nil
}

// deleteInstances deletes the named instances and lowers the target size
// by their number at once; the operation is DONE before they are gone
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/deleteInstances).
// An instance being deleted already is not counted twice.
func (s *Server) deleteInstances(req *request) (any, error) {
	return s.onInstances(req, "compute.instanceGroupManagers.deleteInstances", func(g *group, ins []*instance) {
		for _, in := range ins {
			if in.Action != ActionDeleting {
				g.igm.TargetSize--
				s.deleteLocked(in)
			}
		}
	})
}

// recreateInstances deletes the named instances' VMs and creates them
// again, under the same names, from the group's current template; the
// target size is unchanged and the operation DONE at once
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/recreateInstances).
func (s *Server) recreateInstances(req *request) (any, error) {
	return s.onInstances(req, "compute.instanceGroupManagers.recreateInstances", func(g *group, ins []*instance) {
		for _, in := range ins {
			s.recreateLocked(g, in)
		}
	})
}

// recreateLocked recreates an instance's VM from the group's template,
// unless it is being deleted.
func (s *Server) recreateLocked(g *group, in *instance) {
	if in.Action == ActionDeleting {
		return
	}
	_, tmpl, _ := resourceName(g.igm.InstanceTemplate, "instanceTemplates")
	in.Action, in.Status, in.Intended = ActionRecreating, StatusStopping, tmpl
	in.due = time.Now().Add(max(s.opts.LaunchDelay, 0))
	s.logf("gcefake: %s: recreating %s from %s", g.name, in.Name, tmpl)
}

// Preempt stops an instance's VM as a Spot VM's preemption does; its
// group recreates it, under its name and from the group's template, as a
// managed instance group repairs a VM that stopped of no action of its
// own (https://cloud.google.com/compute/docs/instance-groups/autohealing-instances-in-migs#repairing_vms)
// and applies an OPPORTUNISTIC update to the VMs it recreates
// (https://cloud.google.com/compute/docs/instance-groups/updating-migs#opportunistic_updates).
func (s *Server) Preempt(project, zone, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[project+"/"+zone+"/"+name]
	if in == nil || s.groups[in.Group] == nil {
		return fmt.Errorf("no managed instance %s/%s/%s", project, zone, name)
	}
	s.recreateLocked(s.groups[in.Group], in)
	s.notifyLocked()
	return nil
}

// listManagedInstances lists the group's instances with their current
// action, status and intended version; instanceStatus and id are empty
// while no VM exists yet
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/listManagedInstances).
func (s *Server) listManagedInstances(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.scopedGroup(req)
	if err != nil {
		return nil, err
	}
	var items []*compute.ManagedInstance
	for _, k := range g.members {
		in := s.instances[k]
		mi := &compute.ManagedInstance{
			Name: in.Name, CurrentAction: in.Action, InstanceStatus: in.Status,
			Instance: s.link(fmt.Sprintf("projects/%s/zones/%s/instances/%s", in.Project, in.Zone, in.Name)),
			Version:  &compute.ManagedInstanceVersion{InstanceTemplate: s.link(fmt.Sprintf("projects/%s/global/instanceTemplates/%s", in.Project, in.Intended))},
		}
		if in.Status != "" {
			mi.Id = in.ID
		}
		mi.LastAttempt = lastAttempt(in)
		items = append(items, mi)
	}
	// compute-api.json, InstanceGroupManager.listManagedInstancesResults:
	// PAGELESS, the default, ignores maxResults and pageToken and answers
	// every instance; PAGINATED respects them.
	next := ""
	if g.igm.ListManagedInstancesResults == paginated {
		items, next, err = page(req, items)
	}
	if g.regional {
		return &compute.RegionInstanceGroupManagersListInstancesResponse{ManagedInstances: items, NextPageToken: next}, err
	}
	return &compute.InstanceGroupManagersListManagedInstancesResponse{ManagedInstances: items, NextPageToken: next}, err
}
