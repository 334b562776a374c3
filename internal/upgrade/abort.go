package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Abort puts the node group back in service from wherever its run stopped
// (cfg.Record; an empty one when nothing was recorded), without going on
// to the target: every node the run did not finish loses the run's taint,
// its cordon and the scale-down-disabled annotation, and the recorded
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
	e.group.aborting = true
	rec := e.cfg.Record
	phase := plan.Phase(rec.Phase)
	if phase == plan.PhaseDeleteBlue {
		return fmt.Errorf("cannot abort: blue is being deleted, which cannot be undone")
	}
	if rec.Phase == "" {
		e.logf("no run recorded: looking for what a run left on the group's nodes")
	} else {
		e.logf("aborting the %s run in phase %s", e.strategy.Name(), phase)
	}
	nodes, err := e.abortNodes()
	if err != nil {
		return err
	}
	if err := e.releaseNodes(ctx, nodes); err != nil {
		return err
	}
	if e.group.defaultBack, err = e.group.abortDefault(ctx); err != nil {
		return err
	}
	if err := e.restoreSizes(ctx); err != nil {
		return err
	}
	if err := e.group.releaseRebalance(ctx); err != nil {
		return err
	}
	if err := e.group.restoreUpdates(ctx); err != nil {
		return err
	}
	if err := newManagedRun(e).abortService(ctx); err != nil {
		return err
	}
	// The scale-down and the rollback of green take the annotation off the
	// group's nodes; green given by selector is not among them.
	if err := e.unprotect(ctx, nodes); err != nil {
		return err
	}
	return e.awaitRecovering(ctx)
}

// awaitRecovering waits, within the recovery timeout (the run's
// --drain-timeout), for the workloads the run evicted pods of that may not
// be Ready again (the record's Recovering, and what abort's own drains
// evicted), so that "back in service" holds when abort says it and a run
// right after finds no workload recovering.
func (e *Engine) awaitRecovering(ctx context.Context) error {
	owners := slices.Clone(e.cfg.Record.Recovering)
	for _, o := range OwnersOf(e.evicted) {
		if !slices.Contains(owners, o) {
			owners = append(owners, o)
		}
	}
	if len(owners) == 0 {
		return nil
	}
	e.logf("waiting up to %s for %d workloads the run evicted pods of to be Ready again", e.cfg.RecoverTimeout, len(owners))
	wctx, cancel := context.WithTimeout(ctx, e.cfg.RecoverTimeout)
	defer cancel()
	if err := e.view.workloads.waitReady(wctx, owners, e.showWaitingFor("workloads to be Ready again: ")); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("workloads the run evicted pods of are not Ready again within %s (the run's --drain-timeout): %w", e.cfg.RecoverTimeout, err)
		}
		return err
	}
	e.recordRecovering(nil, owners)
	return nil
}

// abortNodes are the nodes the run may have changed and not finished: the
// group's (green's included, as it carries the group's label) and those of
// a green selector, less the nodes done.
func (e *Engine) abortNodes() ([]*corev1.Node, error) {
	nodes, err := e.groupNodes()
	if err != nil {
		return nil, err
	}
	if sel := e.greenSelector(); sel != "" {
		green, err := e.selectedNodes(sel)
		if err != nil {
			return nil, err
		}
		for _, n := range green {
			if !slices.ContainsFunc(nodes, func(m *corev1.Node) bool { return m.Name == n.Name }) {
				nodes = append(nodes, n)
			}
		}
	}
	done := sets.New(e.cfg.Record.Done...)
	return slices.DeleteFunc(nodes, func(n *corev1.Node) bool {
		return done.Has(n.Name) || n.Labels[plan.StateLabel] == plan.StateDone
	}), nil
}

// cordonedByRun reports whether the run cordoned node n. A cordon the run
// cannot have made (no taint of its, not in flight, not blue) is someone
// else's and stays.
func (e *Engine) cordonedByRun(n *corev1.Node, blue sets.Set[string]) bool {
	rec := e.cfg.Record
	switch {
	case slices.ContainsFunc(n.Spec.Taints, e.isOurTaint):
		return true // eks cordons only nodes it tainted
	case slices.Contains(rec.InFlight, n.Name):
		return true // surge cordons a batch before its drain
	case rec.Cloud != nil && rec.Cloud.Shrinking == n.Name:
		return true // the scale-down's victim
	}
	return blue.Has(n.Name)
}

// blueCordoned are the nodes a blue/green run cordoned wholesale: blue
// once the run got past creating green, and green during a rollback.
func (e *Engine) blueCordoned() sets.Set[string] {
	out := sets.New[string]()
	if !e.traits.WholeGroup {
		return out
	}
	switch plan.Phase(e.cfg.Record.Phase) {
	case "", plan.PhaseSetup, plan.PhasePrepareTarget, plan.PhaseCreateGreen:
		return out
	case plan.PhaseRollback:
		blue := sets.New(e.cfg.Plan.OutdatedNames()...)
		nodes, _ := e.groupNodes()
		for _, n := range nodes {
			if !blue.Has(n.Name) {
				out.Insert(n.Name)
			}
		}
	}
	return out.Insert(e.cfg.Plan.OutdatedNames()...)
}

// releaseNodes takes the run's taint and cordon off the nodes.
func (e *Engine) releaseNodes(ctx context.Context, nodes []*corev1.Node) error {
	blue := e.blueCordoned()
	var names []string
	for _, n := range nodes {
		if slices.ContainsFunc(n.Spec.Taints, e.isOurTaint) || excludedByRun(n) || n.Spec.Unschedulable && e.cordonedByRun(n, blue) {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		e.logf("no node carries the taint %s or a cordon of the run", plan.TaintString(e.cfg.Taint))
		return nil
	}
	released, err := e.releaseMarks(ctx, names, func(n *corev1.Node) bool { return e.cordonedByRun(n, blue) }, "NodeUpgradeAborted", "back in service: untainted, uncordoned and back in load balancers by abort")
	if err != nil {
		return err
	}
	e.logf("untainted and uncordoned %d nodes: %s", len(released), quoteAll(released))
	return nil
}

// restoreSizes brings the cloud side back to what the record says it was.
func (e *Engine) restoreSizes(ctx context.Context) error {
	cr := e.cfg.Record.Cloud
	switch {
	case e.group.pool == nil && cr != nil && cr.Original != nil:
		// A record of an older version, with no request to open the group.
		e.note = joinNote(e.note, fmt.Sprintf("the run recorded the sizes of %s %q before it (%s) but not how to reach the group: set them by hand", cr.GroupKind, cr.Group, *cr.Original))
		e.logf("%s", e.note)
		return nil
	case e.group.pool == nil:
		return nil
	case cr == nil:
		e.logf("nothing recorded of %s %q: its sizes are left as they are", e.groupKind(), e.group.pool.GroupName())
		return nil
	}
	if e.traits.WholeGroup {
		return (&blueGreenRun{Engine: e}).abortGreen(ctx)
	}
	if cr.Original == nil {
		e.logf("%s %q was not scaled up by the run", e.groupKind(), e.group.pool.GroupName())
	} else if err := e.group.scaleDown(ctx); err != nil {
		// The same scale-down a finished run ends with: each node removed
		// is drained first, and a scale-up by the autoscaler stops it.
		return err
	}
	return e.group.settleDefault(ctx)
}

// unprotect takes the scale-down-disabled annotation off the nodes that
// carry it now (the scale-down may have removed some) or that this process
// annotated.
func (e *Engine) unprotect(ctx context.Context, nodes []*corev1.Node) error {
	var names []string
	for _, n := range nodes {
		obj, ok, _ := e.view.nodes.GetStore().GetByKey(n.Name)
		if !ok {
			continue
		}
		if _, has := obj.(*corev1.Node).Annotations[ScaleDownDisabledAnnotation]; has || e.group.protected.Has(n.Name) {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if err := e.annotateNodes(ctx, names, ScaleDownDisabledAnnotation, nil); err != nil {
		return err
	}
	e.group.protected.Delete(names...)
	e.logf("took the %s annotation off %s", ScaleDownDisabledAnnotation, quoteAll(names))
	return nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return strings.TrimSuffix(a, ".") + "; " + b
}
