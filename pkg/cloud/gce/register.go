package gce

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Name is what --provider takes for Compute Engine managed instance
// groups.
const Name = "gce"

// The flags that set the target and the group, as messages name them.
const (
	flagImage    = "--image"
	flagTemplate = "--instance-template"
	flagGroup    = "--mig"
)

// gkeNodePoolLabel marks the nodes of a GKE node pool.
const gkeNodePoolLabel = "cloud.google.com/gke-nodepool"

func init() { cloud.Register(gceCloud{}) }

// gceCloud is the provider "gce" as planning and running see it.
type gceCloud struct{}

func (gceCloud) Name() string { return Name }

// Owns reports whether a provider ID names a Compute Engine instance.
func (gceCloud) Owns(providerID string) bool {
	_, _, _, ok := InstanceFromProviderID(providerID)
	return ok
}

// Help is the --provider help of gce.
func (gceCloud) Help() string {
	return "recreate the instance; its managed instance group replaces it"
}

// BindFlags binds the flags of the gce provider to the neutral target.
func (gceCloud) BindFlags(f *cloud.Flags) {
	t := f.Target()
	f.String(&t.Image, strings.TrimPrefix(flagImage, "--"), "Compute Engine: upgrade to this image: run creates an instance template copied from the group's with only the boot disk image changed")
	f.String(&t.Version, strings.TrimPrefix(flagTemplate, "--"), "Compute Engine: upgrade to this existing instance template (a name or projects/PROJECT/global/instanceTemplates/NAME)")
	f.String(&t.Group, strings.TrimPrefix(flagGroup, "--"), "Compute Engine: the managed instance groups of the node group, comma-separated names or URLs (default: found from the nodes' instances)")
}

// Validate checks the image, template and group flags without calling
// Compute Engine.
func (gceCloud) Validate(t plan.CloudTarget) error {
	switch {
	case t.Image != "" && t.Version != "":
		return inputErrorf("%s and %s cannot be used together", flagImage, flagTemplate)
	case t.Image != "" && !ValidImage(t.Image):
		return inputErrorf("invalid %s %q: want an image name, or projects/PROJECT/global/images/NAME or .../images/family/FAMILY", flagImage, t.Image)
	case t.Version != "" && !ValidTemplate(t.Version):
		return inputErrorf("invalid %s %q: want an instance template name or projects/PROJECT/global/instanceTemplates/NAME", flagTemplate, t.Version)
	}
	for g := range strings.SplitSeq(t.Group, ",") {
		if _, ok := ParseMIG(g); g != "" && !ok && !namePattern.MatchString(g) {
			return inputErrorf("invalid %s %q: want managed instance group names, comma-separated, or their URLs", flagGroup, g)
		}
	}
	return nil
}

// nodeInstances are the nodes' instances, by name, with their zones, all
// of one project.
func nodeInstances(nodes []corev1.Node) (project string, zoneOf map[string]string, err error) {
	zoneOf = map[string]string{}
	for i := range nodes {
		p, zone, name, ok := InstanceFromProviderID(nodes[i].Spec.ProviderID)
		if !ok {
			continue
		}
		if project != "" && p != project {
			return "", nil, inputErrorf("the nodes' instances are in projects %q and %q; narrow the nodes with --selector", project, p)
		}
		project, zoneOf[name] = p, zone
	}
	if project == "" {
		return "", nil, inputErrorf("the nodes have no gce:// provider IDs to find their managed instance groups from; use %s", flagGroup)
	}
	return project, zoneOf, nil
}

// Open finds the nodes' managed instance groups and the target template.
// It only reads.
func (gceCloud) Open(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	// GKE upgrades its node pools itself: their instance groups are not
	// to be changed behind its back.
	for i := range nodes {
		if pool := nodes[i].Labels[gkeNodePoolLabel]; pool != "" {
			return nil, nil, &Error{Msg: fmt.Sprintf("node %q belongs to GKE node pool %q, which GKE upgrades itself; use --provider gke", nodes[i].Name, pool), Err: cloud.ErrManaged, IsInput: true}
		}
	}
	project, zoneOf, err := nodeInstances(nodes)
	if err != nil {
		return nil, nil, err
	}
	p, err := New(ctx, project)
	if err != nil {
		return nil, nil, err
	}
	migs, err := p.findMIGs(ctx, zoneOf, t)
	if err != nil {
		return nil, nil, err
	}
	ng := &NodeGroup{API: p, Client: client, MIGs: migs, Image: t.Image, Template: t.Version, strategy: t.Strategy}
	cg, err := ng.open(ctx, nodes)
	if err != nil {
		return nil, nil, err
	}
	if len(migs) == 1 && migs[0].Regional() {
		return cg, RegionalNodeGroup{ng}, nil
	}
	return cg, ng, nil
}

// findMIGs finds the groups the group flag names, or else those of the
// nodes' instances.
func (p *Client) findMIGs(ctx context.Context, zoneOf map[string]string, t plan.CloudTarget) ([]MIG, error) {
	if t.Group != "" {
		return p.namedMIGs(ctx, zoneOf, t.Group)
	}
	migs, err := p.migsOfInstances(ctx, zoneOf)
	if err != nil {
		return nil, err
	}
	// A given green may be several groups, as the group flag names them.
	exclude := strings.Split(strings.Join(t.Exclude, ","), ",")
	migs = slices.DeleteFunc(migs, func(m MIG) bool { return slices.Contains(exclude, m.Name) })
	return migs, checkOneGroup(migs)
}

// checkOneGroup refuses groups that are not one node group: several
// zonal groups, one per zone (kOps), are; anything else is several.
func checkOneGroup(migs []MIG) error {
	if len(migs) == 0 {
		return &Error{Msg: fmt.Sprintf("the nodes' instances belong to no managed instance group; use %s", flagGroup), Err: cloud.ErrNoGroup, IsInput: true}
	}
	zones := map[string]bool{}
	for _, m := range migs {
		if len(migs) > 1 && (m.Regional() || zones[m.Zone]) {
			names := make([]string, len(migs))
			for i, m := range migs {
				names[i] = fmt.Sprintf("%q", m.String())
			}
			return inputErrorf("the nodes' instances belong to %d managed instance groups (%s), not one per zone; use %s or narrow the nodes with --selector", len(migs), strings.Join(names, ", "), flagGroup)
		}
		zones[m.Zone] = true
	}
	return nil
}

// migsOfInstances reads the created-by metadata of one instance, lists the
// group it names, and goes on with the instances that group does not
// hold: two calls per group, whatever the number of nodes. An instance
// gone (an abort or a scale-in deleted it, its Node not yet) says nothing
// where a group found covers its zone; elsewhere it may be a zone's only
// node, whose group would be missed, so it is refused.
func (p *Client) migsOfInstances(ctx context.Context, zoneOf map[string]string) ([]MIG, error) {
	left := map[string]bool{}
	for name := range zoneOf {
		left[name] = true
	}
	var migs []MIG
	var none []string
	var gone []instanceIn
	for len(left) > 0 {
		name := slices.Min(slices.Collect(mapsKeys(left)))
		m, ok, err := p.createdBy(ctx, zoneOf[name], name)
		delete(left, name)
		if errors.Is(err, errInstanceGone) {
			gone = append(gone, instanceIn{zoneOf[name], err})
			continue
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			none = append(none, name)
			continue
		}
		mis, err := p.managedInstances(ctx, m)
		if err != nil {
			return nil, err
		}
		for _, mi := range mis {
			delete(left, mi.Name)
		}
		migs = append(migs, m)
	}
	if len(none) > 0 && len(migs) > 0 {
		return nil, inputErrorf("instances %s belong to no managed instance group, the others' to %q; narrow the nodes with --selector", strings.Join(none, ", "), migs[0].String())
	}
	for _, in := range gone {
		if !coversZone(migs, in.zone) {
			return nil, in.err
		}
	}
	return migs, nil
}

// instanceIn is an instance not found in its zone, and why.
type instanceIn struct {
	zone string
	err  error
}

// coversZone reports whether one of migs launches in zone.
func coversZone(migs []MIG, zone string) bool {
	return slices.ContainsFunc(migs, func(m MIG) bool { return m.Zone == zone || (m.Regional() && RegionOf(zone) == m.Region) })
}

// errInstanceGone is behind an instance of a node that Compute does not
// know (deleted, or another project's).
var errInstanceGone = errors.New("instance not found")

// createdBy reads the group an instance's created-by metadata names, as
// Compute sets it on the instances a managed instance group creates
// (https://cloud.google.com/compute/docs/instance-groups/getting-info-about-migs#checking_if_a_vm_is_part_of_a_mig).
func (p *Client) createdBy(ctx context.Context, zone, name string) (MIG, bool, error) {
	in, err := p.svc.Instances.Get(p.project, zone, name).Context(ctx).Do()
	if isCode(err, http.StatusNotFound) {
		return MIG{}, false, &Error{Msg: fmt.Sprintf("instance %q not found in project %q, zone %q; check the credentials' project and the nodes' provider IDs, or wait until the node of a deleted instance is gone", name, p.project, zone), Err: errors.Join(errInstanceGone, err), IsInput: true}
	}
	if err != nil {
		return MIG{}, false, wrap(err, "get instance %q in zone %q", name, zone)
	}
	if in.Metadata != nil {
		for _, it := range in.Metadata.Items {
			if it.Key == "created-by" && it.Value != nil {
				if m, ok := ParseMIG(*it.Value); ok {
					m.Project = p.project // created-by names it by number
					return m, true, nil
				}
			}
		}
	}
	return MIG{}, false, nil
}

// namedMIGs resolves the group flag: URLs, or names looked up as a
// regional group in the nodes' region, else zonal ones in their zones.
func (p *Client) namedMIGs(ctx context.Context, zoneOf map[string]string, flag string) ([]MIG, error) {
	var zones []string
	for _, z := range zoneOf {
		if !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	slices.Sort(zones)
	var out []MIG
	for g := range strings.SplitSeq(flag, ",") {
		m, err := p.namedMIG(ctx, zones, g)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, checkOneGroup(out)
}

func (p *Client) namedMIG(ctx context.Context, zones []string, g string) (MIG, error) {
	if m, ok := ParseMIG(g); ok {
		if m.Project != p.project {
			return MIG{}, inputErrorf("managed instance group %q is in project %q, the nodes' instances in project %q; check %s", g, m.Project, p.project, flagGroup)
		}
		igm, err := p.getMIG(ctx, m)
		if err == nil && igm == nil {
			err = groupNotFoundf("managed instance group %q not found; check %s", g, flagGroup)
		}
		return m, err
	}
	candidates := []MIG{{Project: p.project, Region: RegionOf(zones[0]), Name: g}}
	for _, z := range zones {
		candidates = append(candidates, MIG{Project: p.project, Zone: z, Name: g})
	}
	for _, m := range candidates {
		igm, err := p.getMIG(ctx, m)
		if err != nil || igm != nil {
			return m, err
		}
	}
	return MIG{}, groupNotFoundf("managed instance group %q not found in region %q or zones %s of project %q; check %s", g, RegionOf(zones[0]), strings.Join(zones, ", "), p.project, flagGroup)
}

// open reads the groups into the plan's view and resolves the target.
func (n *NodeGroup) open(ctx context.Context, nodes []corev1.Node) (*plan.CloudGroup, error) {
	igms, err := n.igms(ctx, n.MIGs)
	if err != nil {
		return nil, err
	}
	cur, err := templateName(n.MIGs[0], igms[0].InstanceTemplate)
	if err != nil {
		return nil, err
	}
	target, err := n.API.ResolveTarget(ctx, cur, n.Image, n.Template)
	if err != nil {
		return nil, err
	}
	if err := n.checkTemplates(igms, cur, target); err != nil {
		return nil, err
	}
	if err := n.checkBackendServices(ctx, igms, n.strategy); err != nil {
		return nil, err
	}
	byName, _, err := n.managed(ctx, n.MIGs)
	if err != nil {
		return nil, err
	}
	byNode, unjoined, err := joinNodes(ctx, n.API, byName, nodes)
	if err != nil {
		return nil, err
	}
	cg := &plan.CloudGroup{
		GroupID: plan.GroupID{
			Provider:     Name,
			Region:       regionOf(n.MIGs),
			Group:        n.GroupName(),
			GroupKind:    groupKind(n.MIGs),
			Template:     n.API.project,
			TemplateKind: "instance template in project",
			MachineKind:  "instance",
		},
		Launches: plan.Launches{
			CurrentVersion: cur,
			TargetVersion:  target.Template,
			TargetImage:    target.Image,
		},
		TemplateKey: "project", VersionKey: "instance-template",
		Sizes: targetSizes(targetSizesOf(igms)), TargetSizeOnly: true, Nodes: byNode, Unjoined: unjoined,
	}
	if target.Create {
		cg.TargetVersion = plan.NewVersion
	}
	// The template's name is known before it is made (CopyName), and so
	// are green's names, which the plan shows for review.
	cg.Green = n.GreenName(target.Template)
	if len(n.MIGs) == 1 && n.MIGs[0].Regional() {
		cg.Rebalance, cg.RebalanceHeld = Redistribution, redistributionHeld(igms[0])
	}
	cg.LaunchesAfter, cg.Notes, err = n.launchesAfter(ctx, igms, target)
	return cg, err
}

// joinNodes maps the nodes to the groups' instances byName, with their
// launch times, and the instances no node is of.
func joinNodes(ctx context.Context, api *Client, byName map[string]*compute.ManagedInstance, nodes []corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	byNode, unjoined := mapNodes(api.project, byName, ptrs)
	if err := api.withLaunched(ctx, byNode); err != nil {
		return nil, nil, err
	}
	return byNode, unjoined, nil
}

// checkTemplates refuses groups that launch different templates, but for
// the target (a run killed while it pointed them at it): one copy of the
// first group's template would change the others' with the image. A
// template given by flag is the user's choice for all.
func (n *NodeGroup) checkTemplates(igms []*compute.InstanceGroupManager, cur string, t Target) error {
	if n.Template != "" {
		return nil
	}
	for i, igm := range igms {
		if got := lastSegment(igm.InstanceTemplate); got != cur && got != t.Template {
			return inputErrorf("managed instance groups %q and %q launch different instance templates (%q and %q); upgrade them one at a time with %s, or move all to one with %s",
				n.MIGs[0].Name, n.MIGs[i].Name, cur, got, flagGroup, flagTemplate)
		}
	}
	return nil
}

// regionOf is the region of the groups: the first group's.
func regionOf(migs []MIG) string {
	if m := migs[0]; m.Regional() {
		return m.Region
	}
	return RegionOf(migs[0].Zone)
}

func groupKind(migs []MIG) string {
	switch {
	case len(migs) > 1:
		return "zonal managed instance groups"
	case migs[0].Regional():
		return "regional managed instance group"
	}
	return "zonal managed instance group"
}

// launchesAfter says, for the plan, the template the groups launch after
// the run, their update policy and their autoscalers; notes warn of a
// regional group's autoscaler that is on (see autoscaledNote).
func (n *NodeGroup) launchesAfter(ctx context.Context, igms []*compute.InstanceGroupManager, t Target) (string, []string, error) {
	what := t.Template
	if t.Create {
		what = t.Template + " (new, image " + t.Image + ")"
	}
	var parts, notes []string
	for i, igm := range igms {
		s := fmt.Sprintf("%s: update policy %s", n.MIGs[i].Name, updateType(igm))
		if updateType(igm) != opportunistic {
			s += " (OPPORTUNISTIC during the run, then back)"
		}
		a, err := n.API.autoscalerOf(ctx, n.MIGs[i], igm.SelfLink)
		if err != nil {
			return "", nil, err
		}
		if a != nil && a.AutoscalingPolicy != nil {
			s += fmt.Sprintf(", autoscaler %q %s, %d-%d", a.Name, a.AutoscalingPolicy.Mode, a.AutoscalingPolicy.MinNumReplicas, a.AutoscalingPolicy.MaxNumReplicas)
			if n.MIGs[i].Regional() && a.AutoscalingPolicy.Mode != "OFF" {
				notes = append(notes, autoscaledNote(n.MIGs[i], a))
			}
		}
		parts = append(parts, s)
	}
	return what + "; " + strings.Join(parts, "; "), notes, nil
}

// autoscaledNote warns that the run's hold of a regional group's instance
// redistribution may not hold while its autoscaler is on:
// compute-api.json documents instanceRedistributionType NONE as "For
// non-autoscaled groups, proactive redistribution is disabled", and says
// nothing of autoscaled ones. The safe reading: it may not be, so the
// group may move instances between zones, undrained, during the run.
func autoscaledNote(m MIG, a *compute.Autoscaler) string {
	return fmt.Sprintf("regional managed instance group %q is autoscaled (autoscaler %q, mode %s): Compute documents the instance redistribution NONE that the run sets while it removes nodes for non-autoscaled groups only, so the group may move instances between zones undrained; set the autoscaler's mode to OFF for the run", m.Name, a.Name, a.AutoscalingPolicy.Mode)
}
