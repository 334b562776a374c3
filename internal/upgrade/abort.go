package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Abort puts the node group back in service from wherever its run stopped
// (cfg.Record; an empty one when nothing was recorded), without going on
// to the target: every node the run did not finish loses the run's taint,
// its cordon, the quarantine label (--undrainable cordon's) and the
// scale-down-disabled annotation, and the recorded
// sizes come back by the engine's own one-at-a-time scale-down. The
// exclude-from-external-load-balancers label comes off where the run set
// it (ExcludedByRunAnnotation), not where the node had it before.
//
// Blue being deleted cannot be undone; the caller refuses that phase.
func (e *Engine) Abort(ctx context.Context) error {
	ctx, stop, err := e.watchCluster(ctx)
	if err != nil {
		return err
	}
	defer stop()
	defer e.cfg.Events.Flush()
	e.group.shrink.aborting = true
	a := &aborter{toolkit: e.toolkit(), managed: func() *managedRun { return newManagedRun(e) }}
	return a.run(ctx)
}

// aborter is abort's execution: what it takes off the nodes, and how it
// puts the group back, with the toolkit of a run.
type aborter struct {
	toolkit
	// managed is the run of a service's update, made where one is aborted.
	managed func() *managedRun
}

func (a *aborter) run(ctx context.Context) error {
	rec := a.cfg.Record
	phase := plan.Phase(rec.Phase)
	if phase == plan.PhaseDeleteBlue {
		return fmt.Errorf("cannot abort: blue is being deleted, which cannot be undone")
	}
	switch {
	case rec.StartedAt.IsZero(): // not a record the session read: none was
		a.logf("no run recorded: looking for what a run left on the group's nodes")
	case phase == "":
		a.logf("aborting the %s run before its first phase", a.strategy)
	default:
		a.logf("aborting the %s run in phase %s", a.strategy, phase)
	}
	nodes, err := a.abortNodes()
	if err != nil {
		return err
	}
	if err := a.releaseNodes(ctx, nodes); err != nil {
		return err
	}
	// Back in service, the nodes are no longer held back for a next run.
	a.cfg.Record.Quarantined = nil
	// The workloads --make-room surged are put back once the nodes serve,
	// and abort's last word names them.
	surged := a.cfg.Record.Surged()
	if err := a.batches.room.restoreAll(ctx); err != nil {
		return err
	}
	if len(surged) > 0 {
		a.tally.addNote(putBackText(surged))
	}
	if a.group.pin.defaultBack, err = a.group.pin.abortDefault(ctx); err != nil {
		return err
	}
	if err := a.restoreSizes(ctx); err != nil {
		return err
	}
	if err := a.group.releaseSurge(ctx); err != nil {
		return err
	}
	if err := a.group.releaseRebalance(ctx); err != nil {
		return err
	}
	if err := a.group.restoreUpdates(ctx); err != nil {
		return err
	}
	if err := a.managed().abortService(ctx); err != nil {
		return err
	}
	// The scale-down and the rollback of green take the annotation off the
	// group's nodes; green given by selector is not among them.
	if err := a.unprotect(ctx, nodes); err != nil {
		return err
	}
	return a.awaitRecovering(ctx)
}

// awaitRecovering waits, within the recovery timeout (the run's
// --drain-timeout), for the workloads the run evicted pods of that may not
// be Ready again (the record's Recovering, and what abort's own drains
// evicted), so that "back in service" holds when abort says it and a run
// right after finds no workload recovering.
func (a *aborter) awaitRecovering(ctx context.Context) error {
	owners := slices.Clone(a.cfg.Record.Recovering)
	for _, o := range OwnersOf(a.batches.evicted) {
		if !slices.Contains(owners, o) {
			owners = append(owners, o)
		}
	}
	if len(owners) == 0 {
		return nil
	}
	a.logf("waiting up to %s for %d workloads the run evicted pods of to be Ready again", a.cfg.RecoverTimeout, len(owners))
	wctx, cancel := context.WithTimeout(ctx, a.cfg.RecoverTimeout)
	defer cancel()
	if err := a.nodes.view.workloads.waitReady(wctx, owners, a.batches.recoveries.showWaitingFor("workloads to be Ready again: ")); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("workloads the run evicted pods of are not Ready again within %s (the run's --drain-timeout): %w", a.cfg.RecoverTimeout, err)
		}
		return err
	}
	a.batches.recoveries.recordRecovering(nil, owners)
	return nil
}

// abortNodes are the nodes the run may have changed and not finished: the
// group's (green's included, as it carries the group's label) and those of
// a green selector, less the nodes done.
func (a *aborter) abortNodes() ([]*corev1.Node, error) {
	nodes, err := a.nodes.groupNodes()
	if err != nil {
		return nil, err
	}
	if sel := a.nodes.greenSelector(); sel != "" {
		green, err := a.nodes.selectedNodes(sel)
		if err != nil {
			return nil, err
		}
		for _, n := range green {
			if !slices.ContainsFunc(nodes, func(m *corev1.Node) bool { return m.Name == n.Name }) {
				nodes = append(nodes, n)
			}
		}
	}
	done := sets.New(a.cfg.Record.Done...)
	return slices.DeleteFunc(nodes, func(n *corev1.Node) bool {
		return done.Has(n.Name) || n.Labels[plan.StateLabel] == plan.StateDone
	}), nil
}

// cordonedByRun reports whether the run cordoned node n. A cordon the run
// cannot have made (no taint of its, not in flight, not blue) is someone
// else's and stays.
func (a *aborter) cordonedByRun(n *corev1.Node, blue sets.Set[string]) bool {
	rec := a.cfg.Record
	switch {
	case slices.ContainsFunc(n.Spec.Taints, a.nodes.isOurTaint):
		return true // eks cordons only nodes it tainted
	case slices.Contains(rec.InFlight, n.Name):
		return true // surge cordons a batch before its drain
	case rec.Cloud != nil && rec.Cloud.Shrinking == n.Name:
		return true // the scale-down's victim
	case rec.Managed != nil && rec.Managed.ScaleDown != nil && rec.Managed.ScaleDown.Shrinking == n.Name:
		return true // the victim of abort's scale-down of a service's scale-up
	case check.Quarantined(n):
		return true // --undrainable cordon's, or its owner's hold skipped
	}
	return blue.Has(n.Name)
}

// groupAborter is a strategy's run that replaces the whole group with
// another (blue/green): abort takes its cordons off and deletes green.
type groupAborter interface {
	cordonedWholesale() sets.Set[string]
	abortGreen(ctx context.Context) error
}

// wholeGroup is the run of a's strategy where it replaces the whole group.
func (a *aborter) wholeGroup() (groupAborter, bool) {
	newRun, ok := strategyRuns[a.strategy]
	if !ok {
		return nil, false
	}
	g, ok := newRun(a.toolkit).(groupAborter)
	return g, ok
}

// blueCordoned are the nodes a blue/green run cordoned wholesale (see
// cordonedWholesale); none for a run of another strategy.
func (a *aborter) blueCordoned() sets.Set[string] {
	if g, ok := a.wholeGroup(); ok {
		return g.cordonedWholesale()
	}
	return sets.New[string]()
}

// releaseNodes takes the run's taint and cordon off the nodes.
func (a *aborter) releaseNodes(ctx context.Context, nodes []*corev1.Node) error {
	blue := a.blueCordoned()
	var names []string
	for _, n := range nodes {
		if slices.ContainsFunc(n.Spec.Taints, a.nodes.isOurTaint) || excludedByRun(n) || check.Quarantined(n) || n.Spec.Unschedulable && a.cordonedByRun(n, blue) {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		a.logf("no node carries the taint %s or a cordon of the run", plan.TaintString(a.cfg.Taint))
		return nil
	}
	released, err := a.nodes.releaseMarks(ctx, names, func(n *corev1.Node) bool { return a.cordonedByRun(n, blue) }, "NodeUpgradeAborted", "back in service: untainted, uncordoned, unquarantined and back in load balancers by abort")
	if err != nil {
		return err
	}
	a.logf("untainted and uncordoned %d nodes: %s", len(released), quoteAll(released))
	return nil
}

// restoreSizes brings the cloud side back to what the record says it was.
func (a *aborter) restoreSizes(ctx context.Context) error {
	if a.cfg.Plan.Managed != nil {
		return a.managed().abortScaleUp(ctx)
	}
	cr := a.cfg.Record.Cloud
	switch {
	case a.group.pool == nil && cr != nil && cr.Original != nil:
		// A record of an older version, with no request to open the group.
		a.tally.note = joinNote(a.tally.note, fmt.Sprintf("the run recorded the sizes of %s %q before it (%s) but not how to reach the group: set them by hand", cr.GroupKind, cr.Group, *cr.Original))
		a.logf("%s", a.tally.note)
		return nil
	case a.group.pool == nil:
		return nil
	case cr == nil:
		a.logf("nothing recorded of %s %q: its sizes are left as they are", a.words.groupKind(), a.group.pool.GroupName())
		return nil
	}
	if g, ok := a.wholeGroup(); ok {
		return g.abortGreen(ctx)
	}
	if cr.Original == nil {
		a.logf("%s %q was not scaled up by the run", a.words.groupKind(), a.group.pool.GroupName())
	} else if err := a.group.shrink.scaleDown(ctx); err != nil {
		// The same scale-down a finished run ends with: each node removed
		// is drained first, and a scale-up by the autoscaler stops it.
		return err
	}
	return a.group.pin.settleDefault(ctx)
}

// unprotect takes the scale-down-disabled annotation off the nodes that
// carry it now (the scale-down may have removed some) or that this process
// annotated.
func (a *aborter) unprotect(ctx context.Context, nodes []*corev1.Node) error {
	var names []string
	for _, n := range nodes {
		obj, ok, _ := a.nodes.view.nodes.GetStore().GetByKey(n.Name)
		if !ok {
			continue
		}
		if _, has := obj.(*corev1.Node).Annotations[ScaleDownDisabledAnnotation]; has || a.group.protected.Has(n.Name) {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if err := a.nodes.annotateNodes(ctx, names, ScaleDownDisabledAnnotation, nil); err != nil {
		return err
	}
	a.group.protected.Delete(names...)
	a.logf("took the %s annotation off %s", ScaleDownDisabledAnnotation, quoteAll(names))
	return nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return strings.TrimSuffix(a, ".") + "; " + b
}
