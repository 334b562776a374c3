// Package upgrade runs a plan: the phases of the EKS update as an explicit
// state machine over the plan's batches.
package upgrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Phase is a state of the upgrade state machine.
type Phase string

// The phases, in the order a run goes through them. WaitForRoom to Recover
// repeat once per batch.
const (
	PhaseSetup   Phase = "Setup"
	PhaseScaleUp Phase = "ScaleUp"
	PhaseTaint   Phase = "Taint"
	PhaseSurge   Phase = "Surge"
	// The blue/green phases.
	PhaseCreateGreen Phase = "CreateGreen"
	PhaseCordonBlue  Phase = "CordonBlue"
	PhaseBatchSoak   Phase = "BatchSoak"
	PhaseSoak        Phase = "Soak"
	PhaseDeleteBlue  Phase = "DeleteBlue"
	PhaseRollback    Phase = "Rollback"
	PhaseRoom        Phase = "WaitForRoom"
	PhaseDrain       Phase = "Drain"
	PhaseCordon      Phase = "Cordon"
	PhaseRemove      Phase = "Remove"
	PhaseRecover     Phase = "Recover"
	PhaseScaleDown   Phase = "ScaleDown"
	PhaseDone        Phase = "Done"
)

// BatchPhase reports whether the phase works on one batch of nodes.
func BatchPhase(p Phase) bool {
	switch p {
	case PhaseSurge, PhaseRoom, PhaseDrain, PhaseCordon, PhaseRemove, PhaseRecover, PhaseBatchSoak:
		return true
	}
	return false
}

// State is where the run is: the phase and, in the batch phases, the batch.
type State struct {
	Phase Phase
	Batch int // index into Plan.Batches
}

// Config is what a run needs.
type Config struct {
	Client   kubernetes.Interface
	Plan     *plan.Plan
	Taint    corev1.Taint
	Drain    drain.Options
	Provider cloud.Provider
	// PostDrainWait lets load balancers deregister a cordoned node before
	// it is removed.
	PostDrainWait time.Duration
	// RecoverTimeout bounds the wait for evicted workloads to be Ready
	// elsewhere before the next batch.
	RecoverTimeout time.Duration
	// RoomTimeout bounds the wait for room for a batch's pods (new capacity).
	RoomTimeout time.Duration
	// Events records Kubernetes Events on nodes and pods; nil records none.
	Events *Recorder
	// OnProgress is told every state the run enters, and the nodes done, so
	// the caller can keep a record; an error stops the run.
	OnProgress func(ctx context.Context, s State, done []string) error
	// Start is the phase to begin with: ScaleDown to finish a run
	// interrupted there; empty for the first phase.
	Start Phase
	// Record is the run's record; with a cloud group the engine writes its
	// Cloud part before each change to the group, through Save.
	Record *state.Record
	Save   func(ctx context.Context) error
	// Control carries requests from other terminals (cancel, complete,
	// rollback); nil takes none.
	Control Control
	// NoWait leaves a run at its soak, recorded as soaking until a time,
	// instead of waiting it out.
	NoWait bool
	// PollInterval is how often the cloud group is described while new
	// machines are awaited (node events also trigger a look); 5s when 0.
	PollInterval time.Duration
	Out          io.Writer
	Color        output.Colorizer
	// Now is the clock of progress lines; time.Now when nil.
	Now func() time.Time
}

// Engine runs one plan.
type Engine struct {
	cfg     Config
	drainer *drain.Drainer
	mu      sync.Mutex // serialises progress lines from parallel drains
	evicted []corev1.Pod
	view    *clusterView
	ctx     context.Context // for events recorded from drain callbacks
	done    []string
	group   cloud.Group // nil unless the provider resizes a group
	note    string
	shrunk  sets.Set[string] // nodes the scale-down removed
}

// New prepares an engine.
func New(cfg Config) *Engine {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Second
	}
	e := &Engine{cfg: cfg, shrunk: sets.New[string]()}
	if g, ok := cfg.Provider.(cloud.Group); ok {
		e.group = g
	}
	userHook := cfg.Drain.OnEvent
	cfg.Drain.OnEvent = func(ev drain.Event) {
		e.reportDrainEvent(ev)
		if userHook != nil {
			userHook(ev)
		}
	}
	e.drainer = drain.New(cfg.Client, cfg.Drain)
	return e
}

// OnProgress sets the progress callback (see Config.OnProgress).
func (e *Engine) OnProgress(f func(ctx context.Context, s State, done []string) error) {
	e.cfg.OnProgress = f
}

// Run drives the state machine from the start to Done.
func (e *Engine) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the informers
	e.ctx = ctx
	view, err := newClusterView(ctx, e.cfg.Client)
	if err != nil {
		return err
	}
	e.view = view
	state := State{Phase: e.cfg.Start}
	if state.Phase == "" {
		state.Phase = first(e.flow())
	}
	for {
		if e.cfg.OnProgress != nil {
			if err := e.cfg.OnProgress(ctx, state, e.done); err != nil {
				return err
			}
		}
		if state.Phase == PhaseDone {
			break
		}
		// Between phases is the safe point for requests from another
		// terminal (cancel, rollback).
		if redirect, err := e.checkRequests(ctx, state); err != nil {
			return err
		} else if redirect != nil {
			state = *redirect
			continue
		}
		next, err := e.step(ctx, state)
		if errors.Is(err, errRollbackRequested) {
			next, err = State{Phase: PhaseRollback, Batch: state.Batch}, nil
		}
		if err != nil {
			return err
		}
		state = next
	}
	e.logf("upgrade of %d nodes finished", len(e.done))
	return nil
}

// Note is what the run wants the operator to know though it succeeded.
func (e *Engine) Note() string { return e.note }

// step performs one phase and returns the next state.
func (e *Engine) step(ctx context.Context, s State) (State, error) {
	var err error
	switch s.Phase {
	case PhaseSetup:
		if e.flow().blueGreen {
			err = e.prepareTarget(ctx)
		} else {
			err = e.setup(ctx)
		}
	case PhaseScaleUp:
		err = e.scaleUp(ctx)
	case PhaseScaleDown:
		err = e.scaleDown(ctx)
	case PhaseSurge:
		err = e.surge(ctx, s.Batch)
	case PhaseCreateGreen:
		err = e.createGreen(ctx)
	case PhaseCordonBlue:
		err = e.cordonBlue(ctx)
	case PhaseBatchSoak:
		err = e.soakFor(ctx, time.Duration(e.cfg.Plan.BlueGreen.BatchSoak), fmt.Sprintf("batch %d/%d: soak", s.Batch+1, len(e.cfg.Plan.Batches)))
	case PhaseSoak:
		err = e.soak(ctx)
	case PhaseDeleteBlue:
		err = e.deleteBlue(ctx)
	case PhaseRollback:
		err = e.rollback(ctx)
	case PhaseTaint:
		err = e.taintAll(ctx)
	case PhaseRoom:
		err = e.waitForRoom(ctx, s.Batch)
	case PhaseDrain:
		err = e.drainBatch(ctx, s.Batch)
	case PhaseCordon:
		err = e.cordonBatch(ctx, s.Batch)
	case PhaseRemove:
		err = e.removeBatch(ctx, s.Batch)
	case PhaseRecover:
		err = e.waitRecovered(ctx, s.Batch)
	default:
		err = fmt.Errorf("unknown phase %q", s.Phase)
	}
	if err != nil {
		return s, err
	}
	return next(s, e.flow()), nil
}

// first is the phase a run starts in.
func first(f flow) Phase {
	switch {
	case f.blueGreen:
		return PhaseSetup
	case f.cloudGroup:
		return PhaseSetup
	case f.surge && f.batches > 0:
		return PhaseRoom
	case f.surge:
		return PhaseDone
	}
	return PhaseTaint
}

// flow is what the transitions depend on.
type flow struct {
	batches    int
	cloudGroup bool // Setup first, ScaleDown (back to the recorded sizes) last
	surge      bool // no ScaleUp or Taint; each batch starts with its surge nodes
	blueGreen  bool // a green group beside blue, blue drained, soaked, deleted
	autoscaled bool // blue/green grown and shrunk by the autoscaler: wait, then drain
	shortLived bool // only Setup
}

func (e *Engine) flow() flow {
	return flow{batches: len(e.cfg.Plan.Batches), cloudGroup: e.group != nil, surge: e.cfg.Plan.Strategy == plan.StrategySurge,
		blueGreen: plan.IsBlueGreen(e.cfg.Plan.Strategy), autoscaled: e.cfg.Plan.Strategy == plan.StrategyAutoscaled,
		shortLived: e.cfg.Plan.Strategy == plan.StrategyShortLived}
}

// next is the transition table of the state machine. The eks strategy
// taints every outdated node, then drains batch after batch; with a cloud
// group the batches are wrapped in Setup and ScaleUp before and ScaleDown
// after. The surge strategy adds its surge nodes at the start of each batch
// instead, and taints nothing.
func next(s State, f flow) State {
	if f.blueGreen {
		return nextBlueGreen(s, f)
	}
	if f.shortLived {
		return State{Phase: PhaseDone} // Setup is all it does
	}
	end := State{Phase: PhaseDone, Batch: s.Batch}
	if f.cloudGroup {
		end.Phase = PhaseScaleDown
	}
	batchStart := PhaseRoom
	if f.surge && f.cloudGroup {
		batchStart = PhaseSurge
	}
	switch s.Phase {
	case PhaseSetup:
		switch {
		case !f.surge:
			return State{Phase: PhaseScaleUp}
		case f.batches > 0:
			return State{Phase: batchStart}
		}
		return end
	case PhaseScaleUp:
		return State{Phase: PhaseTaint}
	case PhaseScaleDown:
		return State{Phase: PhaseDone, Batch: s.Batch}
	case PhaseTaint:
		if f.batches > 0 {
			return State{Phase: batchStart}
		}
		return end
	case PhaseSurge:
		return State{Phase: PhaseRoom, Batch: s.Batch}
	case PhaseRoom:
		return State{Phase: PhaseDrain, Batch: s.Batch}
	case PhaseDrain:
		return State{Phase: PhaseCordon, Batch: s.Batch}
	case PhaseCordon:
		return State{Phase: PhaseRemove, Batch: s.Batch}
	case PhaseRemove:
		return State{Phase: PhaseRecover, Batch: s.Batch}
	case PhaseRecover:
		if s.Batch+1 < f.batches {
			return State{Phase: batchStart, Batch: s.Batch + 1}
		}
		return end
	}
	return State{Phase: PhaseDone, Batch: s.Batch}
}

// nextBlueGreen is the transition table of blue/green: the blue nodes are
// only drained in the batches (they stay, cordoned, until DeleteBlue).
func nextBlueGreen(s State, f flow) State {
	switch s.Phase {
	case PhaseSetup:
		return State{Phase: PhaseCreateGreen}
	case PhaseCreateGreen:
		return State{Phase: PhaseCordonBlue}
	case PhaseCordonBlue:
		if f.batches > 0 && !f.autoscaled {
			return State{Phase: PhaseRoom}
		}
		return State{Phase: PhaseSoak}
	case PhaseRoom:
		return State{Phase: PhaseDrain, Batch: s.Batch}
	case PhaseDrain:
		return State{Phase: PhaseRecover, Batch: s.Batch}
	case PhaseRecover:
		switch {
		case f.autoscaled && s.Batch+1 < f.batches:
			return State{Phase: PhaseDrain, Batch: s.Batch + 1}
		case f.autoscaled:
			return State{Phase: PhaseDeleteBlue, Batch: s.Batch}
		case s.Batch+1 < f.batches:
			return State{Phase: PhaseBatchSoak, Batch: s.Batch}
		}
		return State{Phase: PhaseSoak, Batch: s.Batch}
	case PhaseBatchSoak:
		return State{Phase: PhaseRoom, Batch: s.Batch + 1}
	case PhaseSoak:
		// Autoscaled: the wait period is over; drain what the autoscaler
		// left of blue, with no room check (the autoscaler makes room).
		if f.autoscaled && f.batches > 0 {
			return State{Phase: PhaseDrain}
		}
		return State{Phase: PhaseDeleteBlue, Batch: s.Batch}
	}
	return State{Phase: PhaseDone, Batch: s.Batch}
}

func (e *Engine) batchNodes(i int) []string {
	var names []string
	for _, n := range e.cfg.Plan.Batches[i].Nodes {
		names = append(names, n.Name)
	}
	return names
}

// taintAll keeps new pods off every outdated node before any is drained,
// so evicted pods do not land on a node drained later.
func (e *Engine) taintAll(ctx context.Context) error {
	names := e.cfg.Plan.OutdatedNames()
	e.logf("tainting %d outdated nodes with %s", len(names), plan.TaintString(e.cfg.Taint))
	for _, name := range names {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := e.cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == e.cfg.Taint.Key && t.Effect == e.cfg.Taint.Effect
			}) {
				return nil
			}
			node.Spec.Taints = append(node.Spec.Taints, e.cfg.Taint)
			_, err = e.cfg.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			if err == nil {
				e.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeTainted", "tainted %s: outdated (%s)", plan.TaintString(e.cfg.Taint), e.planDescription())
			}
			return err
		})
		if apierrors.IsNotFound(err) {
			continue // removed by an earlier run or by someone else
		}
		if err != nil {
			return fmt.Errorf("tainting node %q: %w", name, err)
		}
	}
	return e.releaseCurrent(ctx)
}

// releaseCurrent takes the upgrade's taint, and the cordon that came with
// it, off the group's nodes that are not outdated now: a run towards
// another target (one rolled back) left them, and they must serve again.
// A node cordoned without the taint is someone else's business.
func (e *Engine) releaseCurrent(ctx context.Context) error {
	nodes, err := e.groupNodes()
	if err != nil {
		return err
	}
	outdated := sets.New(e.cfg.Plan.OutdatedNames()...)
	ours := func(t corev1.Taint) bool { return t.Key == e.cfg.Taint.Key && t.Effect == e.cfg.Taint.Effect }
	for _, n := range nodes {
		if outdated.Has(n.Name) || !slices.ContainsFunc(n.Spec.Taints, ours) {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := e.cfg.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, ours)
			node.Spec.Unschedulable = false
			_, err = e.cfg.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("untainting node %q: %w", n.Name, err)
		}
		e.logf("node %q is current now: taken out of the upgrade (untainted, uncordoned)", n.Name)
	}
	return nil
}

// waitForRoom holds a batch until the pods it will evict fit on the nodes
// that stay schedulable, so nothing is evicted into Pending.
func (e *Engine) waitForRoom(ctx context.Context, i int) error {
	names := e.batchNodes(i)
	// Under eks every outdated node is tainted and takes nothing; under
	// surge the other old nodes stay schedulable.
	excluded := sets.New(e.cfg.Plan.OutdatedNames()...)
	if e.flow().surge {
		excluded = sets.New(names...)
	}
	room := e.view.room(names, excluded)
	if room.Fits() {
		return nil
	}
	e.logf("batch %d/%d: waiting up to %s for room: %s", i+1, len(e.cfg.Plan.Batches), e.cfg.RoomTimeout, room)
	wctx, cancel := context.WithTimeout(ctx, e.cfg.RoomTimeout)
	defer cancel()
	room, err := e.view.waitForRoom(wctx, names, excluded, time.Second)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("not enough room for batch %d after %s: %s; add capacity or lower --max-unavailable, then run again", i+1, e.cfg.RoomTimeout, room)
	}
	return err
}

func (e *Engine) drainBatch(ctx context.Context, i int) error {
	names := e.batchNodes(i)
	if e.flow().autoscaled {
		// The autoscaler may have removed some during the wait period.
		names = slices.DeleteFunc(names, func(n string) bool { return !e.nodeExists(n) })
		if len(names) == 0 {
			return nil
		}
	}
	if e.flow().surge {
		// Surge cordons each node before its drain, as GKE does: nothing
		// tainted it before.
		for _, n := range names {
			if err := e.cordon(ctx, n); err != nil {
				return err
			}
		}
	}
	e.logf("batch %d/%d: draining %s", i+1, len(e.cfg.Plan.Batches), quoteAll(names))
	for _, n := range names {
		e.cfg.Events.Node(ctx, n, corev1.EventTypeNormal, "NodeUpgradeDraining", "draining for %s, batch %d of %d", e.planDescription(), i+1, len(e.cfg.Plan.Batches))
	}
	results, err := e.drainer.DrainNodes(ctx, names)
	e.evicted = e.evicted[:0]
	for _, r := range results {
		e.evicted = append(e.evicted, r.Evicted...)
	}
	var failure *drain.PodEvictionFailure
	if errors.As(err, &failure) {
		e.cfg.Events.Node(ctx, failure.Node, corev1.EventTypeWarning, "PodEvictionFailure", "%s", failure.Error())
	}
	return err
}

func (e *Engine) planDescription() string {
	if e.cfg.Plan.Selector != "" {
		return "upgrade of nodes " + e.cfg.Plan.Selector
	}
	return fmt.Sprintf("upgrade of node group %q", e.cfg.Plan.NodeGroup)
}

func (e *Engine) cordonBatch(ctx context.Context, i int) error {
	names := e.batchNodes(i)
	for _, name := range names {
		if err := e.cordon(ctx, name); err != nil {
			return err
		}
		e.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeCordoned", "drained and cordoned; removal in %s", e.cfg.PostDrainWait)
	}
	if e.cfg.PostDrainWait > 0 {
		e.logf("batch %d/%d: cordoned %s; waiting %s for load balancers to deregister them", i+1, len(e.cfg.Plan.Batches), quoteAll(names), e.cfg.PostDrainWait)
		return sleep(ctx, e.cfg.PostDrainWait)
	}
	return nil
}

// sleep waits d, or less if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (e *Engine) removeBatch(ctx context.Context, i int) error {
	for _, name := range e.batchNodes(i) {
		e.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeRemoved", "removing: %s", e.cfg.Provider.Describe())
		removed, err := e.removeNode(ctx, name)
		if err != nil {
			return fmt.Errorf("removing node %q: %w", name, err)
		}
		e.logf("node %q: %s", name, removed)
		e.done = append(e.done, name)
	}
	if e.flow().surge && e.group != nil {
		return e.restoreMax(ctx)
	}
	return nil
}

func (e *Engine) waitRecovered(ctx context.Context, i int) error {
	if e.group != nil && e.flow().surge {
		if err := e.waitReplacements(ctx); err != nil {
			return err
		}
	}
	if e.group != nil {
		// The group has launched replacements: keep the autoscaler off them.
		if err := e.protectNewNodes(ctx, true); err != nil {
			return err
		}
	}
	owners := OwnersOf(e.evicted)
	if len(owners) == 0 {
		return nil
	}
	e.logf("batch %d/%d: waiting for %d workloads to be Ready again", i+1, len(e.cfg.Plan.Batches), len(owners))
	wctx, cancel := context.WithTimeout(ctx, e.cfg.RecoverTimeout)
	defer cancel()
	err := WaitOwnersReady(wctx, e.cfg.Client, owners)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("workloads evicted in batch %d did not recover within %s: %w; re-run when they are Ready, or raise --drain-timeout", i+1, e.cfg.RecoverTimeout, err)
	}
	return err
}

func (e *Engine) reportDrainEvent(ev drain.Event) {
	switch ev.Type {
	case drain.EventEvicted:
		e.logf("node %q: evicted pod %q", ev.Node, ev.Namespace+"/"+ev.Pod)
	case drain.EventDeleted:
		e.logf("node %q: deleted pod %q", ev.Node, ev.Namespace+"/"+ev.Pod)
	case drain.EventBlocked:
		msg := fmt.Sprintf("node %q: eviction of pod %q blocked", ev.Node, ev.Namespace+"/"+ev.Pod)
		for _, p := range ev.PDBs {
			msg += " by " + p.String()
		}
		if len(ev.PDBs) == 0 && ev.Message != "" {
			msg += ": " + ev.Message
		}
		e.logf("%s", e.cfg.Color.Yellow(msg))
		e.cfg.Events.Pod(e.ctx, ev.Namespace, ev.Pod, corev1.EventTypeWarning, "EvictionBlocked", "%s", msg)
	case drain.EventDrained:
		e.logf("node %q: drained", ev.Node)
		e.cfg.Events.Node(e.ctx, ev.Node, corev1.EventTypeNormal, "NodeUpgradeDrained", "every evictable pod has left the node")
	}
}

func (e *Engine) logf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.cfg.Out, "%s %s\n", e.cfg.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func quoteAll(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", n)
	}
	return out
}
