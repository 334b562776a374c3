package gce

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	compute "google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// NodeGroup is a node group backed by one or more managed instance groups
// (kOps makes one per zone): the provider "gce" of a run.
type NodeGroup struct {
	API    *Client
	Client kubernetes.Interface
	// MIGs are the node group's groups, blue's in a blue/green run.
	MIGs []MIG
	// Image and Template are the target as --image and
	// --instance-template give it; both empty means the groups'
	// current template.
	Image, Template string

	greens   []MIG             // blue/green: the groups Machines reports too
	strategy plan.StrategyName // --strategy, which plan checks the groups for
}

var (
	_ cloud.Scaler      = (*NodeGroup)(nil)
	_ cloud.BlueGreen   = (*NodeGroup)(nil)
	_ cloud.Departures  = (*NodeGroup)(nil)
	_ cloud.SelfUpdater = (*NodeGroup)(nil)
)

// Name implements cloud.Provider.
func (n *NodeGroup) Name() string { return Name }

// GroupName implements cloud.Scaler: the groups' names, comma-separated,
// as the group flag takes them.
func (n *NodeGroup) GroupName() string {
	names := make([]string, len(n.MIGs))
	for i, m := range n.MIGs {
		names[i] = m.Name
	}
	return strings.Join(names, ",")
}

// Describe implements cloud.Provider.
func (n *NodeGroup) Describe() string {
	return "recreate the instance from the group's template (same name; its old Node object is deleted)"
}

// templateOf is the template a group launches now; the node group's
// current one is its first group's.
func (p *Client) templateOf(ctx context.Context, m MIG) (string, error) {
	igm, err := p.getMIG(ctx, m)
	if err != nil {
		return "", err
	}
	if igm == nil {
		return "", missingMIG(m)
	}
	return templateName(m, igm.InstanceTemplate)
}

// target resolves, and makes when it must, the target template.
func (n *NodeGroup) target(ctx context.Context) (string, error) {
	cur, err := n.API.templateOf(ctx, n.MIGs[0])
	if err != nil {
		return "", err
	}
	t, err := n.API.ResolveTarget(ctx, cur, n.Image, n.Template)
	if err != nil {
		return "", err
	}
	return t.Template, n.API.CreateTarget(ctx, t)
}

// Setup implements cloud.Scaler: every group is pointed at the target
// template, the first group last: a run killed on the way still finds its
// source template there (see Client.templateOf). The run has held their own updates
// off first (cloud.SelfUpdater), so none replaces an instance itself.
func (n *NodeGroup) Setup(ctx context.Context) (string, error) {
	tmpl, err := n.target(ctx)
	if err != nil {
		return "", err
	}
	url := "projects/" + n.API.project + "/global/instanceTemplates/" + tmpl
	for _, m := range slices.Backward(n.MIGs) {
		igm, err := n.API.getMIG(ctx, m)
		if err != nil {
			return "", err
		}
		if igm != nil && lastSegment(igm.InstanceTemplate) == tmpl {
			continue
		}
		if err := n.API.setTemplate(ctx, m, url); err != nil {
			return "", err
		}
	}
	return tmpl, nil
}

// igms reads the groups.
func (n *NodeGroup) igms(ctx context.Context, migs []MIG) ([]*compute.InstanceGroupManager, error) {
	out := make([]*compute.InstanceGroupManager, len(migs))
	for i, m := range migs {
		igm, err := n.API.getMIG(ctx, m)
		if err != nil {
			return nil, err
		}
		if igm == nil {
			return nil, missingMIG(m)
		}
		out[i] = igm
	}
	return out, nil
}

// sizes reads each group's target size.
func (n *NodeGroup) sizes(ctx context.Context, migs []MIG) ([]int64, error) {
	igms, err := n.igms(ctx, migs)
	if err != nil {
		return nil, err
	}
	return targetSizesOf(igms), nil
}

func targetSizesOf(igms []*compute.InstanceGroupManager) []int64 {
	out := make([]int64, len(igms))
	for i, igm := range igms {
		out[i] = igm.TargetSize
	}
	return out
}

// targetSizes are the groups' target sizes as plan.Sizes: a managed
// instance group has no min and max of its own.
func targetSizes(sizes []int64) plan.Sizes {
	var sum int64
	for _, s := range sizes {
		sum += s
	}
	return plan.Sizes{Desired: int32(sum), Max: int32(sum)}
}

// Sizes implements cloud.Scaler.
func (n *NodeGroup) Sizes(ctx context.Context) (plan.Sizes, error) {
	s, err := n.sizes(ctx, n.MIGs)
	return targetSizes(s), err
}

// SetDesiredAndMax implements cloud.Scaler: the target size only (see
// resizeTo).
func (n *NodeGroup) SetDesiredAndMax(ctx context.Context, desired, _ int32) error {
	return n.resizeTo(ctx, n.MIGs, int64(desired))
}

// resizeTo sets the groups' target sizes to add up to total. Across
// several zonal groups a raise goes first to the group the run works in,
// up to the instances it runs of another template than its own: the
// surge strategy goes zone by zone, in zone order, and its surge nodes
// stand in for that zone's old ones, whose removal lowers that group. The
// rest goes one at a time to the group with the fewest (the zones stay
// even: eks's scale-up), and a cut comes off the group with the most.
func (n *NodeGroup) resizeTo(ctx context.Context, migs []MIG, total int64) error {
	igms, err := n.igms(ctx, migs)
	if err != nil {
		return err
	}
	sizes := targetSizesOf(igms)
	first, room := -1, int64(0)
	if len(migs) > 1 && total > int64(targetSizes(sizes).Desired) {
		if first, room, err = n.workedOn(ctx, migs, igms); err != nil {
			return err
		}
	}
	want := spread(sizes, total, first, room)
	for i, m := range migs {
		if want[i] != sizes[i] {
			if err := n.API.resize(ctx, m, want[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// workedOn finds, in zone order, the first group that runs instances of
// another template than its own, and how many; -1 when none does.
func (n *NodeGroup) workedOn(ctx context.Context, migs []MIG, igms []*compute.InstanceGroupManager) (int, int64, error) {
	order := make([]int, len(migs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(migs[a].Zone, migs[b].Zone) })
	for _, i := range order {
		mis, err := n.API.managedInstances(ctx, migs[i])
		if err != nil {
			return -1, 0, err
		}
		tmpl := lastSegment(igms[i].InstanceTemplate)
		old := int64(0)
		for _, mi := range mis {
			if mi.CurrentAction != "DELETING" && (mi.Version == nil || lastSegment(mi.Version.InstanceTemplate) != tmpl) {
				old++
			}
		}
		if old > 0 {
			return i, old, nil
		}
	}
	return -1, 0, nil
}

// spread changes sizes to add up to total: a raise goes to sizes[first]
// up to room more (first -1: none), the rest one at a time to the
// fewest; a cut comes off the most.
func spread(sizes []int64, total int64, first int, room int64) []int64 {
	want := slices.Clone(sizes)
	var sum int64
	for _, s := range want {
		sum += s
	}
	for ; sum < total && first >= 0 && room > 0; sum++ {
		want[first]++
		room--
	}
	for ; sum < total; sum++ {
		want[slices.Index(want, slices.Min(want))]++
	}
	for ; sum > total; sum-- {
		want[slices.Index(want, slices.Max(want))]--
	}
	return want
}

// SetMax implements cloud.Scaler: a managed instance group has no max.
func (n *NodeGroup) SetMax(context.Context, int32) error { return nil }

// all are the groups Machines reports: blue's and green's.
func (n *NodeGroup) all() []MIG {
	return append(slices.Clone(n.MIGs), n.greens...)
}

// managed lists the managed instances of groups, with their group.
func (n *NodeGroup) managed(ctx context.Context, migs []MIG) (map[string]*compute.ManagedInstance, map[string]MIG, error) {
	byName, of := map[string]*compute.ManagedInstance{}, map[string]MIG{}
	for _, m := range migs {
		mis, err := n.API.managedInstances(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		for _, mi := range mis {
			byName[mi.Name], of[mi.Name] = mi, m
		}
	}
	return byName, of, nil
}

// Machines implements cloud.Scaler. A machine Compute cannot create for
// quota or capacity is an error (see creationFailure), which ends the
// run's wait for it.
func (n *NodeGroup) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	byName, of, err := n.managed(ctx, n.all())
	if err != nil {
		return nil, nil, err
	}
	if err := creationFailure(byName, of); err != nil {
		return nil, nil, err
	}
	byNode, pending := mapNodes(n.API.project, byName, nodes)
	return byNode, pending, nil
}

// mapNodes joins nodes to managed instances by provider ID.
func mapNodes(project string, byName map[string]*compute.ManagedInstance, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine) {
	byNode := make(map[string]plan.Machine, len(nodes))
	joined := map[string]bool{}
	for _, node := range nodes {
		p, zone, name, ok := InstanceFromProviderID(node.Spec.ProviderID)
		if mi := byName[name]; ok && p == project && mi != nil && zoneOf(mi) == zone {
			byNode[node.Name], joined[name] = machine(project, mi), true
		}
	}
	var pending []plan.Machine
	for _, name := range slices.Sorted(mapsKeys(byName)) {
		if !joined[name] {
			pending = append(pending, machine(project, byName[name]))
		}
	}
	return byNode, pending
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// zoneOf is the zone of a managed instance, from its URL.
func zoneOf(mi *compute.ManagedInstance) string {
	_, after, _ := strings.Cut(mi.Instance, "/zones/")
	zone, _, _ := strings.Cut(after, "/")
	return zone
}

// machine is a managed instance in neutral terms: its template is the
// version (templates are immutable), the template kind's "template" the
// project, and its state from currentAction and instanceStatus.
func machine(project string, mi *compute.ManagedInstance) plan.Machine {
	m := plan.Machine{ID: mi.Name, Zone: zoneOf(mi), Template: project, State: machineState(mi), Lifecycle: mi.CurrentAction}
	if mi.Version != nil {
		m.Version = lastSegment(mi.Version.InstanceTemplate)
	}
	if mi.CurrentAction == "NONE" || mi.CurrentAction == "" {
		m.Lifecycle = mi.InstanceStatus
	}
	return m
}

// machineState maps a managed instance's action and status to the neutral
// states: deleting or abandoning is leaving; creating, recreating or
// verifying is pending, as is a VM not running with no action.
func machineState(mi *compute.ManagedInstance) plan.MachineState {
	switch mi.CurrentAction {
	case "DELETING", "ABANDONING":
		return plan.MachineLeaving
	case "CREATING", "CREATING_WITHOUT_RETRIES", "RECREATING", "VERIFYING", "STARTING", "RESUMING":
		return plan.MachinePending
	}
	if mi.InstanceStatus != "RUNNING" {
		return plan.MachinePending
	}
	return plan.MachineInService
}

// Current implements cloud.Scaler.
func (n *NodeGroup) Current(m plan.Machine, version string) bool {
	return m.Version == version && !m.Leaving()
}

// nodeInstance reads a node: its instance, the group that manages it, and
// the node's UID; an empty name when the node is gone already.
func (n *NodeGroup) nodeInstance(ctx context.Context, node string) (name, zone string, mi *compute.ManagedInstance, m MIG, uid string, err error) {
	obj, err := cloud.NodeOf(ctx, n.Client, node)
	if err != nil || obj == nil {
		return "", "", nil, MIG{}, "", err
	}
	_, zone, name, ok := InstanceFromProviderID(obj.Spec.ProviderID)
	if !ok {
		return "", "", nil, MIG{}, "", fmt.Errorf("node %q has no GCE instance in its provider ID %q", node, obj.Spec.ProviderID)
	}
	byName, of, err := n.managed(ctx, n.all())
	if err != nil {
		return "", "", nil, MIG{}, "", err
	}
	if byName[name] == nil {
		return "", "", nil, MIG{}, "", fmt.Errorf("instance %q of node %q is in none of managed instance groups %s", name, node, n.GroupName())
	}
	return name, zone, byName[name], of[name], string(obj.UID), nil
}

// RemoveNode implements cloud.Provider: the instance is recreated from the
// group's template under its name. Its Node object, drained and cordoned,
// is deleted once the recreation is under way (by UID, so never the new
// VM's), or the new VM's kubelet would take it over, cordon and taints
// included.
func (n *NodeGroup) RemoveNode(ctx context.Context, node string) error {
	name, zone, _, m, uid, err := n.nodeInstance(ctx, node)
	if err != nil || name == "" {
		return err
	}
	if err := n.API.recreateInstances(ctx, m, []string{instanceURL(n.API.project, zone, name)}); err != nil {
		return err
	}
	err = n.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(uid)})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("error when deleting node %q of recreated instance %q: %w", node, name, err)
	}
	return nil
}

// Shrink implements cloud.Scaler: deleteInstances, which lowers the
// group's target size.
func (n *NodeGroup) Shrink(ctx context.Context, node string) error {
	name, zone, mi, m, _, err := n.nodeInstance(ctx, node)
	if err != nil || name == "" || mi.CurrentAction == "DELETING" {
		return err
	}
	return n.API.deleteInstances(ctx, m, []string{instanceURL(n.API.project, zone, name)})
}

// MachineOf implements cloud.Departures: the instance's name and the ID
// of the VM it runs now, so a recreated one (same name, new VM) counts as
// gone once its old VM is.
func (n *NodeGroup) MachineOf(ctx context.Context, node string) (string, error) {
	name, _, mi, _, _, err := n.nodeInstance(ctx, node)
	if err != nil || name == "" {
		return "", err
	}
	return name + "#" + strconv.FormatUint(mi.Id, 10), nil
}

// Leaving implements cloud.Departures from one listManagedInstances per
// group: Compute's operations are DONE once the action is scheduled, so
// the managed instance is what says the VM is gone.
func (n *NodeGroup) Leaving(ctx context.Context, machines []string) (map[string]cloud.Departure, error) {
	byName, _, err := n.managed(ctx, n.all())
	if err != nil {
		return nil, err
	}
	out := make(map[string]cloud.Departure, len(machines))
	for _, id := range machines {
		name, vm, _ := strings.Cut(id, "#")
		mi := byName[name]
		switch {
		case mi == nil:
			out[id] = cloud.Departure{Gone: true}
		case mi.Id != 0 && strconv.FormatUint(mi.Id, 10) != vm:
			out[id] = cloud.Departure{Gone: true} // recreated: a new VM
		default:
			out[id] = cloud.Departure{Lifecycle: mi.CurrentAction}
		}
	}
	return out, nil
}
