package upgrade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
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
	// Others are the group's machines the run did not plan to replace
	// that run another version, with what they run: they do not count.
	Others []string
	// Launched and Wanted count the machines the group runs (not leaving)
	// against the desired size.
	Launched, Wanted int
	// Settled says the group already runs as many machines as it wants,
	// some of them Others: no machine more comes, so the wait ended
	// before its timeout.
	Settled  bool
	Original plan.Sizes
	// GroupKind is what the provider calls the group.
	GroupKind string
}

func (e *NodeCreationFailure) Error() string {
	var parts []string
	if len(e.Zones) > 0 {
		parts = append(parts, "no new Ready node in zones "+quoteAll(e.Zones))
	}
	if len(e.Instances) > 0 {
		parts = append(parts, "instances not Ready: "+strings.Join(e.Instances, ", "))
	}
	if len(e.Others) > 0 {
		parts = append(parts, "instances of another version, not counted: "+strings.Join(e.Others, ", "))
	}
	if e.Launched < e.Wanted {
		parts = append(parts, fmt.Sprintf("%d of %d instances launched", e.Launched, e.Wanted))
	}
	when, fix := "after "+e.Timeout.String(), "fix the cause and run again (the end restores them), raise --node-ready-timeout,"
	if e.Settled {
		when = fmt.Sprintf("runs the %d instances it wants and launches no more", e.Wanted)
		fix = "find why the group launches another version (a warm pool's instances, a default version moved back), fix it and run again,"
	}
	return fmt.Sprintf("NodeCreationFailure: %s %q %s: %s; nothing was drained, and the sizes before the run (%s) are recorded: %s or put the group back as it was with \"kubectl nodeupgrade abort\"",
		e.GroupKind, e.Group, when, strings.Join(parts, "; "), e.Original, fix)
}

// cloudRecord is the run's cloud record, created on first use.
func (e *Engine) cloudRecord() *state.CloudRecord {
	if e.cfg.Record.Cloud == nil {
		e.cfg.Record.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: e.cfg.Provider.Name(), Group: e.group.GroupName(), GroupKind: e.groupKind(), TemplateKind: e.templateKind()}}
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
	if err := e.holdUpdates(ctx); err != nil {
		return err
	}
	g, err := e.resizer()
	if err != nil {
		return err
	}
	version, err := g.Setup(ctx)
	if err != nil {
		return err
	}
	if err := e.keepDefault(ctx, version); err != nil {
		return err
	}
	if cr.TargetVersion != version {
		e.logf("%s %q launches %s version %s", e.groupKind(), e.group.GroupName(), e.templateKind(), version)
	}
	cr.TargetVersion = version
	return e.save(ctx)
}

// resizer is the provider as a Group the run resizes itself. The
// strategies that resize need plan.CapGroup, so a plan gives them no
// other provider; one that only reads its group (an EKS managed node
// group, whose sizes are EKS's) is refused here all the same.
func (e *Engine) resizer() (cloud.Group, error) {
	if g, ok := e.group.(cloud.Group); ok {
		return g, nil
	}
	return nil, fmt.Errorf("cannot resize the node group: provider %q leaves the sizes of %s %q to its cloud service", e.cfg.Provider.Name(), e.groupKind(), cloud.GroupName(e.cfg.Provider))
}

// groupKind and templateKind are the provider's words for its group and
// its templates, from the plan.
func (e *Engine) groupKind() string {
	if c := e.cfg.Plan.Cloud; c != nil && c.GroupKind != "" {
		return c.GroupKind
	}
	return "group"
}

func (e *Engine) templateKind() string {
	if c := e.cfg.Plan.Cloud; c != nil && c.TemplateKind != "" {
		return c.TemplateKind
	}
	return "template"
}

// recordOriginal records the group's sizes before the run's first change
// to them, so a re-run never raises twice and the end restores them.
func (e *Engine) recordOriginal(ctx context.Context, scaleUp int32) (plan.Sizes, error) {
	cr := e.cloudRecord()
	if cr.Original == nil {
		sizes, err := e.group.Sizes(ctx)
		if err != nil {
			return plan.Sizes{}, err
		}
		cr.Original, cr.ScaleUp, cr.LastDesired, cr.ScaledFor = &sizes, scaleUp, sizes.Desired+scaleUp, cr.TargetVersion
		if err := e.save(ctx); err != nil {
			return plan.Sizes{}, err
		}
	}
	return *cr.Original, nil
}

// raise brings desired and max up to the recorded sizes plus by, never
// lowering either; it returns the sizes before and after.
func (e *Engine) raise(ctx context.Context, by int32) (from, to plan.Sizes, err error) {
	cr := e.cloudRecord()
	from, err = e.group.Sizes(ctx)
	if err != nil {
		return from, from, err
	}
	to = from
	to.Desired, to.Max = max(from.Desired, cr.Original.Desired+by), max(from.Max, cr.Original.Max+by)
	if to == from {
		return from, to, nil
	}
	g, err := e.resizer()
	if err != nil {
		return from, from, err
	}
	return from, to, g.SetDesiredAndMax(ctx, to.Desired, to.Max)
}

// restoreMax brings max back to the recorded one, as far as the desired
// size allows.
func (e *Engine) restoreMax(ctx context.Context) (plan.Sizes, error) {
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return sizes, err
	}
	cr := e.cfg.Record.Cloud
	if cr == nil || cr.Original == nil {
		return sizes, nil
	}
	if m := max(cr.Original.Max, sizes.Desired); sizes.Max != m {
		g, err := e.resizer()
		if err != nil {
			return sizes, err
		}
		if err := g.SetMax(ctx, m); err != nil {
			return sizes, err
		}
		sizes.Max = m
	}
	return sizes, nil
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
	other     []string // new machines of another version: they do not count
	launched  int
	zonesLeft []string
}

// ok says the wait is over: every new machine a Ready node of the
// target, one in each zone waited for, and as many as wanted besides the
// machines of another version, which do not count.
func (n newNodes) ok(wanted int) bool {
	return len(n.notReady) == 0 && len(n.zonesLeft) == 0 && n.launched-len(n.other) >= wanted
}

// settled says no machine more can come: the group runs as many as it
// wants, all up, and some run another version (a warm pool's, the default
// moved back), which the wait would count on for ever.
func (n newNodes) settled(wanted int) bool {
	return len(n.notReady) == 0 && len(n.other) > 0 && n.launched >= wanted && !n.ok(wanted)
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
		if outdated.Has(n.Name) {
			continue
		}
		current := e.group.Current(m, version)
		switch why := whyNotCounted(m, n, current, version, e.cfg.Plan); {
		case !current:
			// Not waited for (nothing makes it the target), but named.
			st.other = append(st.other, fmt.Sprintf("%q (%s, node %q): %s", m.ID, m.Zone, n.Name, why))
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
		st.notReady = append(st.notReady, fmt.Sprintf("%q (%s): %s", m.ID, m.Zone, whyNotCounted(m, nil, false, version, e.cfg.Plan)))
	}
	for _, z := range zones {
		if len(st.ready[z]) == 0 {
			st.zonesLeft = append(st.zonesLeft, z)
		}
	}
	return st, nil
}

// progress says what the wait for new nodes still waits for.
func (n newNodes) progress(ready, wanted int) string {
	s := fmt.Sprintf("%d/%d new nodes Ready", ready, ready+len(n.notReady))
	if n.launched < wanted {
		s += fmt.Sprintf(", %d/%d machines launched", n.launched, wanted)
	}
	if len(n.zonesLeft) > 0 {
		s += ", none yet in zones " + listNames(quoteEach(n.zonesLeft), waitNamesShown)
	}
	return s
}

// newNodeProblem says why a new node is not yet usable, or "".
func newNodeProblem(n *corev1.Node, version string, p *plan.Plan) string {
	if !capacity.NodeReady(n) {
		return "not Ready"
	}
	if t := capacity.StartupTaint(n); t != "" {
		return "Ready, still tainted " + t
	}
	if c := p.Cloud; c != nil {
		if v, ok := n.Labels[c.VersionLabel]; ok && v != version {
			return fmt.Sprintf("label %s=%s, want %s", c.VersionLabel, v, version)
		}
		if v, ok := n.Labels[c.ImageLabel]; ok && c.TargetImage != "" && v != c.TargetImage {
			return fmt.Sprintf("label %s=%s, want %s", c.ImageLabel, v, c.TargetImage)
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

// waitNewNodes waits, up to --node-ready-timeout, until the group runs
// wanted machines with a Ready node of the target on each new one, in
// every zone given.
func (e *Engine) waitNewNodes(ctx context.Context, cr *state.CloudRecord, zones []string, wanted int) error {
	where := ""
	if len(zones) > 0 {
		where = " in zones " + quoteAll(zones)
	}
	e.logf("waiting up to %s for the new nodes of %s version %s to be Ready%s (%d machines in all)", e.cfg.NodeReadyTimeout, e.templateKind(), cr.TargetVersion, where, wanted)
	var st newNodes
	failure := func() *NodeCreationFailure {
		return &NodeCreationFailure{Group: e.group.GroupName(), GroupKind: e.groupKind(), Timeout: e.cfg.NodeReadyTimeout, Zones: st.zonesLeft, Instances: st.notReady, Others: st.other, Launched: st.launched, Wanted: wanted, Original: *cr.Original}
	}
	return e.awaitNodes(ctx, func(ctx context.Context) (bool, error) {
		seen, err := e.lookAtNewNodes(ctx, cr.TargetVersion, zones)
		if err != nil {
			return false, err
		}
		st = seen
		n := 0
		for _, names := range st.ready {
			n += len(names)
		}
		if st.settled(wanted) {
			f := failure()
			f.Settled = true
			return false, f
		}
		if !st.ok(wanted) {
			e.progress.waitingFor(st.progress(n, wanted))
			return false, nil
		}
		e.logf("%d new nodes Ready in %d zones", n, len(st.ready))
		return true, nil
	}, failure)
}

// awaitNodes looks until look says done or --node-ready-timeout passes,
// then fails with the failure of the last complete look. It looks again
// on every node change (at most once a second) and, as a cloud API has no
// watch, at least every PollInterval. A look's error ends the wait unless
// the timeout cut the look short, or it passes with time (the cloud
// throttled the call, cloud.Transient): then the wait backs off and looks
// again, and only its timeout ends it.
func (e *Engine) awaitNodes(ctx context.Context, look func(ctx context.Context) (bool, error), failure func() *NodeCreationFailure) error {
	return e.awaitLook(ctx, look, func() error { return failure() })
}

// awaitLook is awaitNodes with any failure.
func (e *Engine) awaitLook(ctx context.Context, look func(ctx context.Context) (bool, error), failure func() error) error {
	wctx, cancel := context.WithTimeout(ctx, e.cfg.NodeReadyTimeout)
	defer cancel()
	throttled := 0 // transient errors in a row
	for {
		done, err := look(wctx)
		if err == nil && done {
			return nil
		}
		if err != nil && wctx.Err() == nil && cloud.Transient(err) {
			throttled++
			pause := cloud.Backoff(e.cfg.PollInterval, throttled)
			e.logf("%s; looking again in %s (the wait ends at --node-ready-timeout)", err, pause)
			if err := sleep(wctx, pause); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return failure()
			}
			continue
		}
		if err != nil && wctx.Err() == nil {
			return err
		}
		throttled = 0
		poll := time.NewTimer(e.cfg.PollInterval)
		select {
		case <-wctx.Done():
			poll.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return failure()
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
	var names []string
	for _, n := range nodes {
		_, has := n.Annotations[ScaleDownDisabledAnnotation]
		if on && !has && !e.protected.Has(n.Name) && !outdated.Has(n.Name) && !n.Spec.Unschedulable || !on && (has || e.protected.Has(n.Name)) {
			names = append(names, n.Name)
		}
	}
	var value *string
	if on {
		value = ptr.To("true")
	}
	if err := e.annotateNodes(ctx, names, ScaleDownDisabledAnnotation, value); err != nil {
		return err
	}
	if on {
		e.protected.Insert(names...)
	} else {
		e.protected.Delete(names...)
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
		if err := e.releaseRebalance(ctx); err != nil {
			return err
		}
		return e.protectNewNodes(ctx, false) // nothing was scaled up
	}
	orig := *cr.Original
	autoscaled, err := e.shrinkToOriginal(ctx, cr, orig)
	if err != nil {
		return err
	}
	if !autoscaled {
		if err := e.evenZones(ctx, cr, orig); err != nil {
			return err
		}
	}
	sizes, err := e.restoreMax(ctx)
	if err != nil {
		return err
	}
	// No termination lowers the desired size after this.
	if err := e.releaseRebalance(ctx); err != nil {
		return err
	}
	if e.note == "" {
		e.logf("%s %q is back to desired %d, max %d", e.groupKind(), e.group.GroupName(), sizes.Desired, sizes.Max)
	}
	return e.protectNewNodes(ctx, false)
}

// shrinkToOriginal removes nodes one at a time until the group is back to
// the desired size recorded before the run; it reports whether the
// cluster autoscaler scaled the group up meanwhile, which ends it.
func (e *Engine) shrinkToOriginal(ctx context.Context, cr *state.CloudRecord, orig plan.Sizes) (autoscaled bool, err error) {
	for {
		err := e.scaleDownOne(ctx, cr, orig)
		if errors.Is(err, errAutoscaled) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if cr.Shrinking == "" && cr.LastDesired <= orig.Desired {
			return false, nil
		}
	}
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
			if victim, err = e.scaleDownVictim(ctx); err != nil {
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
	if err := e.runHooks(ctx, plan.HookPreTerminate, []string{victim}); err != nil {
		return err
	}
	if err := e.deregister(ctx, "scale-down", []string{victim}); err != nil {
		return err
	}
	if err := e.holdRebalance(ctx); err != nil {
		return err
	}
	e.cfg.Events.Node(ctx, victim, corev1.EventTypeNormal, "NodeUpgradeRemoved", "scale-down: removing its machine and lowering the desired size")
	id, err := e.machineOf(ctx, victim)
	if err != nil {
		return fmt.Errorf("scale-down: error when removing node %q: %w", victim, err)
	}
	g, err := e.resizer()
	if err != nil {
		return err
	}
	if err := g.Shrink(ctx, victim); err != nil {
		return fmt.Errorf("scale-down: error when removing node %q: %w", victim, err)
	}
	e.shrunk.Insert(victim)
	e.written.forget(victim)
	cr.Shrinking, cr.ShrinkTo = "", 0
	if err := e.save(ctx); err != nil {
		return err
	}
	return e.awaitGone(ctx, map[string]string{victim: id})
}

// stopScaleDown ends the scale-down because the desired size went up
// under it: the node being removed is put back in service.
func (e *Engine) stopScaleDown(ctx context.Context, cr *state.CloudRecord, orig plan.Sizes, desired int32) error {
	e.note = fmt.Sprintf("the scale-down stopped: %s %q has desired size %d, above the %d this run set, so the cluster autoscaler scaled it up; the size is left as it is (before the run: %s)",
		e.groupKind(), e.group.GroupName(), desired, cr.LastDesired, orig)
	e.logf("%s", e.cfg.Color.Yellow(e.note))
	if cr.Shrinking != "" {
		always := func(*corev1.Node) bool { return true }
		if _, err := e.releaseMarks(ctx, []string{cr.Shrinking}, always, "NodeUpgradeReleased", "back in service: the scale-down stopped"); err != nil {
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
// fewest pods. Abort undoes the run: it removes the nodes on the target
// before any outdated one.
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
	kept := e.keptOutdated()
	var best *corev1.Node
	var bestKey victimKey
	for _, n := range nodes {
		k := victimKey{outdated: kept.Has(n.Name), zoneNodes: perZone[n.Labels[plan.ZoneLabel]], ready: capacity.NodeReady(n)}
		for _, p := range e.view.podsOn(n.Name) {
			if plan.Evictable(p) {
				k.pods++
			}
		}
		if best == nil || k.before(bestKey) {
			best, bestKey = n, k
		}
	}
	if best == nil {
		return "", fmt.Errorf("scale-down: the group has no node left to remove")
	}
	return best.Name, nil
}

// victimKey is what the scale-down weighs a node by.
type victimKey struct {
	outdated  bool // abort keeps it as long as a node on the target is left
	zoneNodes int
	ready     bool
	pods      int
}

// before says a node of key k goes before one of key o: not kept, then
// from a fuller zone, then not Ready, then with fewer pods.
func (k victimKey) before(o victimKey) bool {
	switch {
	case k.outdated != o.outdated:
		return !k.outdated
	case k.zoneNodes != o.zoneNodes:
		return k.zoneNodes > o.zoneNodes
	case k.ready != o.ready:
		return !k.ready
	}
	return k.pods < o.pods
}

// keptOutdated are the nodes abort keeps while it can: they run the
// version before the run, which abort makes the group launch again.
func (e *Engine) keptOutdated() sets.Set[string] {
	if !e.aborting {
		return nil
	}
	return sets.New(e.cfg.Plan.OutdatedNames()...)
}

// scaleDownVictim picks the node the scale-down removes next. Abort does
// not take an outdated node while machines the run launched have no node
// yet (a run killed in its scale-up): it waits for their nodes, which it
// removes instead, so the group is left as it was before the run.
func (e *Engine) scaleDownVictim(ctx context.Context) (string, error) {
	if victim, err := e.pickScaleDownNode(); err == nil && !e.keptOutdated().Has(victim) || !e.aborting {
		return victim, err
	}
	if err := e.awaitJoined(ctx); err != nil {
		return "", err
	}
	return e.pickScaleDownNode()
}

// awaitJoined waits, up to --node-ready-timeout, until every machine of
// the group that is not leaving stands for a node.
func (e *Engine) awaitJoined(ctx context.Context) error {
	var waiting []string
	logged := false
	return e.awaitLook(ctx, func(ctx context.Context) (bool, error) {
		nodes, err := e.groupNodes()
		if err != nil {
			return false, err
		}
		_, pending, err := e.group.Machines(ctx, nodes)
		if err != nil {
			return false, err
		}
		waiting = waiting[:0]
		for _, m := range pending {
			if !m.Leaving() {
				waiting = append(waiting, m.ID)
			}
		}
		if len(waiting) > 0 && !logged {
			logged = true
			e.logf("scale-down: waiting up to %s for the nodes of machines %s, so that they go rather than an outdated node", e.cfg.NodeReadyTimeout, listNames(quoteEach(waiting), waitNamesShown))
		}
		e.progress.waitingFor(fmt.Sprintf("the nodes of %d machines", len(waiting)))
		return len(waiting) == 0, nil
	}, func() error {
		return fmt.Errorf("scale-down: machines %s of %s %q have no node after %s (the run's --node-ready-timeout); an outdated node removed in their place would leave the group short of nodes: terminate them with the desired size lowered, or wait for their nodes, and run \"kubectl nodeupgrade abort\" again",
			listNames(quoteEach(waiting), waitNamesShown), e.groupKind(), e.group.GroupName(), e.cfg.NodeReadyTimeout)
	})
}

// drainForScaleDown cordons and drains a node as an outdated one would be:
// room first, PDBs honoured, then the post-drain wait for load balancers.
func (e *Engine) drainForScaleDown(ctx context.Context, name string) error {
	if err := e.setUnschedulable(ctx, []string{name}, true); err != nil {
		return err
	}
	if err := e.awaitRoom(ctx, fmt.Sprintf("scale-down: the pods of %q", name), []string{name}, sets.New(name),
		fmt.Sprintf("scale-down: not enough room for the pods of node %q", name), "run again when there is, or put the group back in service with \"kubectl nodeupgrade abort\""); err != nil {
		return err
	}
	if err := e.runHooks(ctx, plan.HookPreDrain, []string{name}); err != nil {
		return err
	}
	if err := e.excludeFromLoadBalancers(ctx, []string{name}); err != nil {
		return err
	}
	e.progress.waitingFor(fmt.Sprintf("the pods to leave %q", name))
	if _, err := e.drainer.DrainNodes(ctx, []string{name}); err != nil {
		return err
	}
	if err := e.postDrainWait(ctx, fmt.Sprintf("scale-down: node %q drained", name), "it"); err != nil {
		return err
	}
	return e.runHooks(ctx, plan.HookPostDrain, []string{name})
}

// holdRebalance suspends the group's own rebalancing between zones before
// a termination that lowers the desired size, unless it was suspended
// before the run. The intent is recorded first, so a run killed after the
// call still resumes it.
func (e *Engine) holdRebalance(ctx context.Context) error {
	r, ok := e.group.(cloud.Rebalancer)
	cr := e.cloudRecord()
	if !ok || cr.RebalanceWasHeld || e.rebalanceHeld {
		return nil
	}
	if !cr.RebalanceHeld {
		held, err := r.RebalanceHeld(ctx)
		if err != nil {
			return err
		}
		if held {
			cr.RebalanceWasHeld = true
			e.logf("%s of %s %q was suspended before the run: left so", r.RebalanceName(), e.groupKind(), e.group.GroupName())
			return e.save(ctx)
		}
		cr.RebalanceHeld = true
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	if err := r.HoldRebalance(ctx); err != nil {
		return err
	}
	e.rebalanceHeld = true
	e.logf("suspended %s of %s %q while the run removes nodes with the desired size lowered", r.RebalanceName(), e.groupKind(), e.group.GroupName())
	return nil
}

// releaseRebalance resumes the rebalancing the run suspended.
func (e *Engine) releaseRebalance(ctx context.Context) error {
	cr := e.cfg.Record.Cloud
	if cr == nil || !cr.RebalanceHeld {
		return nil
	}
	r, ok := e.group.(cloud.Rebalancer)
	if !ok {
		e.note = joinNote(e.note, fmt.Sprintf("the run suspended the rebalancing of %s %q between zones but cannot reach the group to resume it: resume it by hand", cr.GroupKind, cr.Group))
		e.logf("%s", e.note)
		return nil
	}
	if err := r.ReleaseRebalance(ctx); err != nil {
		return err
	}
	cr.RebalanceHeld, e.rebalanceHeld = false, false
	e.logf("resumed %s of %s %q", r.RebalanceName(), e.groupKind(), e.group.GroupName())
	return e.save(ctx)
}
