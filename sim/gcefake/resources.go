package gcefake

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	compute "google.golang.org/api/compute/v1"
)

// link is the URL of a resource under the endpoint, as selfLink fields
// carry it.
func (s *Server) link(path string) string { return s.Endpoint + path }

// resourceName takes the last segment of a resource URL, full
// (https://.../projects/p/global/instanceTemplates/t) or partial
// (global/instanceTemplates/t), and the project it names, if it does;
// what the API accepts wherever a request refers to another resource.
func resourceName(ref, kind string) (project, name string, ok bool) {
	i := strings.LastIndex(ref, kind+"/")
	if i < 0 {
		return "", ref, !strings.Contains(ref, "/") && ref != ""
	}
	name = ref[i+len(kind)+1:]
	if j := strings.Index(ref, "projects/"); j >= 0 {
		project, _, _ = strings.Cut(ref[j+len("projects/"):], "/")
	}
	return project, name, name != "" && !strings.Contains(name, "/")
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// RegisterImage makes an image (family may be empty) in a project.
func (s *Server) RegisterImage(project, name, family string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images[project+"/"+name] = &compute.Image{
		Name: name, Family: family, Id: nextID(), Status: "READY", CreationTimestamp: now(),
		SelfLink: s.link(fmt.Sprintf("projects/%s/global/images/%s", project, name)),
	}
}

// imageLink is the URL a template's boot disk names an image by.
func imageLink(project, name string) string {
	return fmt.Sprintf("projects/%s/global/images/%s", project, name)
}

// TemplateSpec describes an instance template to make.
type TemplateSpec struct {
	Project, Name string
	// ImageProject and Image are the boot disk's source image.
	ImageProject, Image string
	MachineType         string // default e2-standard-4
	// KubeLabels become the kube-labels metadata item (k=v,...), which the
	// fake's nodes carry as labels, as a bootstrap passes it to the kubelet.
	KubeLabels map[string]string
	// ServiceAccount is the email the instances run as, none when "";
	// Subnetwork the network interface's subnetwork
	// (projects/P/regions/R/subnetworks/S, see RegisterSubnetwork), the
	// default network's when "".
	ServiceAccount, Subnetwork string
	// ExternalIP gives the network interface an access config, an
	// ephemeral external address (compute-api.json
	// NetworkInterface.accessConfigs), which counts against the region's
	// IN_USE_ADDRESSES.
	ExternalIP bool
}

// KubeLabelsKey is the metadata key whose k=v,... list the nodes of the
// template's instances are labelled with.
const KubeLabelsKey = "kube-labels"

// CreateTemplate makes an instance template.
func (s *Server) CreateTemplate(t TemplateSpec) error {
	mt := t.MachineType
	if mt == "" {
		mt = "e2-standard-4"
	}
	var kl []string
	for _, k := range slices.Sorted(maps.Keys(t.KubeLabels)) {
		kl = append(kl, k+"="+t.KubeLabels[k])
	}
	labels := strings.Join(kl, ",")
	it := &compute.InstanceTemplate{Name: t.Name, Properties: &compute.InstanceProperties{
		MachineType: mt,
		Disks: []*compute.AttachedDisk{{
			Boot: true, AutoDelete: true, Type: "PERSISTENT",
			InitializeParams: &compute.AttachedDiskInitializeParams{SourceImage: imageLink(t.ImageProject, t.Image), DiskSizeGb: 100},
		}},
		Metadata:          &compute.Metadata{Items: []*compute.MetadataItems{{Key: KubeLabelsKey, Value: &labels}}},
		NetworkInterfaces: []*compute.NetworkInterface{{Network: "global/networks/default", Subnetwork: t.Subnetwork}},
	}}
	if t.ExternalIP {
		it.Properties.NetworkInterfaces[0].AccessConfigs = []*compute.AccessConfig{{Name: "external-nat", Type: "ONE_TO_ONE_NAT"}}
	}
	if t.ServiceAccount != "" {
		it.Properties.ServiceAccounts = []*compute.ServiceAccount{{Email: t.ServiceAccount, Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insertTemplateLocked(t.Project, it)
}

// insertTemplateLocked stores a template; instance templates are immutable
// and names unique per project
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceTemplates/insert).
func (s *Server) insertTemplateLocked(project string, it *compute.InstanceTemplate) error {
	key := project + "/" + it.Name
	switch {
	case it.Name == "":
		return invalid("instanceTemplate.name is required")
	case s.templates[key] != nil:
		return conflict("The resource 'projects/%s/global/instanceTemplates/%s' already exists", project, it.Name)
	case it.Properties == nil:
		return invalid("instanceTemplate.properties is required")
	}
	for _, d := range it.Properties.Disks {
		if d.Boot && d.InitializeParams != nil {
			if _, err := s.imageLocked(project, d.InitializeParams.SourceImage); err != nil {
				return invalid("The resource '%s' of the boot disk was not found", d.InitializeParams.SourceImage)
			}
		}
	}
	it.Id, it.CreationTimestamp, it.Kind = nextID(), now(), "compute#instanceTemplate"
	it.SelfLink = s.link(fmt.Sprintf("projects/%s/global/instanceTemplates/%s", project, it.Name))
	s.templates[key] = it
	return nil
}

// imageLocked finds an image by URL, family URL (images/family/f: the
// newest image of the family,
// https://cloud.google.com/compute/docs/reference/rest/v1/images/getFromFamily)
// or name in project.
func (s *Server) imageLocked(project, ref string) (*compute.Image, error) {
	if p, fam, ok := resourceName(ref, "images/family"); ok && strings.Contains(ref, "images/family/") {
		if p != "" {
			project = p
		}
		var best *compute.Image
		for k, im := range s.images {
			if strings.HasPrefix(k, project+"/") && im.Family == fam && (best == nil || im.Id > best.Id) {
				best = im
			}
		}
		if best == nil {
			return nil, notFound("The resource 'projects/%s/global/images/family/%s' was not found", project, fam)
		}
		return best, nil
	}
	p, name, _ := resourceName(ref, "images")
	if p != "" {
		project = p
	}
	im := s.images[project+"/"+name]
	if im == nil {
		return nil, notFound("The resource 'projects/%s/global/images/%s' was not found", project, name)
	}
	return im, nil
}

// templateImage is the boot disk's source image of a template, as a
// partial URL.
func templateImage(it *compute.InstanceTemplate) string {
	for _, d := range it.Properties.Disks {
		if d.Boot && d.InitializeParams != nil {
			return d.InitializeParams.SourceImage
		}
	}
	return ""
}

// kubeLabels reads the template's kube-labels metadata.
func kubeLabels(it *compute.InstanceTemplate) map[string]string {
	out := map[string]string{}
	if it.Properties.Metadata == nil {
		return out
	}
	for _, item := range it.Properties.Metadata.Items {
		if item.Key != KubeLabelsKey || item.Value == nil {
			continue
		}
		for kv := range strings.SplitSeq(*item.Value, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// Template returns a copy of an instance template.
func (s *Server) Template(project, name string) (*compute.InstanceTemplate, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.templates[project+"/"+name]
	if it == nil {
		return nil, false
	}
	c := *it
	return &c, true
}

// Templates lists the names of a project's instance templates, sorted.
func (s *Server) Templates(project string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, it := range s.templates {
		if strings.HasPrefix(k, project+"/") {
			out = append(out, it.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Server) listTemplates(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []*compute.InstanceTemplate
	for _, k := range slices.Sorted(maps.Keys(s.templates)) {
		if strings.HasPrefix(k, req.project+"/") {
			items = append(items, s.templates[k])
		}
	}
	items, next, err := page(req, items)
	return &compute.InstanceTemplateList{Items: items, NextPageToken: next}, err
}

func (s *Server) getTemplate(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.templates[req.project+"/"+req.parts[2]]
	if it == nil {
		return nil, notFound("The resource 'projects/%s/global/instanceTemplates/%s' was not found", req.project, req.parts[2])
	}
	return it, nil
}

// insertTemplate answers instanceTemplates.insert with a global operation,
// DONE at once: the template exists when the call returns.
func (s *Server) insertTemplate(req *request) (any, error) {
	var it compute.InstanceTemplate
	if err := decode(req, &it); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failTemplate != nil {
		op := s.opLocked(req.project, "global", "insert", s.link("projects/"+req.project+"/global/instanceTemplates/"+it.Name))
		failed := *op
		failed.Status, failed.Progress, failed.EndTime = "DONE", 100, now()
		failed.Error, failed.HttpErrorStatusCode, failed.HttpErrorMessage = s.failTemplate, http.StatusForbidden, "FORBIDDEN"
		s.ops[req.project+"/global/"+op.Name] = &failed
		if op.Status == "RUNNING" {
			return op, nil // the error shows when it is done
		}
		return &failed, nil
	}
	if err := s.insertTemplateLocked(req.project, &it); err != nil {
		return nil, err
	}
	return s.opLocked(req.project, "global", "insert", it.SelfLink), nil
}

func (s *Server) getImage(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.imageLocked(req.project, req.parts[2])
}

func (s *Server) getImageFromFamily(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.imageLocked(req.project, "images/family/"+req.parts[3])
}

// opLocked records an operation that is DONE: Compute marks the
// operations of managed instance groups DONE when the action is
// scheduled, not when the instances are created or deleted
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/deleteInstances:
// "This operation is marked as DONE when the action is scheduled even if
// the instances are still being deleted").
func (s *Server) opLocked(project, scope, opType, target string) *compute.Operation {
	name := fmt.Sprintf("operation-%d", nextID())
	op := &compute.Operation{
		Kind: "compute#operation", Name: name, Id: nextID(), OperationType: opType, TargetLink: target,
		Status: "DONE", Progress: 100, InsertTime: now(), StartTime: now(), EndTime: now(),
		SelfLink: s.link(fmt.Sprintf("projects/%s/%s/operations/%s", project, scope, name)),
	}
	switch {
	case strings.HasPrefix(scope, "zones/"):
		op.Zone = s.link(fmt.Sprintf("projects/%s/%s", project, scope))
	case strings.HasPrefix(scope, "regions/"):
		op.Region = s.link(fmt.Sprintf("projects/%s/%s", project, scope))
	}
	s.ops[project+"/"+scope+"/"+name] = op
	if s.opts.SlowOperations && scope == "global" {
		// The resource is made at once all the same: only the
		// operation's report is slow, which is what a caller sees.
		running := *op
		running.Status, running.Progress, running.EndTime = "RUNNING", 0, ""
		s.ops[project+"/"+scope+"/"+name] = &running
		return &running
	}
	return op
}

// getOperation answers get and wait (wait returns at once) of global,
// zone and region operations. A RUNNING operation (Options.SlowOperations)
// is answered so once, and DONE after.
func (s *Server) getOperation(req *request) (any, error) {
	p := req.parts
	scope, name := "global", p[2]
	if p[0] != "global" {
		scope, name = p[0]+"/"+p[1], p[3]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.ops[req.project+"/"+scope+"/"+name]
	if op == nil {
		return nil, notFound("The resource 'projects/%s/%s/operations/%s' was not found", req.project, scope, name)
	}
	if op.Status == "RUNNING" {
		done := *op
		done.Status, done.Progress, done.EndTime = "DONE", 100, now()
		s.ops[req.project+"/"+scope+"/"+name] = &done
	}
	return op, nil
}

// getInstance answers instances.get. An instance a group created carries
// the created-by metadata key naming the group, and instance-template
// naming its template, as Compute sets them
// (https://cloud.google.com/compute/docs/instance-groups/getting-info-about-migs#checking_if_a_vm_is_part_of_a_mig),
// and the metadata of the template it was created from
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceTemplates#InstanceProperties.FIELDS.metadata).
func (s *Server) getInstance(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	zone, name := req.parts[1], req.parts[3]
	in := s.instances[req.project+"/"+zone+"/"+name]
	if in == nil || in.Status == "" {
		return nil, notFound("The resource 'projects/%s/zones/%s/instances/%s' was not found", req.project, zone, name)
	}
	g := s.groups[in.Group]
	num := s.opts.ProjectNumber
	createdBy := fmt.Sprintf("projects/%d/%s/instanceGroupManagers/%s", num, g.scope, g.name)
	tmpl := fmt.Sprintf("projects/%d/global/instanceTemplates/%s", num, in.Template)
	items := []*compute.MetadataItems{{Key: "created-by", Value: &createdBy}, {Key: "instance-template", Value: &tmpl}}
	if it := s.templates[in.Project+"/"+in.Template]; it != nil && it.Properties.Metadata != nil {
		items = append(items, it.Properties.Metadata.Items...)
	}
	return &compute.Instance{
		Kind: "compute#instance", Name: in.Name, Id: in.ID, Status: in.Status,
		Zone:        s.link(fmt.Sprintf("projects/%s/zones/%s", req.project, zone)),
		SelfLink:    s.link(fmt.Sprintf("projects/%s/zones/%s/instances/%s", req.project, zone, in.Name)),
		Metadata:    &compute.Metadata{Items: items},
		MachineType: s.link(fmt.Sprintf("projects/%s/zones/%s/machineTypes/%s", req.project, zone, s.machineTypeLocked(in))),
	}, nil
}

// listInstances answers instances.list: the zone's instances in one
// page, by name, each with its creationTimestamp, the time Compute took
// the request that created it (compute-api.json Instance.creationTimestamp,
// "[Output Only] Creation timestamp in RFC3339 text format"), which a
// managed instance group's creation is (reconcile.go sets Created when
// it begins one). A VM not created yet (no status) is not listed, as
// getInstance does not find it.
func (s *Server) listInstances(req *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	zone := req.parts[1]
	out := &compute.InstanceList{Kind: "compute#instanceList", Items: []*compute.Instance{}}
	for _, in := range s.instances {
		if in.Project != req.project || in.Zone != zone || in.Status == "" {
			continue
		}
		out.Items = append(out.Items, &compute.Instance{
			Kind: "compute#instance", Name: in.Name, Id: in.ID, Status: in.Status,
			CreationTimestamp: in.Created.UTC().Format(time.RFC3339Nano),
			Zone:              s.link(fmt.Sprintf("projects/%s/zones/%s", req.project, zone)),
			SelfLink:          s.link(fmt.Sprintf("projects/%s/zones/%s/instances/%s", req.project, zone, in.Name)),
		})
	}
	slices.SortFunc(out.Items, func(a, b *compute.Instance) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// getRegion answers regions.get with the INSTANCE_GROUP_MANAGERS quota, the
// one a new group counts against, and those of instances (see
// regionQuotasLocked)
// (https://cloud.google.com/compute/docs/reference/rest/v1/regions/get;
// compute-api.json Region.quotas: "Quotas assigned to this region", each
// a Quota of metric, limit and usage).
func (s *Server) getRegion(req *request) (any, error) {
	region := req.parts[1]
	s.mu.Lock()
	defer s.mu.Unlock()
	return &compute.Region{
		Kind: "compute#region", Name: region, Status: "UP",
		SelfLink: s.link(fmt.Sprintf("projects/%s/regions/%s", req.project, region)),
		Quotas: append([]*compute.Quota{{Metric: "INSTANCE_GROUP_MANAGERS", Limit: float64(s.opts.MaxGroups), Usage: float64(s.groupsInRegionLocked(req.project, region))}},
			s.regionQuotasLocked(req.project, region)...),
	}, nil
}

// RegionOf is the region of a zone: its name less the last "-x".
func RegionOf(zone string) string {
	i := strings.LastIndex(zone, "-")
	if i < 0 {
		return zone
	}
	return zone[:i]
}
