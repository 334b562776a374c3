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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
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
	// Undrainable (--undrainable) is UndrainableCordon to quarantine a node
	// whose drain a pod still holds at the drain timeout and go on with
	// the others; "" or UndrainableFail stops the run there.
	Undrainable string
	// MaxBlockedNodes (--max-blocked-nodes) stops the run once that many
	// nodes are quarantined; 0 never does.
	MaxBlockedNodes int
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
	// Journal keeps the run's timeline for "report" (the node milestones
	// come through Events' Observe); nil keeps none.
	Journal *report.Journal
	// Window is when batches and the steps that take capacity away may
	// start (--window, --not-before, --not-after); empty: any time.
	Window window.Schedule
	// MakeRoom surges Deployments around each batch's drain (makeroom.go).
	MakeRoom bool
	// GateDir is the directory exec: gates run in (the run's).
	GateDir string
}

// Engine runs one plan: the run loop (Run, Abort) and the steps the
// strategies' run types call through their toolkit (toolkit.go: the batch
// steps, node writes, waits).
type Engine struct {
	cfg      Config
	strategy plan.Strategy
	drainOpt drain.Options
	view     *clusterView
	tally    *tally
	words    cloudWords
	// group is the provider's cloud group with the run's record of it: the
	// toolkit of the strategies that change a group.
	group      *cloudGroup
	run        strategyRun         // the strategy's execution
	steps      map[plan.Phase]step // its steps and the batch toolkit's, by phase
	nodes      *nodeWriter
	batches    *batchRun
	drains     *drainReport
	arrivals   *arrivals
	progress   *progress
	hooks      *hookRunner
	recoveries *recoveries
	windows    *windowWait
	room       *roomMaker // --make-room's surges (makeroom.go)
	// gates hold each gated wave's start (waves.go).
	gates *waveGate
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
	e := &Engine{cfg: cfg, strategy: strategy}
	e.tally, e.words = &tally{}, cloudWords{cloud: cfg.Plan.Cloud}
	e.progress = newProgress(cfg.Out, cfg.Live, cfg.Now, cfg.Plan, len(cfg.EarlierDone))
	e.drains = &drainReport{journal: cfg.Journal, events: cfg.Events, color: cfg.Color, logf: e.logf}
	e.nodes = &nodeWriter{client: cfg.Client, plan: cfg.Plan, record: cfg.Record, taint: cfg.Taint, events: cfg.Events, logf: e.logf}
	e.arrivals = &arrivals{nodes: e.nodes, timeout: cfg.NodeReadyTimeout, poll: cfg.PollInterval, logf: e.logf}
	e.recoveries = &recoveries{record: cfg.Record, plan: cfg.Plan, timeout: cfg.RecoverTimeout, progress: e.progress, logf: e.logf}
	e.windows = &windowWait{schedule: cfg.Window, control: cfg.Control, plan: cfg.Plan, record: cfg.Record, start: cfg.Start,
		now: cfg.Now, progress: e.progress, journal: cfg.Journal, logf: e.logf, save: e.save, gatedBatch: -1}
	e.group = newCloudGroup(cfg.Provider)
	e.hooks = &hookRunner{cfg: &e.cfg, pool: e.group.pool, nodes: e.nodes, logf: e.logf, save: e.save}
	e.batches = &batchRun{cfg: &e.cfg, strategy: strategy, group: e.group, nodes: e.nodes, recoveries: e.recoveries, tally: e.tally,
		words: e.words, hooks: e.hooks, progress: e.progress, logf: e.logf, record: e.record}
	e.room = &roomMaker{cfg: &e.cfg, save: e.save, logf: e.logf, progress: e.progress, heldOff: &e.batches.heldOff, interval: 500 * time.Millisecond, minReady: map[string]int{}}
	e.batches.room = e.room
	e.gates = &waveGate{cfg: &e.cfg, recoveries: e.recoveries, windows: e.windows, tally: e.tally, progress: e.progress, save: e.save, logf: e.logf, passed: map[int]bool{}}
	e.group.toolkit = e.toolkit()
	e.run, e.steps = stepsOf(e)
	_, e.batches.heldOff = e.run.(outdatedHolder)
	_, e.group.wholeGroup = e.run.(groupAborter)
	e.windows.liveRollback = e.liveRollback()
	e.cfg.Drain.Hold = e.recoveries.holdForRecovery
	e.drainOpt = e.cfg.Drain // the drainer comes with the run's context (watchCluster)
	return e, nil
}

// onDrainEvent is the drains' OnEvent in the run's ctx: it notes the
// first eviction, reports the event, then tells the caller's hook.
func (dr *drainReport) onDrainEvent(ctx context.Context, hook func(drain.Event)) func(drain.Event) {
	return func(ev drain.Event) {
		if ev.Type == drain.EventEvicting || ev.Type == drain.EventDeleted {
			dr.drained.Store(true)
		}
		dr.reportDrainEvent(ctx, ev)
		if hook != nil {
			hook(ev)
		}
	}
}

// Flow is what the strategy's transitions depend on in this run.
func (e *Engine) flow() plan.Flow { return runFlow(e.cfg.Plan, e.group.pool) }

func runFlow(p *plan.Plan, pool cloud.Pool) plan.Flow {
	_, resizes := pool.(cloud.Scaler)
	return plan.Flow{Batches: len(p.Batches), CloudGroup: resizes}
}

// watchCluster starts the informers the engine reads nodes, pods and
// workloads from; stop ends them and returns once they have ended, so a
// finished run leaves no goroutine of its own behind.
func (e *Engine) watchCluster(ctx context.Context) (context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithCancel(ctx)
	view, err := newClusterView(ctx, e.cfg.Client)
	if err != nil {
		cancel()
		return ctx, nil, err
	}
	e.view = view
	e.nodes.view = view
	e.recoveries.view = view
	// drains follow their pods in the view's cache: no list and watch per
	// node; their events are recorded in the run's context
	opts := e.drainOpt
	opts.Pods = view
	opts.OnEvent = e.drains.onDrainEvent(ctx, opts.OnEvent)
	e.batches.drainer = drain.New(e.cfg.Client, opts)
	stop := func() {
		cancel()
		if rec := e.recoveries.recovering.Load(); rec != nil {
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
	e.recoveries.followEarlierRecovery(ctx)
	s := plan.State{Phase: e.cfg.Start}
	if s.Phase == "" {
		s.Phase = e.strategy.First(e.flow())
	}
	if err := e.group.holdPoolUpdates(ctx, s.Phase); err != nil {
		return err
	}
	for first := true; ; first = false {
		if err := e.awaitStart(ctx, s, first); errors.Is(err, errRollbackRequested) {
			s = plan.State{Phase: plan.PhaseRollback, Batch: s.Batch}
		} else if err != nil {
			return e.stoppedUndrained(ctx, err)
		}
		if err := e.enter(ctx, s); err != nil {
			return err
		}
		if s.Phase == plan.PhaseDone {
			break
		}
		redirect, err := e.betweenPhases(ctx, s)
		if err != nil {
			return err
		} else if redirect != nil {
			s = *redirect
			continue
		}
		if s, err = e.next(s, e.step(ctx, s)); err != nil {
			return e.stoppedUndrained(ctx, err)
		}
	}
	e.logf("%s", e.summary())
	return quarantinedEnd(e.cfg.Record)
}

// enter enters state s: at Done, every way to the end lets the group
// rebalance and update itself again; then the progress and the record
// say so.
func (e *Engine) enter(ctx context.Context, s plan.State) error {
	if s.Phase == plan.PhaseDone {
		if err := e.group.releaseRebalance(ctx); err != nil {
			return err
		}
		if err := e.group.restoreUpdates(ctx); err != nil {
			return err
		}
		if err := e.room.restoreAll(ctx); err != nil {
			return err
		}
	}
	e.progress.enter(s, len(e.cfg.EarlierDone)+len(e.tally.done))
	e.drains.journalEnter(s)
	if s.Phase == plan.PhaseDrain {
		e.recoveries.intendRecovering(s.Batch)
	}
	return e.record(ctx, s)
}

// betweenPhases is the safe point for requests from another terminal
// (cancel, rollback): it returns the state a request turns the run to,
// or the error that pauses it.
func (e *Engine) betweenPhases(ctx context.Context, s plan.State) (*plan.State, error) {
	redirect, err := e.checkRequests(ctx, s)
	if err != nil || redirect != nil {
		// A pause or a turn-around comes once the last batch's
		// workloads are back, as before batches overlapped.
		if serr := e.recoveries.settleRecovery(ctx); serr != nil {
			return nil, serr
		}
	}
	return redirect, err
}

// next is the state after s, whose step ended with err: the rollback
// where one was asked for during the step, Done after the rollback, and
// otherwise the strategy's next.
func (e *Engine) next(s plan.State, err error) (plan.State, error) {
	switch {
	case errors.Is(err, errRollbackRequested):
		return plan.State{Phase: plan.PhaseRollback, Batch: s.Batch}, nil
	case err != nil:
		return s, err
	case s.Phase == plan.PhaseRollback:
		return plan.State{Phase: plan.PhaseDone, Batch: s.Batch}, nil
	}
	return e.strategy.Next(s, e.flow()), nil
}

// record tells OnProgress the state and the nodes done so far. Steps that
// finish nodes and then wait call it themselves, so a run killed during
// the wait still counts them.
func (e *Engine) record(ctx context.Context, s plan.State) error {
	if e.cfg.OnProgress == nil {
		return nil
	}
	return e.cfg.OnProgress(ctx, s, e.tally.done)
}

func (e *Engine) save(ctx context.Context) error {
	if e.cfg.Save == nil {
		return nil
	}
	return e.cfg.Save(ctx)
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
	s := runSummary{Rollback: e.cfg.RollingBack, Earlier: e.cfg.EarlierDone, Now: e.tally.done}
	if r, ok := e.run.(interface{ summarize(*runSummary) }); ok {
		r.summarize(&s)
	}
	return s.String()
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
	var quarantined *QuarantinedError
	// A service's update marks and drains the nodes itself; a quarantined
	// node stays cordoned and tainted.
	if errors.As(cause, &quarantined) || e.cfg.Plan.Managed != nil || e.drains.drained.Load() || e.cfg.Start != "" || len(e.tally.done) > 0 || len(e.cfg.Record.Done) > 0 || len(e.cfg.Plan.Done) > 0 || errors.As(cause, &paused) || errors.As(cause, &soaking) {
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
	released, err := e.nodes.releaseMarks(ctx, e.cfg.Plan.OutdatedNames(), func(n *corev1.Node) bool { return !wasCordoned.Has(n.Name) }, "NodeUpgradeReleased", "back in service: the run stopped before any drain")
	if err != nil {
		return fmt.Errorf("%w; and error when taking the upgrade's taint off the outdated nodes: %v (abort takes it off)", cause, err)
	}
	if len(released) > 0 {
		e.logf("stopped before any node was drained: %d outdated nodes are schedulable again (untainted, uncordoned)", len(released))
	}
	return cause
}

// Note is what the run wants the operator to know though it succeeded.
func (e *Engine) Note() string { return e.tally.note }

// RolledBack reports whether the run took the group back to where it
// was (in place, or blue/green's rollback), rather than upgrading it.
func (e *Engine) RolledBack() bool {
	s := runSummary{Rollback: e.cfg.RollingBack}
	if r, ok := e.run.(interface{ summarize(*runSummary) }); ok {
		r.summarize(&s)
	}
	return s.Rollback || s.BlueGreen
}

func batchLabel(p *plan.Plan, i int) string {
	return fmt.Sprintf("batch %d/%d", i+1, len(p.Batches))
}

func batchNodes(p *plan.Plan, i int) []string {
	var names []string
	for _, n := range p.Batches[i].Nodes {
		names = append(names, n.Name)
	}
	return names
}

// releaseCurrent takes the upgrade's taint, its load-balancer exclusion,
// and the cordon that came with them, off the group's nodes that are not outdated now: a run towards
// another target (one rolled back) left them, and they must serve again.
// A node cordoned without the taint is someone else's business.
func (nw *nodeWriter) releaseCurrent(ctx context.Context) error {
	nodes, err := nw.groupNodes()
	if err != nil {
		return err
	}
	outdated := sets.New(nw.plan.OutdatedNames()...)
	var names []string
	for _, n := range nodes {
		if !outdated.Has(n.Name) && (slices.ContainsFunc(n.Spec.Taints, nw.isOurTaint) || excludedByRun(n)) {
			names = append(names, n.Name)
		}
	}
	return nw.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		if _, err := nw.updateNode(ctx, name, func(n *corev1.Node) bool {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, nw.isOurTaint)
			n.Spec.Unschedulable = false
			includeInLoadBalancers(n)
			return true
		}); err != nil {
			return fmt.Errorf("error when untainting node %q: %w", name, err)
		}
		nw.logf("node %q is current now: taken out of the upgrade (untainted, uncordoned)", name)
		return nil
	})
}

// isOurTaint matches the upgrade's taint by key and effect: its value may
// differ from run to run.
func (nw *nodeWriter) isOurTaint(t corev1.Taint) bool {
	return t.Key == nw.taint.Key && t.Effect == nw.taint.Effect
}

func planDescription(p *plan.Plan) string {
	if p.Selector != "" {
		return "upgrade of nodes " + p.Selector
	}
	return fmt.Sprintf("upgrade of node group %q", p.NodeGroup)
}

func (dr *drainReport) reportDrainEvent(ctx context.Context, ev drain.Event) {
	dr.journalDrainEvent(ev)
	switch ev.Type {
	case drain.EventEvicted:
		dr.logf("node %q: evicted pod %q", ev.Node, ev.Namespace+"/"+ev.Pod)
	case drain.EventDeleted:
		dr.logf("node %q: deleted pod %q", ev.Node, ev.Namespace+"/"+ev.Pod)
	case drain.EventBlocked:
		msg := fmt.Sprintf("node %q: eviction of pod %q blocked", ev.Node, ev.Namespace+"/"+ev.Pod)
		for _, p := range ev.PDBs {
			msg += " by " + p.String()
		}
		if len(ev.PDBs) == 0 && ev.Message != "" {
			msg += ": " + ev.Message
		}
		dr.logf("%s", dr.color.Yellow(msg))
		dr.events.Pod(ctx, ev.Namespace, ev.Pod, corev1.EventTypeWarning, "EvictionBlocked", "%s", msg)
	case drain.EventDrained:
		dr.logf("node %q: drained", ev.Node)
		dr.events.Node(ctx, ev.Node, corev1.EventTypeNormal, "NodeUpgradeDrained", "every evictable pod has left the node")
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
