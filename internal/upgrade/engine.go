// Package upgrade runs a plan: the phases its strategy declares, as an
// explicit state machine over the plan's batches, with each step written
// once for every strategy.
package upgrade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/transport"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

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
	// DeregistrationTimeout bounds the wait for the cloud's load balancers
	// to let go of a drained node (cloud.Deregisterer); 0 is
	// plan.DefaultDeregistrationTimeout.
	DeregistrationTimeout time.Duration
	// RecoverTimeout bounds the wait for a batch's evicted workloads to
	// be Ready elsewhere, from the batch's Recover on, also where the next
	// batch drains meanwhile (--drain-timeout: a batch is not over until
	// its pods run again).
	RecoverTimeout time.Duration
	// NodeReadyTimeout (--node-ready-timeout) bounds the waits for new
	// nodes to be Ready and for room for a batch's pods.
	NodeReadyTimeout time.Duration
	// TerminateTimeout (--terminate-timeout) bounds the wait for each
	// removed machine to be gone (DefaultTerminateTimeout when 0).
	TerminateTimeout time.Duration
	// Events records Kubernetes Events on nodes and pods; nil records none.
	Events *Recorder
	// OnProgress is told every state the run enters, and the nodes done, so
	// the caller can keep a record; an error stops the run. A step that
	// finishes nodes and then waits tells it again, with the same state.
	OnProgress func(ctx context.Context, s plan.State, done []string) error
	// Start is the phase to begin with (a rollback, or where an
	// interrupted run goes on); empty for the strategy's first phase.
	Start plan.Phase
	// Record is the run's record; with a cloud group the engine writes its
	// Cloud part before each change to the group, through Save.
	Record *state.Record
	Save   func(ctx context.Context) error
	// BlueDeleted names the blue group an interrupted run deleted before
	// it recorded so: the group is green, and deleteBlue only finishes.
	BlueDeleted string
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
	// Live keeps a status line under the log lines, rewritten in place:
	// Out is a terminal.
	Live bool
	// EarlierDone are the nodes earlier, interrupted attempts of this run
	// replaced: the progress and the final line count them.
	EarlierDone []string
	// RollingBack says the run takes the group back to the version it ran
	// before (an in-place rollback), so the final line says so.
	RollingBack bool
	// Kubeconfig is the file the hooks get in KUBECONFIG: one that reaches
	// the cluster the run talks to; "" leaves theirs.
	Kubeconfig string
}

// Engine runs one plan.
type Engine struct {
	cfg      Config
	strategy plan.Strategy
	traits   plan.Traits
	drainer  *drain.Drainer
	drainOpt drain.Options // the drainer's, without the pod source watchCluster adds
	evicted  []corev1.Pod
	// intended are the workloads recorded as recovering before the drain
	// (intendRecovering) that were not listed already.
	intended []Owner
	view     *clusterView
	ctx      context.Context // for events recorded from drain callbacks
	done     []string
	group    cloud.Pool // nil unless the provider's nodes are one cloud group
	note     string
	shrunk   sets.Set[string] // nodes the scale-down removed
	// protected are the nodes this process annotated scale-down-disabled:
	// the informer may not show the annotation yet when it is taken off.
	protected sets.Set[string]
	written   writtenNodes // nodes as this run's last write to each returned them
	// drained says this run has asked for an eviction (or deleted a pod):
	// before that no pod has moved, and a stopped run takes its taints,
	// cordons and load-balancer exclusions off again. Drain callbacks set
	// it.
	drained  atomic.Bool
	progress *progress
	// rolledBack says the rollback step ran, and blueBack and
	// greenDrained what it did.
	rolledBack             bool
	blueBack, greenDrained int
	hookMu                 sync.Mutex // the record's hooks, written by parallel hooks
	// rebalanceHeld says this process suspended the group's rebalancing.
	rebalanceHeld bool
	// defaultBack says abort made the template's default before the run
	// the default again.
	defaultBack bool
	// aborting says the engine runs abort, whose scale-down undoes the
	// run: the nodes on the target go first.
	aborting bool
	// recovering is the last batch's recovery, handed over to the next
	// batch's drain (handover.go); nil when none goes on.
	recovering atomic.Pointer[recovery]
}

// New prepares an engine for the plan's strategy.
func New(cfg Config) (*Engine, error) {
	strategy, err := cfg.Plan.RunStrategy()
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Second
	}
	e := &Engine{cfg: cfg, strategy: strategy, traits: strategy.Traits(), shrunk: sets.New[string](), protected: sets.New[string]()}
	e.progress = newProgress(cfg.Out, cfg.Live, cfg.Now, cfg.Plan, len(cfg.EarlierDone))
	if g, ok := cfg.Provider.(cloud.Pool); ok {
		e.group = g
	}
	cfg.Drain.Hold = e.holdForRecovery
	userHook := cfg.Drain.OnEvent
	cfg.Drain.OnEvent = func(ev drain.Event) {
		if ev.Type == drain.EventEvicting || ev.Type == drain.EventDeleted {
			e.drained.Store(true)
		}
		e.reportDrainEvent(ev)
		if userHook != nil {
			userHook(ev)
		}
	}
	e.drainOpt = cfg.Drain
	e.drainer = drain.New(cfg.Client, cfg.Drain)
	return e, nil
}

// Flow is what the strategy's transitions depend on in this run.
func (e *Engine) flow() plan.Flow {
	_, resizes := e.group.(cloud.Group)
	return plan.Flow{Batches: len(e.cfg.Plan.Batches), CloudGroup: resizes}
}

// watchCluster starts the informers the engine reads nodes, pods and
// workloads from; stop ends them and returns once they have ended, so a
// finished run leaves no goroutine of its own behind.
func (e *Engine) watchCluster(ctx context.Context) (context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithCancel(ctx)
	e.ctx = ctx
	view, err := newClusterView(ctx, e.cfg.Client)
	if err != nil {
		cancel()
		return ctx, nil, err
	}
	e.view = view
	// drains follow their pods in the view's cache: no list and watch per node
	opts := e.drainOpt
	opts.Pods = view
	e.drainer = drain.New(e.cfg.Client, opts)
	stop := func() {
		cancel()
		if rec := e.recovering.Load(); rec != nil {
			<-rec.done // it ends with ctx
		}
		view.factory.Shutdown()
	}
	return ctx, stop, nil
}

// Run drives the state machine from the start to Done.
func (e *Engine) Run(ctx context.Context) error {
	ctx = transport.WithRetryReport(ctx, e.progress.retrying)
	ctx, stop, err := e.watchCluster(ctx)
	if err != nil {
		return err
	}
	defer stop()
	defer e.cfg.Events.Flush()
	defer e.progress.close()
	go e.tickProgress(ctx)
	e.followEarlierRecovery(ctx)
	s := plan.State{Phase: e.cfg.Start}
	if s.Phase == "" {
		s.Phase = e.strategy.First(e.flow())
	}
	for {
		if s.Phase == plan.PhaseDone {
			// Every way to the end lets the group rebalance and update
			// itself again.
			if err := e.releaseRebalance(ctx); err != nil {
				return err
			}
			if err := e.restoreUpdates(ctx); err != nil {
				return err
			}
		}
		e.progress.enter(s, len(e.cfg.EarlierDone)+len(e.done))
		if s.Phase == plan.PhaseDrain {
			e.intendRecovering(s.Batch)
		}
		if err := e.record(ctx, s); err != nil {
			return err
		}
		if s.Phase == plan.PhaseDone {
			break
		}
		// Between phases is the safe point for requests from another
		// terminal (cancel, rollback).
		redirect, err := e.checkRequests(ctx, s)
		if err != nil || redirect != nil {
			// A pause or a turn-around comes once the last batch's
			// workloads are back, as before batches overlapped.
			if serr := e.settleRecovery(ctx); serr != nil {
				return serr
			}
		}
		if err != nil {
			return err
		} else if redirect != nil {
			s = *redirect
			continue
		}
		err = e.step(ctx, s)
		switch {
		case errors.Is(err, errRollbackRequested):
			s = plan.State{Phase: plan.PhaseRollback, Batch: s.Batch}
		case err != nil:
			return e.stoppedUndrained(ctx, err)
		case s.Phase == plan.PhaseRollback:
			s = plan.State{Phase: plan.PhaseDone, Batch: s.Batch}
		default:
			s = e.strategy.Next(s, e.flow())
		}
	}
	e.logf("%s", e.summary())
	return nil
}

// record tells OnProgress the state and the nodes done so far. Steps that
// finish nodes and then wait call it themselves, so a run killed during
// the wait still counts them.
func (e *Engine) record(ctx context.Context, s plan.State) error {
	if e.cfg.OnProgress == nil {
		return nil
	}
	return e.cfg.OnProgress(ctx, s, e.done)
}

// tickProgress keeps the progress moving while a step waits, until ctx
// ends.
func (e *Engine) tickProgress(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.progress.tick()
		}
	}
}

// summary is the run's final line.
func (e *Engine) summary() string {
	return runSummary{
		Rollback:     e.cfg.RollingBack,
		BlueGreen:    e.rolledBack,
		Earlier:      e.cfg.EarlierDone,
		Now:          e.done,
		BlueBack:     e.blueBack,
		GreenDrained: e.greenDrained,
	}.String()
}

// stoppedUndrained takes the run's taint, cordons and load-balancer
// exclusions off the outdated nodes, as the server has them, when it fails
// or is interrupted before any eviction was asked for (a failure to reach
// the server included): no pod has moved, so nothing is gained by holding
// the group off, and a re-run marks them again. Stops on purpose (cancel,
// --no-wait) keep them.
func (e *Engine) stoppedUndrained(ctx context.Context, cause error) error {
	var paused *PausedError
	var soaking *SoakingError
	// A service's update marks and drains the nodes itself.
	if e.cfg.Plan.Managed != nil || e.drained.Load() || e.cfg.Start != "" || len(e.done) > 0 || len(e.cfg.Record.Done) > 0 || len(e.cfg.Plan.Done) > 0 || errors.As(cause, &paused) || errors.As(cause, &soaking) {
		return cause
	}
	// The run's context may be what stopped it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	wasCordoned := sets.New[string]()
	for _, n := range e.cfg.Plan.Outdated() {
		if n.Cordoned {
			wasCordoned.Insert(n.Name)
		}
	}
	released, err := e.releaseMarks(ctx, e.cfg.Plan.OutdatedNames(), func(n *corev1.Node) bool { return !wasCordoned.Has(n.Name) }, "NodeUpgradeReleased", "back in service: the run stopped before any drain")
	if err != nil {
		return fmt.Errorf("%w; and error when taking the upgrade's taint off the outdated nodes: %v (abort takes it off)", cause, err)
	}
	if len(released) > 0 {
		e.logf("stopped before any node was drained: %d outdated nodes are schedulable again (untainted, uncordoned)", len(released))
	}
	return cause
}

// Note is what the run wants the operator to know though it succeeded.
func (e *Engine) Note() string { return e.note }

func (e *Engine) batchLabel(i int) string {
	return fmt.Sprintf("batch %d/%d", i+1, len(e.cfg.Plan.Batches))
}

func (e *Engine) batchNodes(i int) []string {
	var names []string
	for _, n := range e.cfg.Plan.Batches[i].Nodes {
		names = append(names, n.Name)
	}
	return names
}

// releaseCurrent takes the upgrade's taint, its load-balancer exclusion,
// and the cordon that came with them, off the group's nodes that are not outdated now: a run towards
// another target (one rolled back) left them, and they must serve again.
// A node cordoned without the taint is someone else's business.
func (e *Engine) releaseCurrent(ctx context.Context) error {
	nodes, err := e.groupNodes()
	if err != nil {
		return err
	}
	outdated := sets.New(e.cfg.Plan.OutdatedNames()...)
	var names []string
	for _, n := range nodes {
		if !outdated.Has(n.Name) && (slices.ContainsFunc(n.Spec.Taints, e.isOurTaint) || excludedByRun(n)) {
			names = append(names, n.Name)
		}
	}
	return e.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		if _, err := e.updateNode(ctx, name, func(n *corev1.Node) bool {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, e.isOurTaint)
			n.Spec.Unschedulable = false
			includeInLoadBalancers(n)
			return true
		}); err != nil {
			return fmt.Errorf("error when untainting node %q: %w", name, err)
		}
		e.logf("node %q is current now: taken out of the upgrade (untainted, uncordoned)", name)
		return nil
	})
}

// isOurTaint matches the upgrade's taint by key and effect: its value may
// differ from run to run.
func (e *Engine) isOurTaint(t corev1.Taint) bool {
	return t.Key == e.cfg.Taint.Key && t.Effect == e.cfg.Taint.Effect
}

// waitForRoom holds a batch until the pods it will evict fit on the nodes
// that stay schedulable, so nothing is evicted into Pending.
func (e *Engine) waitForRoom(ctx context.Context, i int) error {
	names := e.batchNodes(i)
	// Where every outdated node is held off (tainted or cordoned), none
	// takes pods; otherwise the other old nodes stay schedulable.
	excluded := sets.New(names...)
	if e.traits.OutdatedHeldOff {
		excluded = sets.New(e.cfg.Plan.OutdatedNames()...)
	}
	failure := fmt.Sprintf("not enough room for batch %d", i+1)
	advice := "add capacity or lower --max-unavailable, then run again, or put the group back in service with \"kubectl nodeupgrade abort\""
	if room := e.view.room(names, excluded); !room.Fits() {
		// Waiting makes sense only while something can add a node.
		if source, err := e.capacitySource(ctx); err != nil {
			return err
		} else if source == "" {
			return fmt.Errorf("%s: %s, and nothing will add a node (no machine of the group is on its way, no cluster autoscaler or Karpenter runs); %s", failure, room, advice)
		}
	}
	return e.awaitRoom(ctx, e.batchLabel(i), names, excluded, failure, advice)
}

// capacitySource names what can still add a node while a batch waits for
// room: machines of the group launched but not yet Ready nodes, or an
// autoscaler's pod; "" when nothing can.
func (e *Engine) capacitySource(ctx context.Context) (string, error) {
	if e.group != nil {
		nodes, err := e.groupNodes()
		if err != nil {
			return "", err
		}
		sizes, err := e.group.Sizes(ctx)
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
			return fmt.Sprintf("%d machines of %s %q on their way", int(sizes.Desired)-ready, e.groupKind(), e.group.GroupName()), nil
		}
	}
	if p := e.view.autoscalerPod(); p != "" {
		return "pod " + p, nil
	}
	return "", nil
}

// awaitRoom waits, up to --node-ready-timeout and driven by node and pod
// events, until the pods of names fit on the nodes not excluded.
func (e *Engine) awaitRoom(ctx context.Context, what string, names []string, excluded sets.Set[string], failure, advice string) error {
	room := e.view.room(names, excluded)
	if room.Fits() {
		return nil
	}
	e.logf("%s: waiting up to %s for room: %s", what, e.cfg.NodeReadyTimeout, room)
	wctx, cancel := context.WithTimeout(ctx, e.cfg.NodeReadyTimeout)
	defer cancel()
	room, err := e.view.waitForRoom(wctx, names, excluded, time.Second, func(r capacity.Room) {
		e.progress.waitingFor("room for pods " + listNames(r.PodNames(), waitNamesShown))
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s after %s: %s; %s", failure, e.cfg.NodeReadyTimeout, room, advice)
	}
	return err
}

func (e *Engine) drainBatch(ctx context.Context, i int) error {
	e.evicted = e.evicted[:0]
	defer func() {
		// What was listed before the drain and not evicted is not recovering.
		e.recordRecovering(OwnersOf(e.evicted), e.intended)
		e.intended = nil
	}()
	// A node gone meanwhile (the autoscaler removed it) has nothing left
	// to drain.
	names := slices.DeleteFunc(e.batchNodes(i), func(n string) bool { return !e.nodeExists(n) })
	if len(names) == 0 {
		return nil
	}
	if e.traits.CordonBeforeDrain {
		if err := e.setUnschedulable(ctx, names, true); err != nil {
			return err
		}
	}
	if err := e.runHooks(ctx, plan.HookPreDrain, names); err != nil {
		return err
	}
	if err := e.excludeFromLoadBalancers(ctx, names); err != nil {
		return err
	}
	e.logf("%s: draining %s", e.batchLabel(i), quoteAll(names))
	e.progress.waitingFor("the pods to leave " + listNames(quoteEach(names), waitNamesShown))
	for _, n := range names {
		e.cfg.Events.Node(ctx, n, corev1.EventTypeNormal, "NodeUpgradeDraining", "draining for %s, batch %d of %d", e.planDescription(), i+1, len(e.cfg.Plan.Batches))
	}
	dctx, cancel := e.drainContext(ctx)
	defer cancel(nil)
	results, err := e.drainer.DrainNodes(dctx, names)
	if cause := context.Cause(dctx); ctx.Err() == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause // the last batch's workloads did not recover
	}
	for _, r := range results {
		e.evicted = append(e.evicted, r.Evicted...)
	}
	var failure *drain.PodEvictionFailure
	if errors.As(err, &failure) {
		e.cfg.Events.Node(ctx, failure.Node, corev1.EventTypeWarning, "PodEvictionFailure", "%s", failure.Error())
	}
	if err != nil {
		return err
	}
	// Without a Cordon phase next (blue/green keeps its drained nodes until
	// DeleteBlue), the drain is all there is before the post-drain hook.
	if e.strategy.Next(plan.State{Phase: plan.PhaseDrain, Batch: i}, e.flow()).Phase != plan.PhaseCordon {
		return e.runHooks(ctx, plan.HookPostDrain, names)
	}
	return nil
}

func (e *Engine) planDescription() string {
	if e.cfg.Plan.Selector != "" {
		return "upgrade of nodes " + e.cfg.Plan.Selector
	}
	return fmt.Sprintf("upgrade of node group %q", e.cfg.Plan.NodeGroup)
}

func (e *Engine) cordonBatch(ctx context.Context, i int) error {
	names := e.batchNodes(i)
	if err := e.setUnschedulable(ctx, names, true); err != nil {
		return err
	}
	for _, name := range names {
		e.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeCordoned", "drained and cordoned; removal in %s", e.cfg.PostDrainWait)
	}
	if err := e.postDrainWait(ctx, fmt.Sprintf("%s: cordoned %s", e.batchLabel(i), quoteAll(names)), "them"); err != nil {
		return err
	}
	return e.runHooks(ctx, plan.HookPostDrain, names)
}

// postDrainWait gives load balancers --post-drain-wait to stop sending
// traffic to drained, cordoned nodes.
func (e *Engine) postDrainWait(ctx context.Context, what, them string) error {
	if e.cfg.PostDrainWait <= 0 {
		return nil
	}
	e.logf("%s; waiting %s for load balancers to deregister %s", what, e.cfg.PostDrainWait, them)
	e.progress.waitingFor(fmt.Sprintf("load balancers to deregister %s (until %s)", them, e.cfg.Now().Add(e.cfg.PostDrainWait).Format("15:04:05")))
	return sleep(ctx, e.cfg.PostDrainWait)
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
	if err := e.runHooks(ctx, plan.HookPreTerminate, e.batchNodes(i)); err != nil {
		return err
	}
	if err := e.deregister(ctx, e.batchLabel(i), e.batchNodes(i)); err != nil {
		return err
	}
	leaving := map[string]string{}
	for _, name := range e.batchNodes(i) {
		e.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeRemoved", "removing: %s", e.cfg.Provider.Describe())
		id, err := e.machineOf(ctx, name)
		if err != nil {
			return fmt.Errorf("error when removing node %q: %w", name, err)
		}
		removed, err := e.removeNode(ctx, name)
		if err != nil {
			return fmt.Errorf("error when removing node %q: %w", name, err)
		}
		e.logf("%s: %s", e.nodeWithMachine(i, name), removed)
		e.done = append(e.done, name)
		leaving[name] = id
		if err := e.record(ctx, plan.State{Phase: plan.PhaseRemove, Batch: i}); err != nil {
			return err
		}
	}
	if err := e.awaitGone(ctx, leaving); err != nil {
		return err
	}
	if e.traits.SurgeReplaces && e.group != nil {
		_, err := e.restoreMax(ctx)
		return err
	}
	return nil
}

// nodeWithMachine names a node of batch i with its machine's ID where the
// plan knows it, so "terminate the instance" says which.
func (e *Engine) nodeWithMachine(i int, name string) string {
	for _, n := range e.cfg.Plan.Batches[i].Nodes {
		if n.Name == name && n.InstanceID != "" {
			return fmt.Sprintf("node %q (instance %s)", name, n.InstanceID)
		}
	}
	return fmt.Sprintf("node %q", name)
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
	e.progress.println(fmt.Sprintf("%s %s", e.cfg.Now().Format("15:04:05"), fmt.Sprintf(format, args...)))
}

// waitNamesShown is how many names the progress shows of what it waits
// for, before "+N more".
const waitNamesShown = 3

func quoteEach(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
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
