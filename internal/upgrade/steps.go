package upgrade

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// step performs one phase of a run; batch is the state's batch.
type step func(ctx context.Context, batch int) error

// strategyRun is a strategy's execution in one run: a type of its own,
// in the strategy's file, holding what only it needs, whose steps call
// the engine's toolkit (the batch steps, hooks, waits, node writes) and
// the cloud group's.
type strategyRun interface {
	// steps are the steps only this strategy runs, by phase.
	steps() map[plan.Phase]step
}

// outdatedHolder is a run that holds every outdated node off (tainted or
// cordoned) while its batches run: none of them takes a batch's pods.
type outdatedHolder interface{ holdsOutdatedOff() }

// liveRollback reports whether the run turns around at its next safe point
// when rollback is asked for: it has a Rollback step (blue/green). The
// others are rolled back once stopped.
func (e *Engine) liveRollback() bool {
	_, ok := e.steps[plan.PhaseRollback]
	return ok
}

// strategyRuns make each strategy's run over an engine's toolkit,
// registered in its own file.
var strategyRuns = map[plan.StrategyName]func(t toolkit) strategyRun{}

// registerSteps registers the execution of strategy: newRun makes its
// run type, whose steps come with the batch toolkit's.
func registerSteps(strategy plan.StrategyName, newRun func(t toolkit) strategyRun) {
	strategyRuns[strategy] = newRun
}

// batchRun runs the batch phases every strategy shares (room, drain,
// cordon, remove, recover) with the parts they use; drainer is made
// once the run watches the cluster (its pods come from the view).
type batchRun struct {
	cfg        *Config
	strategy   plan.Strategy
	group      *cloudGroup
	nodes      *nodeWriter
	recoveries *recoveries
	tally      *tally
	words      cloudWords
	hooks      hooks
	progress   *progress
	drainer    *drain.Drainer
	evicted    []corev1.Pod // by the last batch's drain
	// heldOff: the strategy holds every outdated node off while its
	// batches run (outdatedHolder), so none of them takes a batch's pods.
	heldOff bool
	logf    func(format string, args ...any)
	record  func(ctx context.Context, s plan.State) error
	room    *roomMaker // --make-room's surges around each drain
}

// flow is what the strategy's transitions depend on in this run.
func (b *batchRun) flow() plan.Flow { return runFlow(b.cfg.Plan, b.group.pool) }

// batchSteps are the toolkit every strategy's batches share: wait for
// room, drain, cordon, remove, wait for the workloads.
func (b *batchRun) batchSteps() map[plan.Phase]step {
	return map[plan.Phase]step{
		plan.PhaseRoom:    b.waitForRoom,
		plan.PhaseDrain:   b.drainBatch,
		plan.PhaseCordon:  b.cordonBatch,
		plan.PhaseRemove:  b.removeBatch,
		plan.PhaseRecover: b.waitRecovered,
	}
}

// stepsOf makes the run of e's strategy and returns its steps by phase,
// with the batch toolkit's; nil for a strategy that registered none.
func stepsOf(e *Engine) (strategyRun, map[plan.Phase]step) {
	if e.cfg.Plan.Managed != nil {
		run := newManagedRun(e)
		return run, run.steps()
	}
	newRun, ok := strategyRuns[e.strategy.Name()]
	if !ok {
		return nil, nil
	}
	run := newRun(e.toolkit())
	steps := e.batches.batchSteps()
	maps.Copy(steps, run.steps())
	return run, steps
}

// unbatched adapts a step that takes no batch.
func unbatched(f func(ctx context.Context) error) step {
	return func(ctx context.Context, _ int) error { return f(ctx) }
}

// step performs one phase with the strategy's step for it, or the
// service's where the cloud's service runs the update.
func (e *Engine) step(ctx context.Context, s plan.State) error {
	run, ok := e.steps[s.Phase]
	switch {
	case !ok && e.cfg.Plan.Managed != nil:
		return fmt.Errorf("cannot run phase %q of a service's update: no step does it", s.Phase)
	case !ok:
		return fmt.Errorf("cannot run phase %q: strategy %q has no step for it", s.Phase, e.strategy.Name())
	}
	return run(ctx, s.Batch)
}

// waitForRoom holds a batch until the pods it will evict fit on the nodes
// that stay schedulable, so nothing is evicted into Pending.
func (b *batchRun) waitForRoom(ctx context.Context, i int) error {
	names := batchNodes(b.cfg.Plan, i)
	// Where every outdated node is held off (tainted or cordoned), none
	// takes pods; otherwise the other old nodes stay schedulable.
	excluded := sets.New(names...)
	if b.heldOff {
		excluded = sets.New(b.cfg.Plan.OutdatedNames()...)
	}
	failure := fmt.Sprintf("not enough room for batch %d", i+1)
	advice := "add capacity or lower --max-unavailable, then run again, or put the group back in service with \"kubectl nodeupgrade abort\""
	if room := b.nodes.view.room(names, excluded); !room.Fits() {
		if p, ok := b.cfg.Provider.(cloud.Provisioner); ok {
			b.logf("%s: %s; %s", batchLabel(b.cfg.Plan, i), room, p.Provisions())
			return nil
		}
		// Waiting makes sense only while something can add a node.
		if source, err := b.capacitySource(ctx); err != nil {
			return err
		} else if source == "" {
			return fmt.Errorf("%s: %s, and nothing will add a node (no machine of the group is on its way, no cluster autoscaler or Karpenter runs); %s", failure, room, advice)
		}
	}
	return b.awaitRoom(ctx, batchLabel(b.cfg.Plan, i), names, excluded, failure, advice)
}

// capacitySource names what can still add a node while a batch waits for
// room: machines of the group launched but not yet Ready nodes, or an
// autoscaler's pod; "" when nothing can.
func (b *batchRun) capacitySource(ctx context.Context) (string, error) {
	if b.group.pool != nil {
		nodes, err := b.nodes.groupNodes()
		if err != nil {
			return "", err
		}
		sizes, err := b.group.pool.Sizes(ctx)
		if err != nil {
			return "", err
		}
		ready := 0
		for _, n := range nodes {
			if capacity.NodeReady(n) && !n.Spec.Unschedulable {
				ready++
			}
		}
		if int(sizes.Desired) > ready {
			return fmt.Sprintf("%d machines of %s %q on their way", int(sizes.Desired)-ready, b.words.groupKind(), b.group.pool.GroupName()), nil
		}
	}
	if p := b.nodes.view.autoscalerPod(); p != "" {
		return "pod " + p, nil
	}
	return "", nil
}

// awaitRoom waits, up to --node-ready-timeout and driven by node and pod
// events, until the pods of names fit on the nodes not excluded.
func (b *batchRun) awaitRoom(ctx context.Context, what string, names []string, excluded sets.Set[string], failure, advice string) error {
	room := b.nodes.view.room(names, excluded)
	if room.Fits() {
		return nil
	}
	b.logf("%s: waiting up to %s for room: %s", what, b.cfg.NodeReadyTimeout, room)
	wctx, cancel := context.WithTimeout(ctx, b.cfg.NodeReadyTimeout)
	defer cancel()
	room, err := b.nodes.view.waitForRoom(wctx, names, excluded, time.Second, func(r capacity.Room) {
		b.progress.waitingFor("room for pods " + listNames(r.PodNames(), waitNamesShown))
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s after %s: %s; %s", failure, b.cfg.NodeReadyTimeout, room, advice)
	}
	return err
}

// batchNodesLeft are batch i's nodes that still exist: a node gone
// meanwhile (the autoscaler removed it) has nothing left to drain.
func (b *batchRun) batchNodesLeft(i int) []string {
	return slices.DeleteFunc(batchNodes(b.cfg.Plan, i), func(n string) bool { return !b.nodes.nodeExists(n) || b.quarantined(n) })
}

func (b *batchRun) drainBatch(ctx context.Context, i int) error {
	b.evicted = b.evicted[:0]
	defer func() {
		// What was listed before the drain and not evicted is not recovering.
		b.recoveries.recordRecovering(OwnersOf(b.evicted), b.recoveries.intended)
		b.recoveries.intended = nil
	}()
	names, err := b.skipHeld(ctx, b.batchNodesLeft(i))
	if err != nil || len(names) == 0 {
		return err
	}
	if err := b.room.beforeDrain(ctx, i, names); err != nil {
		return err
	}
	if err := b.hooks.run(ctx, plan.HookPreDrain, names); err != nil {
		return err
	}
	if err := b.nodes.excludeFromLoadBalancers(ctx, names); err != nil {
		return err
	}
	b.logf("%s: draining %s", batchLabel(b.cfg.Plan, i), quoteAll(names))
	b.progress.waitingFor("the pods to leave " + listNames(quoteEach(names), waitNamesShown))
	for _, n := range names {
		b.cfg.Events.Node(ctx, n, corev1.EventTypeNormal, "NodeUpgradeDraining", "draining for %s, batch %d of %d", planDescription(b.cfg.Plan), i+1, len(b.cfg.Plan.Batches))
	}
	dctx, cancel := b.recoveries.drainContext(ctx)
	defer cancel(nil)
	results, err := b.drainer.DrainNodes(dctx, names)
	if cause := context.Cause(dctx); ctx.Err() == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause // the last batch's workloads did not recover
	}
	for _, r := range results {
		b.evicted = append(b.evicted, r.Evicted...)
	}
	var failure *drain.PodEvictionFailure
	if errors.As(err, &failure) {
		b.cfg.Events.Node(ctx, failure.Node, corev1.EventTypeWarning, "PodEvictionFailure", "%s", failure.Error())
	}
	if err = b.quarantine(ctx, err); err != nil {
		return err
	}
	if err := b.room.afterDrain(ctx, i); err != nil {
		return err
	}
	// Without a Cordon phase next (blue/green keeps its drained nodes until
	// DeleteBlue), the drain is all there is before the post-drain hook.
	if b.strategy.Next(plan.State{Phase: plan.PhaseDrain, Batch: i}, b.flow()).Phase != plan.PhaseCordon {
		return b.hooks.run(ctx, plan.HookPostDrain, names)
	}
	return nil
}

func (b *batchRun) cordonBatch(ctx context.Context, i int) error {
	names := b.unquarantined(batchNodes(b.cfg.Plan, i))
	if err := b.nodes.setUnschedulable(ctx, names, true); err != nil {
		return err
	}
	for _, name := range names {
		b.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeCordoned", "drained and cordoned; removal in %s", b.cfg.PostDrainWait)
	}
	if err := b.postDrainWait(ctx, fmt.Sprintf("%s: cordoned %s", batchLabel(b.cfg.Plan, i), quoteAll(names)), "them"); err != nil {
		return err
	}
	return b.hooks.run(ctx, plan.HookPostDrain, names)
}

// postDrainWait gives load balancers --post-drain-wait to stop sending
// traffic to drained, cordoned nodes.
func (b *batchRun) postDrainWait(ctx context.Context, what, them string) error {
	if b.cfg.PostDrainWait <= 0 {
		return nil
	}
	b.logf("%s; waiting %s for load balancers to deregister %s", what, b.cfg.PostDrainWait, them)
	b.progress.waitingFor(fmt.Sprintf("load balancers to deregister %s (until %s)", them, b.cfg.Now().Add(b.cfg.PostDrainWait).Format("15:04:05")))
	return transport.Sleep(ctx, b.cfg.PostDrainWait)
}

func (b *batchRun) removeBatch(ctx context.Context, i int) error {
	return b.removeBatchWith(ctx, i, b.removeNode)
}

// removeBatchWith removes batch i's drained nodes with remove, which
// says what it did, and waits until their machines are gone.
func (b *batchRun) removeBatchWith(ctx context.Context, i int, remove func(context.Context, string) (string, error)) error {
	// A quarantined node keeps its machine: nothing removes it.
	names := b.unquarantined(batchNodes(b.cfg.Plan, i))
	if err := b.hooks.run(ctx, plan.HookPreTerminate, names); err != nil {
		return err
	}
	if err := b.deregister(ctx, batchLabel(b.cfg.Plan, i), names); err != nil {
		return err
	}
	leaving := map[string]string{}
	for _, name := range names {
		b.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeRemoved", "removing: %s", b.cfg.Provider.Describe())
		id, err := b.group.machineOf(ctx, name)
		if err != nil {
			return fmt.Errorf("error when removing node %q: %w", name, err)
		}
		b.nodes.written.forget(name) // no write of the run's follows
		removed, err := remove(ctx, name)
		if err != nil {
			return fmt.Errorf("error when removing node %q: %w", name, err)
		}
		b.logf("%s: %s", b.nodeWithMachine(i, name), removed)
		b.tally.done = append(b.tally.done, name)
		leaving[name] = id
		if err := b.record(ctx, plan.State{Phase: plan.PhaseRemove, Batch: i}); err != nil {
			return err
		}
	}
	return b.group.awaitGone(ctx, leaving)
}

// removeNode takes a drained node out as the provider removes nodes (the
// group replaces it). It returns what it did, for the log.
func (b *batchRun) removeNode(ctx context.Context, name string) (string, error) {
	r, ok := b.cfg.Provider.(cloud.Remover)
	if !ok {
		return "", fmt.Errorf("cannot remove node %q: provider %q does not remove nodes", name, b.cfg.Provider.Name())
	}
	return r.Describe(), r.RemoveNode(ctx, name)
}

// nodeWithMachine names a node of batch i with its machine's ID where the
// plan knows it, so "terminate the instance" says which.
func (b *batchRun) nodeWithMachine(i int, name string) string {
	for _, n := range b.cfg.Plan.Batches[i].Nodes {
		if n.Name == name && n.MachineID != "" {
			return fmt.Sprintf("node %q (instance %s)", name, n.MachineID)
		}
	}
	return fmt.Sprintf("node %q", name)
}
