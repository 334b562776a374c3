package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// FleetRunOptions are the flags of "fleet run" and "fleet resume".
type FleetRunOptions struct {
	fleetOptions
	verb string
	Yes  bool
	// ic are the flags of a coordinator run as a Job in the management
	// cluster (--in-cluster, --context), as run --in-cluster's.
	ic    inClusterOptions
	given map[string]bool
	// poll is how often an approval is looked for.
	poll time.Duration
}

var fleetRunHelp = map[string][3]string{
	"run": {"Run a fleet's stages: every target's run, a stage at a time",
		`Run the fleet of -f, stage after stage. A new fleet is planned first (as
"fleet plan"), and refused, with nothing changed, when a target cannot be
planned, its run would refuse its blockers, or a stage cannot fit a shared
quota. A fleet in flight goes on from its record in --record-context; a file
that resolves differently from the one it started with is refused (exit 2).

Each target runs as "run GROUP --context CONTEXT --yes" with its run flags,
in its own process; a target whose run is alive (a coordinator killed
before) is followed, one that is paused is resumed. A failed or paused target
starts no new target (beyond the stage's maxFailures), the ones in flight run
to their end, and the fleet exits with the first one's exit code. After a
stage: its soak, its gates over the soak (a failing gate exits 8 naming the
gate, its value and threshold), and its approval ("fleet approve"). One
coordinator runs a fleet at a time: it holds a Lease beside the fleet's
record, and another is refused (exit 6) until it stops or its lease runs
out (30s after a coordinator killed elsewhere).

With --in-cluster the coordinator itself runs as a Job in --state-namespace
of the management cluster (--context; it needs deploy/in-cluster.yaml's
ServiceAccount there): the file in a ConfigMap, the fleet's contexts from
the kubeconfig in a Secret. It outlives this terminal, which follows it as
"fleet status -w" does; a pod of the Job killed is replaced and goes on from
the record.`,
		`  # Roll the fleet out
  kubectl nodeupgrade fleet run -f fleet.yaml --yes`},
	"resume": {"Continue a fleet in flight: paused targets resumed, gates evaluated again",
		`Continue the fleet of -f from its record: targets paused by "fleet cancel"
or a gate are resumed, failed ones retried, a stage's failed gates evaluated
again over a new soak, and the stages after it run as "fleet run" runs them.`,
		`  # Go on after a gate failed and the cause was fixed
  kubectl nodeupgrade fleet resume -f fleet.yaml`},
}

func newCmdFleetRun(verb string, base fleetOptions) *cobra.Command {
	o := &FleetRunOptions{fleetOptions: base, verb: verb, poll: 2 * time.Second}
	cmd := fleetFileCommand(verb, fleetRunHelp[verb], o)
	o.addRecordFlags(cmd.Flags())
	if verb == "run" {
		cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Start the fleet (required: it changes every target's cluster)")
	}
	o.ic.addFlags(cmd.Flags())
	cmd.Flags().Lookup("in-cluster").Usage = "Run the fleet's coordinator as a Job in --state-namespace of the management cluster (--context), the fleet file in a ConfigMap and its kubeconfig in a Secret, and follow it as \"fleet status -w\" does (Ctrl-C stops following, not the fleet); see docs/fleet.md"
	return cmd
}

// Complete reads the fleet file.
func (o *FleetRunOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.given = givenFlags(cmd)
	return o.load()
}

// Validate refuses the in-cluster flags where they do not apply; --yes
// is asked for once the plan is shown.
func (o *FleetRunOptions) Validate() error { return o.validateInCluster() }

// Run starts or continues the fleet, here or as a Job (--in-cluster).
func (o *FleetRunOptions) Run(ctx context.Context) error {
	if o.ic.InCluster {
		return o.submit(ctx)
	}
	store, rec, err := o.loadRecord(ctx, o.fleet.Name)
	if err != nil {
		return err
	}
	if rec == nil {
		if err := o.startNew(ctx); err != nil {
			return err
		}
	}
	sched := o.scheduler(store)
	ctx, release, err := sched.Hold(ctx, state.HolderIdentity(), o.ic.earlierPod(), o.ErrOut)
	if err != nil {
		return fleetError(err)
	}
	defer release()
	return fleetError(sched.Run(ctx))
}

// startNew plans a fleet that has not started and refuses it, with
// nothing changed, where the plan says it cannot go through.
func (o *FleetRunOptions) startNew(ctx context.Context) error {
	if o.verb == "resume" {
		return usageErrorf("fleet %q has no record in context %q namespace %q: \"fleet run\" starts it", o.fleet.Name, o.RecordContext, o.StateNamespace)
	}
	r := o.planRollout(ctx)
	if err := printRollout(o.Out, r); err != nil {
		return err
	}
	if err := firstTargetError(r); err != nil {
		return err
	}
	if r.Refused() {
		return &fleetExit{code: ExitBlockers, msg: fmt.Sprintf("refusing to run fleet %q: a target's run would refuse its blockers, or a stage cannot fit a shared quota (see above); nothing was changed", r.Name)}
	}
	if !o.Yes {
		return usageErrorf("fleet %q changes the node groups of %d clusters: review the plan above and give --yes", o.fleet.Name, len(clustersOf(o.fleet)))
	}
	fmt.Fprintln(o.Out)
	return nil
}

func clustersOf(f *fleet.Fleet) []string {
	var out []string
	for _, st := range f.Stages {
		for _, t := range st.Targets {
			if !slices.Contains(out, t.Context) {
				out = append(out, t.Context)
			}
		}
	}
	return out
}

func (o *FleetRunOptions) scheduler(store *fleet.Store) *fleet.Scheduler {
	ev := o.file.Evaluator()
	ev.Dir, ev.Env = o.dir, []string{"NODEUPGRADE_FLEET=" + o.fleet.Name}
	mu := &sync.Mutex{}
	return &fleet.Scheduler{
		Fleet:  o.fleet,
		Store:  store,
		Runner: &fleetRunner{x: o.targets(), store: store, out: o.Out, errOut: o.ErrOut, mu: mu},
		Gates: func(ctx context.Context, gates []string, from, to time.Time) ([]gate.Verdict, error) {
			specs, err := gate.ParseAll(gates)
			if err != nil {
				return nil, err
			}
			return ev.EvaluateAll(ctx, specs, from, to), nil
		},
		Out:   prefixWriter(mu, o.Out, fmt.Sprintf("[fleet %s] ", o.fleet.Name)),
		Now:   time.Now,
		Sleep: transport.Sleep,
		Poll:  o.poll,
	}
}

// fleetError gives the scheduler's errors their exit codes: a plan file
// changed under a fleet in flight is bad input; a failed gate stops the
// fleet on purpose (8); another coordinator's lease is another run's lock
// (6); a stopped stage exits as its first target did.
func fleetError(err error) error {
	var changed *fleet.ChangedError
	var gateErr *fleet.GateError
	var held *fleet.HeldError
	switch {
	case errors.As(err, &changed):
		return usageErrorf("%v", err)
	case errors.As(err, &gateErr):
		return &fleetExit{code: ExitPaused, msg: err.Error()}
	case errors.As(err, &held):
		return &fleetExit{code: ExitLocked, msg: err.Error()}
	}
	return err
}

// fleetRunner runs a target's run in its own cluster, its output
// prefixed with the target.
type fleetRunner struct {
	x           targetExec
	store       *fleet.Store // the fleet's record: when it started
	out, errOut io.Writer
	mu          *sync.Mutex
}

// Run runs t to its end: a new run, or the resume of a paused one. A
// run still alive (started by a coordinator killed since) is followed
// with "status -w" to its end, then looked at again, so no target runs
// twice and one left interrupted is run again.
func (r *fleetRunner) Run(ctx context.Context, t fleet.Target) fleet.Result {
	for follows := 0; ; follows++ {
		st, ok, err := r.x.lookStatus(ctx, t)
		if err != nil {
			return fleet.Result{Outcome: fleet.Failed, Err: err}
		}
		switch {
		case ok && st.Alive && follows < 3:
			if res := r.exec(ctx, t, "status", append([]string{"-w"}, stateFlags(t)...)...); ctx.Err() != nil {
				return res
			}
		case ok && st.Status == StatusPaused:
			return r.exec(ctx, t, "resume", append([]string{"--yes"}, stateFlags(t)...)...)
		default:
			start := time.Now()
			res := r.exec(ctx, t, "run", append(slices.Clone(t.Args), "--yes")...)
			if res.Outcome != fleet.Done {
				return res
			}
			st, ok, err := r.x.lookStatus(ctx, t)
			return fleet.Result{Outcome: runOutcome(st, ok, err, start, r.x.fleet, r.fleetStarted(ctx))}
		}
	}
}

// runOutcome is a target's run that exited 0 as the fleet tells it: done,
// or skipped where it found nothing to do, so wrote no record newer than
// its start (and its record is not one this start of the fleet left, since
// fleetStarted: a coordinator killed after the target finished). A status
// that cannot be read leaves the run's own word: done.
func runOutcome(st RunStatus, found bool, err error, start time.Time, fleetID string, fleetStarted time.Time) fleet.Outcome {
	ours := func(r *state.Record) bool {
		return r.Fleet == fleetID && !r.UpdatedAt.Before(fleetStarted.Truncate(time.Second))
	}
	switch {
	case err != nil:
		return fleet.Done
	case !found || st.Record == nil:
		return fleet.Skipped
	case st.UpdatedAt.Before(start.Truncate(time.Second)) && !ours(st.Record):
		return fleet.Skipped
	}
	return fleet.Done
}

// fleetStarted is when the fleet's record was made; zero where it cannot
// be read or is older than the field.
func (r *fleetRunner) fleetStarted(ctx context.Context) time.Time {
	if rec, err := r.store.Load(ctx); err == nil && rec != nil && rec.Started != nil {
		return *rec.Started
	}
	return time.Time{}
}

// exec runs verb on t, its output prefixed with the target, and maps its
// exit code to the target's outcome.
func (r *fleetRunner) exec(ctx context.Context, t fleet.Target, verb string, args ...string) fleet.Result {
	prefix := fmt.Sprintf("[%s] ", t.ID())
	var tail bytes.Buffer
	cmd := r.x.command(ctx, t, verb, args...)
	cmd.Stdout = prefixWriter(r.mu, r.out, prefix)
	cmd.Stderr = io.MultiWriter(prefixWriter(r.mu, r.errOut, prefix), &tail)
	err := exitOf(cmd.Run(), t, verb, tail.String())
	switch code := ExitCode(err); {
	case err == nil:
		return fleet.Result{Outcome: fleet.Done}
	case code == ExitPaused:
		return fleet.Result{Outcome: fleet.Paused, Err: err}
	default:
		return fleet.Result{Outcome: fleet.Failed, Err: err}
	}
}
