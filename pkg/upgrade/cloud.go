package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// ScaleDownDisabledAnnotation keeps the cluster autoscaler from removing a
// node; new nodes carry it while a run is in progress, so the autoscaler
// does not take away the capacity the upgrade counts on.
const ScaleDownDisabledAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled"

// NodeCreationFailure is the scale-up's failure: the group did not bring up
// Ready nodes of the target configuration in time. Nothing was drained.
type NodeCreationFailure struct {
	Group   string
	Timeout time.Duration
	// Zones have no new Ready node; Instances are the new machines that
	// did not become Ready nodes, with the reason.
	Zones     []string
	Instances []string
	// Launched and Wanted count the machines the group runs (not leaving)
	// against the desired size.
	Launched, Wanted int
	Original         plan.Sizes
}

func (e *NodeCreationFailure) Error() string {
	var parts []string
	if len(e.Zones) > 0 {
		parts = append(parts, "no new Ready node in zones "+quoteAll(e.Zones))
	}
	if len(e.Instances) > 0 {
		parts = append(parts, "instances not Ready: "+strings.Join(e.Instances, ", "))
	}
	if e.Launched < e.Wanted {
		parts = append(parts, fmt.Sprintf("%d of %d instances launched", e.Launched, e.Wanted))
	}
	return fmt.Sprintf("NodeCreationFailure: Auto Scaling group %q after %s: %s; nothing was drained, and the sizes before the run (%s) are recorded: fix the cause and run again (the end restores them), or raise --node-ready-timeout",
		e.Group, e.Timeout, strings.Join(parts, "; "), e.Original)
}

// cloudRecord is the run's cloud record, created on first use.
func (e *Engine) cloudRecord() *state.CloudRecord {
	if e.cfg.Record.Cloud == nil {
		e.cfg.Record.Cloud = &state.CloudRecord{Provider: e.cfg.Provider.Name(), Group: e.group.GroupName()}
	}
	return e.cfg.Record.Cloud
}

func (e *Engine) save(ctx context.Context) error {
	if e.cfg.Save == nil {
		return nil
	}
	return e.cfg.Save(ctx)
}

// setup points the group at the target configuration.
func (e *Engine) setup(ctx context.Context) error {
	cr := e.cloudRecord()
	if cr.FromVersion == "" && e.cfg.Plan.Cloud != nil {
		cr.FromVersion = e.cfg.Plan.Cloud.CurrentVersion
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	version, err := e.group.Setup(ctx)
	if err != nil {
		return err
	}
	if cr.TargetVersion != version {
		e.logf("Auto Scaling group %q launches launch template version %s", e.group.GroupName(), version)
	}
	cr.TargetVersion = version
	return e.save(ctx)
}

// scaleUp raises desired and max by the planned count, recording the sizes
// before it does, so a re-run never inflates twice and the end restores
// the sizes of before the run.
func (e *Engine) scaleUp(ctx context.Context) error {
	cr := e.cloudRecord()
	if cr.Original == nil {
		sizes, err := e.group.Sizes(ctx)
		if err != nil {
			return err
		}
		var inc int32
		if e.cfg.Plan.Cloud != nil {
			inc = e.cfg.Plan.Cloud.ScaleUp
		}
		cr.Original, cr.ScaleUp, cr.LastDesired, cr.ScaledFor = &sizes, inc, sizes.Desired+inc, cr.TargetVersion
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	orig := *cr.Original
	wantDesired, wantMax := orig.Desired+cr.ScaleUp, orig.Max+cr.ScaleUp
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return err
	}
	if sizes.Desired < wantDesired || sizes.Max < wantMax {
		d, m := max(sizes.Desired, wantDesired), max(sizes.Max, wantMax)
		e.logf("scaling Auto Scaling group %q up by %d: desired %d -> %d, max %d -> %d", e.group.GroupName(), cr.ScaleUp, sizes.Desired, d, sizes.Max, m)
		if err := e.group.SetDesiredAndMax(ctx, d, m); err != nil {
			return err
		}
		cr.LastDesired = d
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	if cr.ScaledFor != "" && cr.ScaledFor != cr.TargetVersion {
		// An earlier run (the one being rolled back) scaled up for another
		// version: its extra nodes are outdated now, and replacements of
		// the target come as they are removed. Nothing new to wait for.
		e.logf("Auto Scaling group %q was scaled up for version %s by an earlier run; its nodes are replaced like the others", e.group.GroupName(), cr.ScaledFor)
		return nil
	}
	if err := e.waitNewNodes(ctx, cr, e.cfg.Plan.OutdatedZones()); err != nil {
		return err
	}
	return e.protectNewNodes(ctx, true)
}

// groupNodes returns the group's nodes from the informer cache.
func (e *Engine) groupNodes() ([]*corev1.Node, error) {
	sel, err := e.cfg.Plan.GroupSelector()
	if err != nil {
		return nil, err
	}
	return e.nodesMatching(sel), nil
}

// nodesMatching returns the cached nodes a selector selects, by name.
func (e *Engine) nodesMatching(sel labels.Selector) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range e.view.allNodes() {
		if sel.Matches(labels.Set(n.Labels)) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// newNodes is what the scale-up waits for: every machine the group should
// run is launched, each new one is a Ready node with the target labels,
// and every zone of the outdated nodes has one.
type newNodes struct {
	ready     map[string][]string // zone -> Ready new nodes
	notReady  []string
	launched  int
	zonesLeft []string
}

func (n newNodes) ok(wanted int) bool {
	return len(n.notReady) == 0 && len(n.zonesLeft) == 0 && n.launched >= wanted
}

func (e *Engine) lookAtNewNodes(ctx context.Context, version string, zones []string) (newNodes, error) {
	nodes, err := e.groupNodes()
	if err != nil {
		return newNodes{}, err
	}
	byNode, pending, err := e.group.Machines(ctx, nodes)
	if err != nil {
		return newNodes{}, err
	}
	st := newNodes{ready: map[string][]string{}}
	outdated := sets.New(e.cfg.Plan.OutdatedNames()...)
	for _, n := range nodes {
		m, ok := byNode[n.Name]
		if !ok || m.Leaving() {
			continue
		}
		st.launched++
		if !e.group.Current(m, version) || outdated.Has(n.Name) {
			continue
		}
		switch why := newNodeProblem(n, version, e.cfg.Plan); {
		case why != "":
			st.notReady = append(st.notReady, fmt.Sprintf("%q (%s, node %q): %s", m.ID, m.Zone, n.Name, why))
		default:
			st.ready[m.Zone] = append(st.ready[m.Zone], n.Name)
		}
	}
	for _, m := range pending {
		if m.Leaving() {
			continue
		}
		st.launched++
		st.notReady = append(st.notReady, fmt.Sprintf("%q (%s): %s, no node has joined", m.ID, m.Zone, strings.ToLower(orUnknown(m.Lifecycle))))
	}
	for _, z := range zones {
		if len(st.ready[z]) == 0 {
			st.zonesLeft = append(st.zonesLeft, z)
		}
	}
	return st, nil
}

// newNodeProblem says why a new node is not yet usable, or "".
func newNodeProblem(n *corev1.Node, version string, p *plan.Plan) string {
	if !nodeReady(n) {
		return "not Ready"
	}
	if v, ok := n.Labels[plan.EKSTemplateVersionLabel]; ok && v != version {
		return fmt.Sprintf("label %s=%s, want %s", plan.EKSTemplateVersionLabel, v, version)
	}
	if c := p.Cloud; c != nil && c.TargetImage != "" {
		if v, ok := n.Labels[plan.EKSImageLabel]; ok && v != c.TargetImage {
			return fmt.Sprintf("label %s=%s, want %s", plan.EKSImageLabel, v, c.TargetImage)
		}
	}
	for k, want := range p.TargetLabels {
		if n.Labels[k] != want {
			return fmt.Sprintf("label %s=%q, want %q", k, n.Labels[k], want)
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// waitNewNodes waits, up to --node-ready-timeout, for the scale-up's nodes.
// The group is described at most every PollInterval, and again when a node
// changes (at most once a second): a cloud API has no watch.
func (e *Engine) waitNewNodes(ctx context.Context, cr *state.CloudRecord, zones []string) error {
	return e.waitNewNodesN(ctx, cr, zones, int(cr.LastDesired))
}

// waitNewNodesN is waitNewNodes for a given number of machines in all.
func (e *Engine) waitNewNodesN(ctx context.Context, cr *state.CloudRecord, zones []string, wanted int) error {
	where := ""
	if len(zones) > 0 {
		where = " in zones " + quoteAll(zones)
	}
	e.logf("waiting up to %s for the new nodes of launch template version %s to be Ready%s (%d machines in all)", e.cfg.RoomTimeout, cr.TargetVersion, where, wanted)
	wctx, cancel := context.WithTimeout(ctx, e.cfg.RoomTimeout)
	defer cancel()
	var st newNodes
	for {
		// The failure reports the last complete look, not one cut short.
		seen, err := e.lookAtNewNodes(wctx, cr.TargetVersion, zones)
		if err == nil {
			st = seen
		}
		if err == nil && st.ok(wanted) {
			n := 0
			for _, names := range st.ready {
				n += len(names)
			}
			e.logf("%d new nodes Ready in %d zones", n, len(st.ready))
			return nil
		}
		if err != nil && wctx.Err() == nil {
			return err
		}
		poll := time.NewTimer(e.cfg.PollInterval)
		select {
		case <-wctx.Done():
			poll.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &NodeCreationFailure{Group: e.group.GroupName(), Timeout: e.cfg.RoomTimeout, Zones: st.zonesLeft, Instances: st.notReady, Launched: st.launched, Wanted: wanted, Original: *cr.Original}
		case <-e.view.changed:
		case <-poll.C:
		}
		poll.Stop()
		if err := sleep(wctx, time.Second); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// protectNewNodes puts the scale-down-disabled annotation on the group's
// nodes that are not outdated (on), or takes it off every node of the
// group (off).
func (e *Engine) protectNewNodes(ctx context.Context, on bool) error {
	nodes, err := e.groupNodes()
	if err != nil {
		return err
	}
	outdated := sets.New(e.cfg.Plan.OutdatedNames()...)
	for _, n := range nodes {
		_, has := n.Annotations[ScaleDownDisabledAnnotation]
		var value any
		switch {
		case on && !has && !outdated.Has(n.Name) && !n.Spec.Unschedulable:
			value = "true"
		case !on && has:
			value = nil // a merge patch null removes the key
		default:
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{ScaleDownDisabledAnnotation: value}}})
		_, err := e.cfg.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("annotating node %q: %w", n.Name, err)
		}
	}
	return nil
}

// errAutoscaled stops the scale-down: someone else needs the capacity.
var errAutoscaled = errors.New("the group was scaled up by someone else")

// scaleDown brings the group back to its recorded sizes one node at a time:
// each node is drained like an outdated one, then its instance terminated
// with the desired size lowered by one. If the desired size is found above
// what the run last set, the cluster autoscaler scaled up meanwhile: the
// run stops at once and leaves the size, as EKS does.
func (e *Engine) scaleDown(ctx context.Context) error {
	cr := e.cloudRecord()
	if cr.Original == nil {
		return e.protectNewNodes(ctx, false) // nothing was scaled up
	}
	orig := *cr.Original
	for {
		err := e.scaleDownOne(ctx, cr, orig)
		if errors.Is(err, errAutoscaled) {
			break
		}
		if err != nil {
			return err
		}
		if cr.Shrinking == "" && cr.LastDesired <= orig.Desired {
			break
		}
	}
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return err
	}
	// Max comes back down as far as the desired size allows.
	if m := max(orig.Max, sizes.Desired); sizes.Max != m {
		if err := e.group.SetMax(ctx, m); err != nil {
			return err
		}
	}
	if e.note == "" {
		e.logf("Auto Scaling group %q is back to desired %d, max %d", e.group.GroupName(), sizes.Desired, max(orig.Max, sizes.Desired))
	}
	return e.protectNewNodes(ctx, false)
}

// scaleDownOne removes one node, or finds there is nothing left to remove.
// Its steps are recorded so that a run killed anywhere in it finishes the
// step rather than mistaking its own change for the autoscaler's: the
// victim (Shrinking) before its drain, the size it will leave (ShrinkTo)
// before the termination, and both cleared after it.
func (e *Engine) scaleDownOne(ctx context.Context, cr *state.CloudRecord, orig plan.Sizes) error {
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return err
	}
	terminate := false
	if cr.Shrinking != "" && cr.ShrinkTo != 0 {
		switch sizes.Desired {
		case cr.ShrinkTo: // terminated; only the record was not cleared
			e.shrunk.Insert(cr.Shrinking)
			cr.Shrinking, cr.ShrinkTo = "", 0
			return e.save(ctx)
		case cr.ShrinkTo + 1: // drained and recorded, not terminated yet
			terminate = true
		}
	}
	if !terminate && sizes.Desired > cr.LastDesired {
		return e.stopScaleDown(ctx, cr, orig, sizes.Desired)
	}
	if !terminate && sizes.Desired <= orig.Desired {
		cr.Shrinking, cr.ShrinkTo, cr.LastDesired = "", 0, sizes.Desired
		return e.save(ctx)
	}
	victim := cr.Shrinking
	if !terminate {
		if victim == "" || !e.nodeExists(victim) {
			if victim, err = e.pickScaleDownNode(); err != nil {
				return err
			}
			cr.Shrinking, cr.ShrinkTo = victim, 0
			if err := e.save(ctx); err != nil {
				return err
			}
		}
		e.logf("scale-down: removing node %q, desired %d -> %d", victim, sizes.Desired, sizes.Desired-1)
		if err := e.drainForScaleDown(ctx, victim); err != nil {
			return err
		}
		// The drain took a while: look again, so a scale-up by the
		// autoscaler meanwhile is not answered by shrinking the group.
		now, err := e.group.Sizes(ctx)
		if err != nil {
			return err
		}
		if now.Desired != sizes.Desired {
			return e.stopScaleDown(ctx, cr, orig, now.Desired)
		}
		cr.ShrinkTo, cr.LastDesired = sizes.Desired-1, sizes.Desired-1
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	e.cfg.Events.Node(ctx, victim, corev1.EventTypeNormal, "NodeUpgradeRemoved", "scale-down: terminating the instance and lowering the desired size")
	if err := e.group.Shrink(ctx, victim); err != nil {
		return fmt.Errorf("scale-down: removing node %q: %w", victim, err)
	}
	e.shrunk.Insert(victim)
	cr.Shrinking, cr.ShrinkTo = "", 0
	return e.save(ctx)
}

// stopScaleDown ends the scale-down because the desired size went up
// under it: the node being removed is put back in service.
func (e *Engine) stopScaleDown(ctx context.Context, cr *state.CloudRecord, orig plan.Sizes, desired int32) error {
	e.note = fmt.Sprintf("the scale-down stopped: Auto Scaling group %q has desired size %d, above the %d this run set, so the cluster autoscaler scaled it up; the size is left as it is (before the run: %s)",
		e.group.GroupName(), desired, cr.LastDesired, orig)
	e.logf("%s", e.cfg.Color.Yellow(e.note))
	if cr.Shrinking != "" {
		if err := e.uncordon(ctx, cr.Shrinking); err != nil {
			return err
		}
		cr.Shrinking, cr.ShrinkTo = "", 0
	}
	cr.LastDesired = desired
	if err := e.save(ctx); err != nil {
		return err
	}
	return errAutoscaled
}

func (e *Engine) nodeExists(name string) bool {
	_, ok, _ := e.view.nodes.GetStore().GetByKey(name)
	return ok
}

// pickScaleDownNode chooses the node whose removal costs least: from the
// zone with the most nodes, so zones stay balanced, the one with the
// fewest pods.
func (e *Engine) pickScaleDownNode() (string, error) {
	all, err := e.groupNodes()
	if err != nil {
		return "", err
	}
	// Nodes already removed may linger until their instance is gone, and
	// cordoned ones are someone's (or an earlier step's): neither is picked.
	var nodes []*corev1.Node
	perZone := map[string]int{}
	for _, n := range all {
		if !e.shrunk.Has(n.Name) && !n.Spec.Unschedulable {
			nodes = append(nodes, n)
			perZone[n.Labels[plan.ZoneLabel]]++
		}
	}
	var best *corev1.Node
	bestPods := 0
	for _, n := range nodes {
		pods := 0
		for _, p := range e.view.podsOn(n.Name) {
			if plan.Evictable(p) {
				pods++
			}
		}
		if best == nil {
			best, bestPods = n, pods
			continue
		}
		zn, zb := perZone[n.Labels[plan.ZoneLabel]], perZone[best.Labels[plan.ZoneLabel]]
		if zn > zb || zn == zb && (!nodeReady(n) && nodeReady(best) || nodeReady(n) == nodeReady(best) && pods < bestPods) {
			best, bestPods = n, pods
		}
	}
	if best == nil {
		return "", fmt.Errorf("scale-down: the group has no node left to remove")
	}
	return best.Name, nil
}

// drainForScaleDown cordons and drains a node as an outdated one would be:
// room first, PDBs honoured, then the post-drain wait for load balancers.
func (e *Engine) drainForScaleDown(ctx context.Context, name string) error {
	if err := e.cordon(ctx, name); err != nil {
		return err
	}
	excluded := sets.New(name)
	if room := e.view.room([]string{name}, excluded); !room.Fits() {
		e.logf("scale-down: waiting up to %s for room for the pods of %q: %s", e.cfg.RoomTimeout, name, room)
		wctx, cancel := context.WithTimeout(ctx, e.cfg.RoomTimeout)
		room, err := e.view.waitForRoom(wctx, []string{name}, excluded, time.Second)
		cancel()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("scale-down: not enough room for the pods of node %q after %s: %s; run again when there is", name, e.cfg.RoomTimeout, room)
		}
		if err != nil {
			return err
		}
	}
	if _, err := e.drainer.DrainNodes(ctx, []string{name}); err != nil {
		return err
	}
	if e.cfg.PostDrainWait > 0 {
		e.logf("scale-down: node %q drained; waiting %s for load balancers to deregister it", name, e.cfg.PostDrainWait)
		return sleep(ctx, e.cfg.PostDrainWait)
	}
	return nil
}

func (e *Engine) cordon(ctx context.Context, name string) error {
	return e.setUnschedulable(ctx, name, true)
}

func (e *Engine) uncordon(ctx context.Context, name string) error {
	return e.setUnschedulable(ctx, name, false)
}

func (e *Engine) setUnschedulable(ctx context.Context, name string, on bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	_, err := e.cfg.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cordoning node %q: %w", name, err)
	}
	return nil
}
