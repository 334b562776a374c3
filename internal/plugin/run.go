package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// RunOptions are the flags of "run": the plan's, plus how to execute it.
type RunOptions struct {
	PlanOptions

	Yes bool
	// DryRun is --dry-run: none, or client (print the plan only).
	DryRun string
	NoWait bool

	savedPlan *plan.Plan
	rollback  bool // run only the rollback (the rollback command)
	planOnly  bool // the plan command: always a client dry run
	// detailedExitCode is plan's --detailed-exitcode: exit 5 when run
	// would refuse the plan for its blockers.
	detailedExitCode bool
}

const runExample = `  # Upgrade node group "demo" to a new AMI, 2 nodes at a time
  kubectl nodeupgrade run demo --ami ami-new --max-unavailable 2 --yes

  # Print exactly what "plan" prints, change nothing
  kubectl nodeupgrade run demo --ami ami-new --dry-run

  # Without a cloud provider: outdated nodes are those lacking the label
  kubectl nodeupgrade run demo --provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new --yes

  # Execute a plan reviewed earlier; refused if the cluster changed since
  kubectl nodeupgrade run --plan-file plan.json --yes`

// NewCmdRun builds "run".
func NewCmdRun(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd, _ := newCmdRun(configFlags, streams)
	return cmd
}

func newCmdRun(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) (*cobra.Command, *RunOptions) {
	o := &RunOptions{PlanOptions: PlanOptions{configFlags: configFlags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "run NODEGROUP",
		Short: "Upgrade a node group: taint, drain in batches and remove its outdated nodes",
		Long: `Upgrade a node group the way EKS managed node groups do: put a NoSchedule taint
on every outdated node, then, in batches of --max-unavailable nodes (zone-balanced
when the group spans several zones, else random; see --order), drain them
honouring PodDisruptionBudgets, cordon them, wait --post-drain-wait for load
balancers, and remove them. The next batch starts when the workloads evicted by
the last one have their pods scheduled again, and evicts a workload's pods only
once it is Ready again.

Hooks (--pre-drain-hook, --post-drain-hook, --pre-terminate-hook) run a command
for each node around its drain and removal, and the annotations
pre-drain.hook.nodeupgrade.dev/NAME and pre-terminate.hook.nodeupgrade.dev/NAME
on a node hold its drain and removal until taken off; a failed hook stops the
run with exit 10.

An interrupted run is finished by running the same command again; hooks that
succeeded are not run again.`,
		Example: runExample,
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE:    runE(o),
	}
	o.AddFlags(cmd)
	_ = cmd.Flags().MarkHidden("detailed-exitcode")
	return cmd, o
}

// Values of --dry-run, as kubectl's.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
)

// AddFlags registers run's flags: the planning flags and how the run goes.
// plan registers the same, so that "run" and "plan" swap in a command line.
func (o *RunOptions) AddFlags(cmd *cobra.Command) {
	o.PlanOptions.AddFlags(cmd)
	f := cmd.Flags()
	r := &o.Request
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (required without a terminal)")
	f.StringVar(&o.DryRun, "dry-run", dryRunNone, `"client" (or a bare --dry-run): print the plan, exactly as "plan" does, and change nothing; "none": run`)
	f.Lookup("dry-run").NoOptDefVal = dryRunClient
	f.StringVar(&r.PlanFile, "plan-file", "", "Execute a plan saved with \"plan -o json\"; refused if the cluster no longer matches it; its --post-drain-wait and --deregistration-timeout apply unless given again")
	durationVar(f, &r.DrainTimeout, "drain-timeout", 15*time.Minute, "How long a node's pods may take to leave before PodEvictionFailure (or deletion with --force), and the evicted workloads to be Ready again; with --strategy surge and autoscaled-blue-green 1h by default, then the remaining pods are deleted")
	durationVar(f, &r.PostDrainWait, "post-drain-wait", 60*time.Second, "Wait after cordoning a drained node, so load balancers stop sending it traffic")
	durationVar(f, &r.DeregistrationTimeout, "deregistration-timeout", plan.DefaultDeregistrationTimeout, "With a cloud group behind load balancers (aws: target groups, Classic Load Balancers): how long a drained node's machine may take to leave them (their deregistration delay) before the run stops; it is removed only once they let go")
	f.StringArrayVar(&r.IgnoreChecks, "ignore-check", nil, "Start even though this check found blockers (repeatable); see \"kubectl nodeupgrade check --help\" for the names")
	durationVar(f, &r.NodeReadyTimeout, "node-ready-timeout", 15*time.Minute, "How long the scale-up waits for new nodes to be Ready, and a batch for room (new capacity) for the pods it will evict, before the run stops")
	durationVar(f, &r.TerminateTimeout, "terminate-timeout", upgrade.DefaultTerminateTimeout, "How long the run waits for each instance it terminates to be gone, e.g. held in Terminating:Wait by another system's lifecycle hook, which the run never completes; then it stops, and a re-run goes on")
	durationVar(f, &r.MaxAge, "max-age", 7*24*time.Hour, "With --strategy short-lived: how old the nodes left running may get; status flags older ones")
	f.BoolVar(&o.NoWait, "no-wait", false, "With --strategy blue-green: stop at the soak (exit 8), recorded as soaking until a time; run again or resume later")
	f.BoolVar(&r.DeleteNode, "delete-node", true, "With provider none: delete the Node object; false leaves it drained, cordoned and labelled "+plan.StateLabel+"="+plan.StateDone)
	// plan's: run exits 5 on blockers anyway; run takes it so that the
	// command lines swap.
	f.BoolVar(&o.detailedExitCode, "detailed-exitcode", false, "Exit 5 when the plan has blockers that run would refuse (as check does), instead of 0")
	f.BoolVar(&r.LeaveMachinesRunning, leaveMachinesRunningFlag, false, "With provider none: delete the Node objects even of nodes whose machines a cloud group may keep (aws://, gce://, azure:// provider IDs), leaving those machines running")
}

// Complete reads the plan file, whose settings replace the planning flags.
func (o *RunOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.PlanOptions.Complete(cmd, args); err != nil {
		return err
	}
	if o.planOnly {
		o.DryRun = dryRunClient
	}
	if err := o.loadPlanFile(); err != nil {
		return err
	}
	if len(args) == 1 && o.savedPlan != nil && args[0] != o.savedPlan.NodeGroup {
		return usageErrorf("NODEGROUP %q does not match node group %q of --plan-file %q", args[0], o.savedPlan.NodeGroup, o.PlanFile)
	}
	// The strategy's drain timeout, once the plan file has said which.
	if s, err := plan.LookupStrategy(o.Strategy); err == nil && !o.given["drain-timeout"] && s.Traits().DrainTimeout > 0 {
		o.DrainTimeout = s.Traits().DrainTimeout
	}
	return nil
}

// loadPlanFile reads --plan-file, whose settings replace the planning
// flags; without one it does nothing.
func (o *RunOptions) loadPlanFile() error {
	if o.PlanFile == "" {
		return nil
	}
	p, savedWait, err := readPlanFile(o.PlanFile)
	if err != nil {
		return err
	}
	o.savedPlan = p
	// The record keeps the path for resume and rollback, which may be
	// typed in another directory.
	if abs, err := filepath.Abs(o.PlanFile); err == nil {
		o.PlanFile = abs
	}
	o.requestFromPlan(p)
	// The reviewed plan's hooks run; others given now would be ignored.
	for _, name := range []string{"pre-drain-hook", "post-drain-hook", "pre-terminate-hook", "hook-timeout"} {
		if o.given[name] {
			return usageErrorf("--%s cannot be used with --plan-file: the hooks of the plan run; give it to \"plan\" instead", name)
		}
	}
	o.Hooks = plan.Hooks{}
	if p.Hooks != nil {
		o.Hooks = *p.Hooks
	}
	// The reviewed plan's waits run, as its estimates counted them, unless
	// given again now. A request from a record (resume) already holds what
	// the first run settled, a wait given then included.
	if o.given != nil {
		if !o.given["post-drain-wait"] && savedWait {
			o.PostDrainWait = time.Duration(p.PostDrainWait)
		}
		if !o.given["deregistration-timeout"] && p.DeregistrationTimeout > 0 {
			o.DeregistrationTimeout = time.Duration(p.DeregistrationTimeout)
		}
	}
	return nil
}

// readPlanFile reads a plan saved with "plan -o json"; savedWait says it
// carries a post-drain wait (plans saved before they did have none).
func readPlanFile(path string) (p *plan.Plan, savedWait bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, usageErrorf("cannot read --plan-file %q: %v", path, err)
	}
	// postDrainWait shadows the plan's own field, so that one parse also
	// tells a plan saved before plans carried the wait (it has none to give).
	var file struct {
		plan.Plan
		PostDrainWait *plan.Duration `json:"postDrainWait"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, false, usageErrorf("cannot read --plan-file %q: not a plan saved with \"plan -o json\": %v", path, err)
	}
	p = &file.Plan
	if file.PostDrainWait != nil {
		p.PostDrainWait = *file.PostDrainWait
	}
	if p.APIVersion != plan.APIVersion || p.Kind != plan.Kind {
		return nil, false, usageErrorf("cannot read --plan-file %q: apiVersion %q kind %q, want %s %s", path, p.APIVersion, p.Kind, plan.APIVersion, plan.Kind)
	}
	return p, file.PostDrainWait != nil, nil
}

// requestFromPlan takes the request the saved plan was made for.
func (o *RunOptions) requestFromPlan(p *plan.Plan) {
	o.NodeGroup, o.NodeGroupLabel, o.Selector = p.NodeGroup, p.NodeGroupLabel, p.Selector
	o.MaxUnavailable, o.Taint, o.Seed, o.Provider, o.Order = p.MaxUnavailableInput, p.Taint, p.Seed, p.Provider, p.Order
	o.Strategy, o.MaxSurge = p.Strategy, p.MaxSurge
	if o.Order == plan.OrderByZone {
		o.Order = "" // the surge strategy's own, not an --order value
	}
	if c := p.Cloud; c != nil {
		o.Cloud.Region, o.Cloud.Group, o.Cloud.Image, o.Cloud.Version = c.Region, c.Group, "", ""
		// The provider's own settings: the plan's, and those given again.
		opts := maps.Clone(c.Options)
		if opts == nil && len(o.Cloud.Options) > 0 {
			opts = map[string]string{}
		}
		maps.Copy(opts, o.Cloud.Options)
		o.Cloud.Options = opts
		if c.TargetVersion == plan.NewVersion {
			o.Cloud.Image = c.TargetImage
		} else {
			o.Cloud.Version = c.TargetVersion
		}
	}
	o.TargetLabels = nil
	for k, v := range p.TargetLabels {
		o.TargetLabels = append(o.TargetLabels, k+"="+v)
	}
	slices.Sort(o.TargetLabels)
}

// Validate checks the flags and that the run can be confirmed.
func (o *RunOptions) Validate() error {
	if err := o.PlanOptions.Validate(); err != nil {
		return err
	}
	if o.MaxAge <= 0 {
		return usageErrorf("invalid --max-age %s: must be positive", plan.FormatDuration(o.MaxAge))
	}
	if o.DrainTimeout <= 0 {
		return usageErrorf("invalid --drain-timeout %s: must be positive", plan.FormatDuration(o.DrainTimeout))
	}
	if o.NodeReadyTimeout <= 0 {
		return usageErrorf("invalid --node-ready-timeout %s: must be positive", plan.FormatDuration(o.NodeReadyTimeout))
	}
	if o.TerminateTimeout == 0 && !o.given["terminate-timeout"] {
		o.TerminateTimeout = upgrade.DefaultTerminateTimeout // a record from before the flag
	}
	if o.TerminateTimeout <= 0 {
		return usageErrorf("invalid --terminate-timeout %s: must be positive", plan.FormatDuration(o.TerminateTimeout))
	}
	if o.PostDrainWait < 0 {
		return usageErrorf("invalid --post-drain-wait %s: must not be negative", plan.FormatDuration(o.PostDrainWait))
	}
	if o.DeregistrationTimeout < 0 {
		return usageErrorf("invalid --deregistration-timeout %s: must be positive", plan.FormatDuration(o.DeregistrationTimeout))
	}
	if o.DeregistrationTimeout == 0 {
		// A record from before the flag.
		o.DeregistrationTimeout = plan.DefaultDeregistrationTimeout
	}
	for _, name := range o.IgnoreChecks {
		if _, ok := check.SeverityOf(name); !ok {
			return usageErrorf("invalid --ignore-check %q: must be one of %s", name, strings.Join(check.Names(), ", "))
		}
		if name == check.CheckMachineLeftRunning {
			return usageErrorf("invalid --ignore-check %q: use --%s to delete those Node objects and leave their machines running, or --delete-node=false", name, leaveMachinesRunningFlag)
		}
	}
	switch o.DryRun {
	case dryRunNone, dryRunClient:
	case dryRunServer:
		// The run's first writes depend on what the earlier ones returned
		// (the cloud group's new version, the scale-up's nodes): a server
		// dry run of them would prove little and could mislead.
		return usageErrorf("invalid --dry-run %q: a server-side dry run is not supported; use --dry-run=client to print the plan, or \"kubectl auth can-i\" to check permissions", o.DryRun)
	default:
		return usageErrorf("invalid --dry-run %q: must be none, client or server", o.DryRun)
	}
	if o.DryRun == dryRunNone && !o.Yes && !output.IsTerminal(o.In) {
		return usageErrorf("refusing to run without a terminal to confirm on; use --yes (or --dry-run to only print the plan)")
	}
	return nil
}

// Run plans, asks, and upgrades.
func (o *RunOptions) Run(ctx context.Context) error {
	// A machine launched but not yet a node would be left out of the plan
	// (the replacement of a node an interrupted run removed, say).
	if o.DryRun == dryRunNone {
		o.joinTimeout = o.NodeReadyTimeout
	}
	p, err := o.buildPlan(ctx)
	if err != nil {
		return err
	}
	if o.savedPlan != nil {
		if p, err = o.fromSavedPlan(ctx, p); err != nil {
			return err
		}
	}
	if err := o.printPlan(p); err != nil {
		return err
	}
	if o.DryRun == dryRunClient {
		if o.detailedExitCode {
			return o.refuseBlockers(p, "run would refuse this plan")
		}
		return nil
	}
	if p.NothingToDo() && !o.rollback {
		return nil
	}
	if err := o.refuseBlockers(p, "refusing to run"); err != nil && !o.rollback {
		return err
	}
	if !o.Yes {
		rec, err := (&state.Store{Client: o.client, Namespace: o.StateNamespace}).Load(ctx, o.recordName())
		if err != nil {
			return err
		}
		ok, err := o.confirm(o.question(p, rec))
		if err != nil || !ok {
			return usageErrorf("aborted: nothing was changed")
		}
	}
	return o.upgrade(ctx, p)
}

// fromSavedPlan is the saved plan (--plan-file) checked against p, the
// cluster now, without the nodes an interrupted run of it already
// removed: those are not staleness, the same command finishes it.
func (o *RunOptions) fromSavedPlan(ctx context.Context, p *plan.Plan) (*plan.Plan, error) {
	done := map[string]bool{}
	store := &state.Store{Client: o.client, Namespace: o.StateNamespace}
	if rec, err := store.Load(ctx, o.recordName()); err == nil && rec != nil && rec.FinishedAt == nil {
		for _, n := range rec.Done {
			done[n] = true
		}
	}
	if err := compareSaved(o.savedPlan, p, o.PlanFile, done); err != nil {
		return nil, err
	}
	if err := plan.StaleRevision(o.savedPlan, p); err != nil {
		return nil, usageErrorf("--plan-file %q is stale: %v", o.PlanFile, err)
	}
	return withoutDone(o.savedPlan, p, done), nil
}

// upgrade runs plan p, agreed to, with the provider that changes the
// group (none's where no cloud's does).
func (o *RunOptions) upgrade(ctx context.Context, p *plan.Plan) error {
	var provider cloud.Provider = &cloud.None{Client: o.client, DeleteNode: o.DeleteNode}
	if o.cloudProvider != nil {
		provider = o.cloudProvider
	}
	cfg, err := engineConfig(o.client, p, o.Request, provider, o.IOStreams)
	if err != nil {
		return err
	}
	cfg.Live = output.IsTerminal(o.Out)
	if p.Hooks != nil && p.Hooks.Any() {
		path, remove, err := hookKubeconfig(o.configFlags)
		if err != nil {
			return err
		}
		defer remove()
		cfg.Kubeconfig = path
	}
	fmt.Fprintln(o.Out)
	return o.runLocked(ctx, p, cfg)
}

// engineConfig is the engine's configuration for plan p as req asks, with
// the provider that changes the group: run's and abort's.
func engineConfig(client kubernetes.Interface, p *plan.Plan, req plan.Request, provider cloud.Provider, streams genericiooptions.IOStreams) (upgrade.Config, error) {
	taint, err := plan.ParseTaint(p.Taint)
	if err != nil {
		return upgrade.Config{}, err
	}
	traits := p.Traits()
	return upgrade.Config{
		Client: client,
		Plan:   p,
		Taint:  taint,
		Drain: drain.Options{
			Timeout:            req.DrainTimeout,
			Force:              req.Force,
			DeleteEmptyDirData: req.DeleteEmptyDirData,
			GracePeriodSeconds: -1,
			DeleteAtTimeout:    traits.DeleteAtTimeout,
			MaxGracePeriod:     traits.MaxGrace,
		},
		Provider:              provider,
		PostDrainWait:         req.PostDrainWait,
		RecoverTimeout:        req.DrainTimeout,
		NodeReadyTimeout:      req.NodeReadyTimeout,
		TerminateTimeout:      req.TerminateTimeout,
		DeregistrationTimeout: req.DeregistrationTimeout,
		Events:                upgrade.NewRecorder(client, func(err error) { fmt.Fprintf(streams.ErrOut, "warning: %v\n", err) }),
		Out:                   streams.Out,
		Color:                 output.Colorizer(output.ColorEnabled(streams.Out)),
	}, nil
}

// lockDuration is how long a killed run's lock blocks others (on another
// machine; on the same machine a dead holder is seen at once).
const lockDuration = 30 * time.Second

// holdLock takes the node group's lock and keeps it alive until release;
// the context it returns ends when the lock is lost. Release happens even
// when ctx was cancelled: the bookkeeping after a run must.
func holdLock(ctx context.Context, client kubernetes.Interface, namespace, group string) (context.Context, string, func(), error) {
	holder := state.HolderIdentity()
	lock := &state.Lock{Client: client, Namespace: namespace, Group: group, Holder: holder, Duration: lockDuration}
	if err := lock.Acquire(ctx); err != nil {
		return ctx, holder, nil, err
	}
	cleanupCtx := context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	go lock.KeepAlive(ctx, func(err error) { cancel(err) })
	return ctx, holder, func() {
		cancel(nil)
		_ = lock.Release(cleanupCtx)
	}, nil
}

// runLocked holds the node group's lock for the run and keeps its record;
// a run interrupted in its scale-down goes on from there.
func (o *RunOptions) runLocked(ctx context.Context, p *plan.Plan, cfg upgrade.Config) error {
	group := o.recordName()
	// Bookkeeping after the run must happen even when it was interrupted.
	cleanupCtx := context.WithoutCancel(ctx)
	ctx, holder, release, err := holdLock(ctx, o.client, o.StateNamespace, group)
	if err != nil {
		return err
	}
	defer release()

	store := &state.Store{Client: o.client, Namespace: o.StateNamespace}
	requests := &state.Requests{Store: store, Group: group}
	rec, err := o.recordToRun(ctx, store, requests, p)
	if err != nil {
		return err
	}
	start, resumesGroup := o.startPhase(p, rec)
	if start == "" && p.NothingToDo() {
		return nil
	}
	cfg.Start = start
	if resumesGroup {
		if bg, ok := o.cloudProvider.(cloud.BlueGreen); ok && rec.Cloud.Green != "" {
			bg.UseGreen(rec.Cloud.Green)
		}
		cfg.BlueDeleted = p.Cloud.BlueDeleted
	}
	cfg.RollingBack = rollsBackInPlace(rec, o.Request)
	cfg.EarlierDone = earlierDone(rec, cfg.RollingBack)
	o.recordRequest(rec, p)
	cfg.Control, cfg.NoWait = requests, o.NoWait
	previouslyDone := rec.Done
	// What the last stop noted ("paused by cancel ...", "soaking until
	// ...") is no longer so once this run holds the lock; status showed it
	// beside a live run. The run's end writes its own.
	rec.Strategy, rec.Target, rec.Holder, rec.LastError, rec.Note = p.Strategy, p.TargetLabels, holder, "", ""
	// A rollback counts its own nodes: those the upgrade replaced are
	// replaced again (see state.Record.Counted).
	rec.Batches, rec.NodesTotal = len(p.Batches), len(cfg.EarlierDone)+p.Nodes.Outdated
	cfg.Record = rec
	cfg.Save = func(ctx context.Context) error { return store.Save(ctx, rec) }
	cfg.OnProgress = recordProgress(store, rec, p, previouslyDone)
	engine, err := upgrade.New(cfg)
	if err != nil {
		return err
	}
	err = engine.Run(ctx)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	recordEnd(rec, err, engine.Note())
	if saveErr := store.Save(cleanupCtx, rec); saveErr != nil && err == nil {
		return saveErr
	}
	return err
}

// recordRequest writes into rec what resume, rollback and abort repeat:
// the request, and the nodes short-lived leaves running.
func (o *RunOptions) recordRequest(rec *state.Record, p *plan.Plan) {
	rec.LeftRunning, rec.MaxAge = nil, 0
	if p.Traits().LeavesRunning {
		for _, n := range p.ShortLived {
			rec.LeftRunning = append(rec.LeftRunning, state.NodeAge{Name: n.Name, Created: n.Created})
		}
		rec.MaxAge = o.MaxAge
	}
	req := o.Request
	if req.Provider == "" && p.Cloud != nil {
		// Repeated by resume, rollback and abort, where no flag was given
		// to tell a cloud from the cloud flags (--ami, --image).
		req.Provider = p.Provider
	}
	rec.Request = &req
}

// recordEnd writes how the run stopped into rec: finished, paused or left
// soaking (noted), or stopped by err.
func recordEnd(rec *state.Record, err error, note string) {
	var paused *upgrade.PausedError
	var soaking *upgrade.SoakingError
	switch {
	case errors.As(err, &paused) || errors.As(err, &soaking):
		rec.Note = err.Error()
	case errors.Is(err, context.Canceled):
		// The record says what stopped the run, not Go's "context canceled".
		rec.LastError = interruptedError
	case err != nil:
		rec.LastError = err.Error()
	default:
		now := time.Now().UTC().Truncate(time.Second)
		rec.FinishedAt, rec.InFlight, rec.Note = &now, nil, note
	}
}

// recordToRun is the record this run writes: the unfinished run's, which
// it goes on with, or a new one. It refuses a run paused by cancel, and an
// unfinished run on another group than the plan's.
func (o *RunOptions) recordToRun(ctx context.Context, store *state.Store, requests *state.Requests, p *plan.Plan) (*state.Record, error) {
	group := o.recordName()
	rec, err := store.Load(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := refusePendingCancel(ctx, requests, rec); err != nil {
		return nil, err
	}
	if rec == nil || rec.FinishedAt != nil {
		rec = &state.Record{NodeGroup: group, StartedAt: time.Now().UTC().Truncate(time.Second)}
	}
	if rec.Cloud != nil && rec.Cloud.Group != cloud.GroupName(o.cloudProvider) && (p.Cloud == nil || rec.Cloud.Group != p.Cloud.BlueDeleted) {
		return nil, usageErrorf("node group %q has an unfinished run on %s group %q; finish it with %s", group, rec.Cloud.Provider, rec.Cloud.Group, o.groupFlags(rec.Cloud.Provider, rec.Cloud.Group))
	}
	return rec, nil
}

// startPhase is where the run begins: a rollback, or, after an
// interrupted run whose service's update goes on or that got past its
// batches on its cloud group (resumesGroup), where it stopped; "" for the
// strategy's first.
func (o *RunOptions) startPhase(p *plan.Plan, rec *state.Record) (start plan.Phase, resumesGroup bool) {
	flow := plan.Flow{Batches: len(p.Batches), CloudGroup: isGroup(o.cloudProvider)}
	switch {
	case o.rollback:
		return plan.PhaseRollback, false
	case rec.Managed != nil && runStrategy(p).ResumeAt(plan.Phase(rec.Phase), flow) != "":
		// The service's update goes on: follow the same one.
		return runStrategy(p).ResumeAt(plan.Phase(rec.Phase), flow), false
	case rec.Cloud != nil && o.strategy.ResumeAt(plan.Phase(rec.Phase), flow) != "":
		// The last run got past its batches: go on from where it stopped.
		return o.strategy.ResumeAt(plan.Phase(rec.Phase), flow), true
	}
	return "", false
}

// recordProgress keeps rec as the run goes: its phase and batch, the
// nodes done (after those of earlier attempts) and those under way.
func recordProgress(store *state.Store, rec *state.Record, p *plan.Plan, previouslyDone []string) func(context.Context, plan.State, []string) error {
	return func(ctx context.Context, s plan.State, done []string) error {
		rec.Phase, rec.Batch = string(s.Phase), s.Batch+1
		rec.Done = append(slices.Clip(previouslyDone), done...)
		rec.InFlight = nil
		if plan.BatchPhase(s.Phase) && s.Batch < len(p.Batches) {
			for _, n := range p.Batches[s.Batch].Nodes {
				if !slices.Contains(done, n.Name) {
					rec.InFlight = append(rec.InFlight, n.Name)
				}
			}
		}
		if rec.Cloud != nil && rec.Cloud.Shrinking != "" {
			rec.InFlight = append(rec.InFlight, rec.Cloud.Shrinking)
		}
		return store.Save(ctx, rec)
	}
}

// refusePendingCancel refuses to start over a run paused by cancel. A
// request left on a finished run (a cancel sent as it finished: the run
// reads requests between phases, not after its last) is for no run: it is
// dropped, or it would refuse every later run of the group.
func refusePendingCancel(ctx context.Context, requests *state.Requests, rec *state.Record) error {
	req, err := requests.Pending(ctx)
	switch {
	case err != nil:
		return err
	case req == "":
		return nil
	case rec == nil || rec.FinishedAt != nil:
		return requests.Clear(ctx)
	case req == state.RequestCancel:
		g := requests.Group
		return usageErrorf("node group %q is paused (cancel) in phase %s; continue with \"kubectl nodeupgrade resume %s\", undo with rollback, or put it back in service with \"kubectl nodeupgrade abort %s\"", g, rec.Phase, g, g)
	}
	return nil
}

// refuseBlockers stops a run whose audit found blockers, unless --force or
// --ignore-check says to go on (for machine-left-running, only
// --leave-machines-running, which the plan already heard). what is what
// is refused ("refusing to run").
func (o *RunOptions) refuseBlockers(p *plan.Plan, what string) error {
	var left []string
	var only check.Finding
	var ignorable []string
	for _, f := range p.Blockers() {
		// --force is about pods; machines left running take a flag that
		// says so.
		if f.Check == check.CheckMachineLeftRunning || !o.Force && !slices.Contains(o.IgnoreChecks, f.Check) {
			left = append(left, fmt.Sprintf("%s (%s)", f.Check, f.Object()))
			only = f
			if f.Check != check.CheckMachineLeftRunning && !slices.Contains(ignorable, f.Check) {
				ignorable = append(ignorable, f.Check)
			}
		}
	}
	override := ""
	if len(ignorable) > 0 {
		override = ", or use --ignore-check " + strings.Join(ignorable, " --ignore-check ") + " or --force"
	}
	switch len(left) {
	case 0:
		return nil
	case 1:
		// One blocker: say it whole, with its fix.
		return &blockerRefusal{fmt.Sprintf("%s: %s: %s; %s%s", what, left[0], only.Message, only.Fix, override)}
	}
	return &blockerRefusal{fmt.Sprintf("%s: %d blockers: %s; fix them%s", what, len(left), strings.Join(left, ", "), override)}
}

// blockerRefusal is run's refusal of a plan with blockers, and plan's
// answer to --detailed-exitcode: exit 5, as check's, so that a script
// tells it from a typo (exit 2). Nothing was changed.
type blockerRefusal struct{ msg string }

func (e *blockerRefusal) Error() string { return e.msg }
func (e *blockerRefusal) exitCode() int { return ExitBlockers }

// rollsBackInPlace reports whether req takes an unfinished run's cloud
// group back to the version it launched before the run: an eks or surge
// rollback, the rollback command's or the same request given again.
func rollsBackInPlace(rec *state.Record, req plan.Request) bool {
	return rec != nil && rec.FinishedAt == nil && rec.Cloud != nil && rec.Cloud.FromVersion != "" &&
		req.Cloud.Image == "" && req.Cloud.Version == rec.Cloud.FromVersion
}

// earlierDone are the nodes earlier, interrupted attempts of the run
// replaced. A rollback's first attempt records where the upgrade's nodes
// end in Done, so the rollback counts only its own.
func earlierDone(rec *state.Record, rollingBack bool) []string {
	if !rollingBack {
		return rec.Done
	}
	if rec.RollbackFrom == nil {
		n := len(rec.Done)
		rec.RollbackFrom = &n
	}
	return rec.Done[min(*rec.RollbackFrom, len(rec.Done)):]
}

// question is what the run asks before it changes anything: what it will
// do, in the words of what it is (an upgrade, a rollback, the end of an
// interrupted run).
func (o *RunOptions) question(p *plan.Plan, rec *state.Record) string {
	unfinished := rec != nil && rec.FinishedAt == nil
	batches := plan.Count(len(p.Batches), "batch")
	switch {
	case o.rollback:
		blue := "blue"
		if p.Nodes.Outdated > 0 {
			blue = fmt.Sprintf("blue's %s", plan.Count(p.Nodes.Outdated, "node"))
		}
		green := "drain the green nodes"
		if unfinished && rec.Cloud != nil && rec.Cloud.Green != "" {
			green = fmt.Sprintf("drain green %q", rec.Cloud.Green)
			if rec.Cloud.GreenCreated {
				green += " and delete it"
			}
		}
		return fmt.Sprintf("Roll back the run on %q: put %s back in service, then %s?", o.recordName(), blue, green)
	case rollsBackInPlace(rec, o.Request) && p.Nodes.Outdated == 0:
		return fmt.Sprintf("Roll back the run on %q: no node runs version %s yet; point the group back at version %s and restore its sizes?", rec.NodeGroup, rec.Cloud.TargetVersion, rec.Cloud.FromVersion)
	case rollsBackInPlace(rec, o.Request):
		return fmt.Sprintf("Roll back the run on %q: replace the %s on version %s with version %s, in %s (nodes never upgraded are not touched)?", rec.NodeGroup, plan.Count(p.Nodes.Outdated, "node"), rec.Cloud.TargetVersion, rec.Cloud.FromVersion, batches)
	case unfinished && p.Nodes.Outdated == 0:
		return fmt.Sprintf("Finish the interrupted run on %q from phase %s (%s already replaced, none left to upgrade)?", rec.NodeGroup, rec.Phase, plan.Count(len(rec.Done), "node"))
	case unfinished && len(rec.Done) > 0:
		return fmt.Sprintf("Upgrade the %s left in %s (%s replaced by the interrupted run)?", plan.Count(p.Nodes.Outdated, "node"), batches, plan.Count(len(rec.Done), "node"))
	}
	return fmt.Sprintf("Upgrade %s in %s?", plan.Count(p.Nodes.Outdated, "node"), batches)
}

func (o *RunOptions) confirm(question string) (bool, error) {
	return askYes(o.In, o.ErrOut, question)
}

// askYes asks question on errOut and reads the answer from in: yes only
// for y or yes.
func askYes(in io.Reader, errOut io.Writer, question string) (bool, error) {
	fmt.Fprintf(errOut, "%s [y/N]: ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// compareSaved refuses a plan file that no longer describes the cluster;
// planned nodes a run of it already did are expected to be gone.
func compareSaved(saved, fresh *plan.Plan, file string, done map[string]bool) error {
	want, got := saved.OutdatedNames(), fresh.OutdatedNames()
	for _, n := range want {
		if !slices.Contains(got, n) && !done[n] {
			return usageErrorf("--plan-file %q is stale: node %q is no longer an outdated node of the group; run plan again", file, n)
		}
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			return usageErrorf("--plan-file %q is stale: node %q is outdated but not in the plan; run plan again", file, n)
		}
	}
	return nil
}

// withoutDone is the saved plan minus the nodes already done, with the
// fresh plan's view of the cloud group (which knows an interrupted run's
// recorded sizes).
func withoutDone(saved, fresh *plan.Plan, done map[string]bool) *plan.Plan {
	p := *saved
	p.Cloud, p.Nodes = fresh.Cloud, fresh.Nodes
	p.Batches = nil
	for _, b := range saved.Batches {
		var left []plan.PlannedNode
		for _, n := range b.Nodes {
			if !done[n.Name] {
				left = append(left, n)
			}
		}
		if len(left) > 0 {
			p.Batches = append(p.Batches, plan.Batch{Number: len(p.Batches) + 1, Nodes: left})
		}
	}
	return &p
}

// groupFlags are the flags that pick a provider's group: --provider, and
// the provider's own flag naming the group where it has one.
func (o *PlanOptions) groupFlags(provider, group string) string {
	flags := "--provider " + provider
	if name := o.bound.Group[provider]; name != "" {
		flags += fmt.Sprintf(" --%s %s", name, group)
	}
	return flags
}

// isGroup reports whether p resizes a group of machines.
func isGroup(p cloud.Provider) bool {
	_, ok := p.(cloud.Group)
	return ok
}

// runStrategy is the strategy the run of p executes (the service's update
// where the group's service carries it out).
func runStrategy(p *plan.Plan) plan.Strategy {
	s, _ := p.RunStrategy() // the plan was built from a known strategy
	return s
}
