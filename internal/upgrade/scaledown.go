package upgrade

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// shrinker brings the group back to the sizes recorded before the run,
// one drained node at a time, and evens its zones before the cloud may
// rebalance them again: the end of eks and surge, and abort's.
type shrinker struct {
	*cloudGroup
	// aborting says the engine runs abort, whose scale-down undoes the
	// run: the nodes on the target go first.
	aborting bool
}

// errAutoscaled stops the scale-down: someone else needs the capacity.
var errAutoscaled = errors.New("the group was scaled up by someone else")

// scaleDown brings the group back to its recorded sizes one node at a time:
// each node is drained like an outdated one, then its instance terminated
// with the desired size lowered by one. If the desired size is found above
// what the run last set, the cluster autoscaler scaled up meanwhile: the
// run stops at once and leaves the size, as EKS does.
func (s *shrinker) scaleDown(ctx context.Context) error {
	// Nothing stays reserved past the scale-ups (--reserve-surge).
	if err := s.releaseSurge(ctx); err != nil {
		return err
	}
	cr := s.cloudRecord()
	if cr.Original == nil {
		if err := s.releaseRebalance(ctx); err != nil {
			return err
		}
		return s.protectNewNodes(ctx, false) // nothing was scaled up
	}
	orig := *cr.Original
	autoscaled, err := s.shrinkToOriginal(ctx, &cr.ScaleRecord, orig)
	if err != nil {
		return err
	}
	if !autoscaled {
		if err := s.evenZones(ctx, cr, orig); err != nil {
			return err
		}
	}
	sizes, err := s.restoreMax(ctx)
	if err != nil {
		return err
	}
	// No termination lowers the desired size after this.
	if err := s.releaseRebalance(ctx); err != nil {
		return err
	}
	if s.tally.note == "" {
		s.logf("%s %q is back to %s", s.words.groupKind(), s.pool.GroupName(), s.cfg.Plan.Cloud.SizeText(sizes))
	}
	return s.protectNewNodes(ctx, false)
}

// shrinkBackTo brings the group back to sizes orig, recording its steps
// in sr: abort's for a scale-up the run did not make (a service's, which
// the run's cloud record does not hold). A scale-up by the autoscaler
// meanwhile stops it, as it stops scaleDown.
func (s *shrinker) shrinkBackTo(ctx context.Context, sr *state.ScaleRecord, orig plan.Sizes) error {
	if _, err := s.shrinkToOriginal(ctx, sr, orig); err != nil {
		return err
	}
	sizes, err := s.setMaxBack(ctx, orig.Max)
	if err != nil {
		return err
	}
	if s.tally.note == "" {
		s.logf("%s %q is back to %s", s.words.groupKind(), s.pool.GroupName(), s.cfg.Plan.Cloud.SizeText(sizes))
	}
	return nil
}

// shrinkToOriginal removes nodes one at a time until the group is back to
// the desired size recorded before the run; it reports whether the
// cluster autoscaler scaled the group up meanwhile, which ends it.
func (s *shrinker) shrinkToOriginal(ctx context.Context, sr *state.ScaleRecord, orig plan.Sizes) (autoscaled bool, err error) {
	for {
		err := s.scaleDownOne(ctx, sr, orig)
		if errors.Is(err, errAutoscaled) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if sr.Shrinking == "" && sr.LastDesired <= orig.Desired {
			return false, nil
		}
	}
}

// scaleDownOne removes one node, or finds there is nothing left to remove.
// Its steps are recorded so that a run killed anywhere in it finishes the
// step rather than mistaking its own change for the autoscaler's: the
// victim (Shrinking) before its drain, the size it will leave (ShrinkTo)
// before the termination, and both cleared after it.
func (s *shrinker) scaleDownOne(ctx context.Context, sr *state.ScaleRecord, orig plan.Sizes) error {
	sizes, err := s.pool.Sizes(ctx)
	if err != nil {
		return err
	}
	if sr.Shrinking != "" && sr.ShrinkTo != 0 {
		switch sizes.Desired {
		case sr.ShrinkTo: // terminated; only the record was not cleared
			s.shrunk.Insert(sr.Shrinking)
			sr.Shrinking, sr.ShrinkTo = "", 0
			return s.save(ctx)
		case sr.ShrinkTo + 1: // drained and recorded, not terminated yet
			return s.terminateVictim(ctx, sr, sr.Shrinking)
		}
	}
	if sizes.Desired > sr.LastDesired {
		return s.stopScaleDown(ctx, sr, orig, sizes.Desired)
	}
	if sizes.Desired <= orig.Desired {
		sr.Shrinking, sr.ShrinkTo, sr.LastDesired = "", 0, sizes.Desired
		return s.save(ctx)
	}
	victim, err := s.drainVictim(ctx, sr, orig, sizes)
	if failed := unlaunchable(err); failed != nil && s.aborting {
		return s.dropUnlaunchable(ctx, sr, sizes, failed)
	}
	if err != nil {
		return err
	}
	return s.terminateVictim(ctx, sr, victim)
}

// unlaunchable is the cloud's word that a machine of the group cannot be
// created (its quota, its zone's capacity); nil for any other error.
func unlaunchable(err error) *cloud.UpdateError {
	var ue cloud.UpdateError
	if errors.As(err, &ue) && ue.Code == cloud.CodeNodeCreation {
		return &ue
	}
	return nil
}

// dropUnlaunchable answers abort's wait for a machine the run launched
// that its cloud cannot create: no node will come for it, so the desired
// size comes down by one, which takes a machine not yet running before
// any other (Compute's resize:
// https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/resize).
// The size is lowered before it is recorded: a kill between leaves a
// size below the recorded one, which the next look does not mistake for
// the autoscaler's.
func (s *shrinker) dropUnlaunchable(ctx context.Context, sr *state.ScaleRecord, sizes plan.Sizes, failed *cloud.UpdateError) error {
	g, ok := s.pool.(cloud.Scaler)
	if !ok {
		return *failed
	}
	s.logf("scale-down: %s cannot be created (%s); desired %d -> %d drops it", listNames(quoteEach(failed.Nodes), waitNamesShown), failed.Message, sizes.Desired, sizes.Desired-1)
	if err := g.SetDesiredAndMax(ctx, sizes.Desired-1, sizes.Max); err != nil {
		return fmt.Errorf("scale-down: error when lowering the desired size of %s %q: %w", s.words.groupKind(), s.pool.GroupName(), err)
	}
	sr.Shrinking, sr.ShrinkTo, sr.LastDesired = "", 0, sizes.Desired-1
	return s.save(ctx)
}

// drainVictim picks the node to remove (or takes the recorded one),
// records it, drains it, and records the size its termination leaves,
// unless the desired size moved during the drain.
func (s *shrinker) drainVictim(ctx context.Context, sr *state.ScaleRecord, orig, sizes plan.Sizes) (string, error) {
	victim := sr.Shrinking
	if victim == "" || !s.nodes.nodeExists(victim) {
		var err error
		if victim, err = s.scaleDownVictim(ctx); err != nil {
			return "", err
		}
		sr.Shrinking, sr.ShrinkTo = victim, 0
		if err := s.save(ctx); err != nil {
			return "", err
		}
	}
	s.logf("scale-down: removing node %q, desired %d -> %d", victim, sizes.Desired, sizes.Desired-1)
	if err := s.drainForScaleDown(ctx, victim); err != nil {
		return "", err
	}
	// The drain took a while: look again, so a scale-up by the
	// autoscaler meanwhile is not answered by shrinking the group.
	now, err := s.pool.Sizes(ctx)
	if err != nil {
		return "", err
	}
	if now.Desired != sizes.Desired {
		return "", s.stopScaleDown(ctx, sr, orig, now.Desired)
	}
	sr.ShrinkTo, sr.LastDesired = sizes.Desired-1, sizes.Desired-1
	return victim, s.save(ctx)
}

// terminateVictim removes the drained victim's machine with the desired
// size lowered, clears the record, and waits for the machine to go.
func (s *shrinker) terminateVictim(ctx context.Context, sr *state.ScaleRecord, victim string) error {
	if err := s.hooks.run(ctx, plan.HookPreTerminate, []string{victim}); err != nil {
		return err
	}
	if err := s.batches.deregister(ctx, "scale-down", []string{victim}); err != nil {
		return err
	}
	if err := s.holdRebalance(ctx); err != nil {
		return err
	}
	s.cfg.Events.Node(ctx, victim, corev1.EventTypeNormal, "NodeUpgradeRemoved", "scale-down: removing its machine and lowering the desired size")
	id, err := s.machineOf(ctx, victim)
	if err != nil {
		return fmt.Errorf("scale-down: error when removing node %q: %w", victim, err)
	}
	g, err := s.shrinkable()
	if err != nil {
		return err
	}
	if err := g.Shrink(ctx, victim); err != nil {
		return fmt.Errorf("scale-down: error when removing node %q: %w", victim, err)
	}
	s.shrunk.Insert(victim)
	s.nodes.written.forget(victim)
	sr.Shrinking, sr.ShrinkTo = "", 0
	if err := s.save(ctx); err != nil {
		return err
	}
	return s.awaitGone(ctx, map[string]string{victim: id})
}

// stopScaleDown ends the scale-down because the desired size went up
// under it: the node being removed is put back in service.
func (s *shrinker) stopScaleDown(ctx context.Context, sr *state.ScaleRecord, orig plan.Sizes, desired int32) error {
	s.tally.note = fmt.Sprintf("the scale-down stopped: %s %q has desired size %d, above the %d this run set, so the cluster autoscaler scaled it up; the size is left as it is (before the run: %s)",
		s.words.groupKind(), s.pool.GroupName(), desired, sr.LastDesired, orig)
	if left := s.deferredLeft(); len(left) > 0 {
		s.tally.note += fmt.Sprintf("; the outdated nodes %s, left to the scale-down by the rollback, stay: %s replaces them", listNames(quoteEach(left), waitNamesShown), s.runBackTo(s.cloudRecord().FromVersion))
	}
	s.logf("%s", s.cfg.Color.Yellow(s.tally.note))
	if sr.Shrinking != "" {
		always := func(*corev1.Node) bool { return true }
		if _, err := s.nodes.releaseMarks(ctx, []string{sr.Shrinking}, always, "NodeUpgradeReleased", "back in service: the scale-down stopped"); err != nil {
			return err
		}
		sr.Shrinking, sr.ShrinkTo = "", 0
	}
	sr.LastDesired = desired
	if err := s.save(ctx); err != nil {
		return err
	}
	return errAutoscaled
}

// pickScaleDownNode chooses the node whose removal costs least: from the
// zone with the most nodes, so zones stay balanced, the one with the
// fewest pods. A rollback removes the outdated nodes its plan deferred
// (plan.Plan.Deferred) before any other. Abort undoes the run: it removes
// the nodes on the target before any outdated one.
func (s *shrinker) pickScaleDownNode() (string, error) {
	all, err := s.nodes.groupNodes()
	if err != nil {
		return "", err
	}
	// Nodes already removed may linger until their instance is gone, and
	// cordoned ones are someone's (or an earlier step's): neither is picked.
	var nodes []*corev1.Node
	perZone := map[string]int{}
	for _, n := range all {
		if !s.shrunk.Has(n.Name) && !n.Spec.Unschedulable {
			nodes = append(nodes, n)
			perZone[n.Labels[plan.ZoneLabel]]++
		}
	}
	kept, deferred := s.keptOutdated(), s.deferred()
	var best *corev1.Node
	var bestKey victimKey
	for _, n := range nodes {
		k := victimKey{deferred: deferred.Has(n.Name), outdated: kept.Has(n.Name), zoneNodes: perZone[n.Labels[plan.ZoneLabel]], ready: capacity.NodeReady(n)}
		for _, p := range s.nodes.view.podsOn(n.Name) {
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
	deferred  bool // a rollback's outdated node no batch replaced
	outdated  bool // abort keeps it as long as a node on the target is left
	zoneNodes int
	ready     bool
	pods      int
}

// before says a node of key k goes before one of key o: deferred, then
// not kept, then from a fuller zone, then not Ready, then with fewer pods.
func (k victimKey) before(o victimKey) bool {
	switch {
	case k.deferred != o.deferred:
		return k.deferred
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
// version before the run, which abort makes the group launch again. The
// nodes a rollback deferred are outdated as much as those it batched.
func (s *shrinker) keptOutdated() sets.Set[string] {
	if !s.aborting {
		return nil
	}
	return sets.New(s.cfg.Plan.OutdatedNames()...).Insert(s.cfg.Plan.DeferredNames()...)
}

// deferred are the outdated nodes a rollback left to its scale-down
// (plan.Plan.Deferred), which removes them first; abort keeps them.
func (s *shrinker) deferred() sets.Set[string] {
	if s.aborting {
		return nil
	}
	return sets.New(s.cfg.Plan.DeferredNames()...)
}

// deferredLeft are the nodes the rollback deferred to the scale-down
// (plan.Plan.Deferred) that it has not removed.
func (s *shrinker) deferredLeft() []string {
	var left []string
	for _, n := range s.cfg.Plan.DeferredNames() {
		if s.nodes.nodeExists(n) && !s.shrunk.Has(n) {
			left = append(left, n)
		}
	}
	return left
}

// scaleDownVictim picks the node the scale-down removes next. Abort does
// not take an outdated node while machines the run launched have no node
// yet (a run killed in its scale-up): it waits for their nodes, which it
// removes instead, so the group is left as it was before the run.
func (s *shrinker) scaleDownVictim(ctx context.Context) (string, error) {
	if victim, err := s.pickScaleDownNode(); err == nil && !s.keptOutdated().Has(victim) || !s.aborting {
		return victim, err
	}
	if err := s.awaitJoined(ctx); err != nil {
		return "", err
	}
	return s.pickScaleDownNode()
}

// awaitJoined waits, up to --node-ready-timeout, until every machine of
// the group that is not leaving stands for a node.
func (s *shrinker) awaitJoined(ctx context.Context) error {
	var waiting []string
	logged := false
	return s.arrivals.awaitLook(ctx, func(ctx context.Context) (bool, error) {
		nodes, err := s.nodes.groupNodes()
		if err != nil {
			return false, err
		}
		_, pending, err := s.pool.Machines(ctx, nodes)
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
			s.logf("scale-down: waiting up to %s for the nodes of machines %s, so that they go rather than an outdated node", s.cfg.NodeReadyTimeout, listNames(quoteEach(waiting), waitNamesShown))
		}
		s.progress.waitingFor(fmt.Sprintf("the nodes of %d machines", len(waiting)))
		return len(waiting) == 0, nil
	}, func() error {
		return fmt.Errorf("scale-down: machines %s of %s %q have no node after %s (the run's --node-ready-timeout); an outdated node removed in their place would leave the group short of nodes: terminate them with the desired size lowered, or wait for their nodes, and run \"kubectl nodeupgrade abort\" again",
			listNames(quoteEach(waiting), waitNamesShown), s.words.groupKind(), s.pool.GroupName(), s.cfg.NodeReadyTimeout)
	})
}

// drainForScaleDown cordons and drains a node as an outdated one would be:
// room first, PDBs honoured, then the post-drain wait for load balancers.
func (s *shrinker) drainForScaleDown(ctx context.Context, name string) error {
	if err := s.nodes.setUnschedulable(ctx, []string{name}, true); err != nil {
		return err
	}
	if err := s.batches.awaitRoom(ctx, fmt.Sprintf("scale-down: the pods of %q", name), []string{name}, sets.New(name),
		fmt.Sprintf("scale-down: not enough room for the pods of node %q", name), "run again when there is, or put the group back in service with \"kubectl nodeupgrade abort\""); err != nil {
		return err
	}
	if err := s.hooks.run(ctx, plan.HookPreDrain, []string{name}); err != nil {
		return err
	}
	if err := s.nodes.excludeFromLoadBalancers(ctx, []string{name}); err != nil {
		return err
	}
	s.progress.waitingFor(fmt.Sprintf("the pods to leave %q", name))
	if _, err := s.batches.drainer.DrainNodes(ctx, []string{name}); err != nil {
		return err
	}
	if err := s.batches.postDrainWait(ctx, fmt.Sprintf("scale-down: node %q drained", name), "it"); err != nil {
		return err
	}
	return s.hooks.run(ctx, plan.HookPostDrain, []string{name})
}
