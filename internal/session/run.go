package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// InterruptedError is what the record says of a run stopped by a signal,
// instead of Go's "context canceled".
const InterruptedError = "interrupted (Ctrl-C or SIGTERM)"

// Run runs pl, agreed to, under the node group's lock, and keeps its
// record; a run interrupted past its batches goes on from there.
func (s *Session) Run(ctx context.Context, pl *Planned) error {
	if pl.Request.Dir == "" {
		// Recorded, so that resume typed elsewhere runs the gates here.
		pl.Request.Dir, _ = os.Getwd()
	}
	cfg, err := s.EngineConfig(pl.Plan, pl.Request.Request, s.providerOf(pl))
	if err != nil {
		return err
	}
	if h := pl.Hooks; h != nil && h.Any() && s.HookKubeconfig != nil {
		path, remove, err := s.HookKubeconfig()
		if err != nil {
			return err
		}
		defer remove()
		cfg.Kubeconfig = path
	}
	return s.runLocked(ctx, pl, cfg)
}

// providerOf is the provider that changes pl's group: the cloud's, or
// none's.
func (s *Session) providerOf(pl *Planned) cloud.Provider {
	if pl.Provider != nil {
		return pl.Provider
	}
	return &cloud.None{Client: s.Client, DeleteNode: pl.Request.DeleteNode}
}

// EngineConfig is the engine's configuration for plan p as req asks, with
// the provider that changes the group: run's and abort's.
func (s *Session) EngineConfig(p *plan.Plan, req plan.Request, provider cloud.Provider) (upgrade.Config, error) {
	taint, err := plan.ParseTaint(p.Taint)
	if err != nil {
		return upgrade.Config{}, err
	}
	traits := p.Traits()
	sched, err := schedule(req)
	if err != nil {
		return upgrade.Config{}, err
	}
	return upgrade.Config{
		Window: sched,
		Client: s.Client,
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
		Undrainable:           req.Undrainable,
		MaxBlockedNodes:       req.MaxBlockedNodes,
		NodeReadyTimeout:      req.NodeReadyTimeout,
		TerminateTimeout:      req.TerminateTimeout,
		DeregistrationTimeout: req.DeregistrationTimeout,
		Events:                upgrade.NewRecorder(s.Client, func(err error) { fmt.Fprintf(s.ErrOut, "warning: %v\n", err) }),
		Out:                   s.Out,
		Color:                 output.Colorizer(output.ColorEnabled(s.Out)),
		Live:                  s.Live,
		MakeRoom:              req.MakeRoom,
		GateDir:               req.Dir,
	}, nil
}

// runLocked holds the node group's lock for the run and keeps its record.
func (s *Session) runLocked(ctx context.Context, pl *Planned, cfg upgrade.Config) error {
	r := pl.Request
	group := r.RecordName()
	// Bookkeeping after the run must happen even when it was interrupted.
	cleanupCtx := context.WithoutCancel(ctx)
	ctx, holder, release, err := s.HoldLock(ctx, group)
	if err != nil {
		return err
	}
	defer release()

	store, requests := s.store(), s.Requests(group)
	rec, err := s.recordToRun(ctx, pl)
	if err != nil {
		return err
	}
	start, resumesGroup := startPhase(pl, rec)
	if start == "" && pl.NothingToDo() {
		return nil
	}
	cfg.Start = start
	if resumesGroup {
		pl.UseRecordedGreen(rec)
		cfg.BlueDeleted = pl.Cloud.BlueDeleted
	}
	cfg.RollingBack = rollsBackInPlace(rec, r.Request) || pl.Managed != nil && start == plan.PhaseRollback
	cfg.EarlierDone = earlierDone(rec, cfg.RollingBack)
	recordRequest(rec, pl)
	cfg.Control, cfg.NoWait = requests, r.NoWait
	previouslyDone := rec.Done
	startAttempt(rec, pl, holder, cfg.EarlierDone)
	cfg.Record = rec
	cfg.Save = func(ctx context.Context) error { return store.Save(ctx, rec) }
	cfg.OnProgress = recordProgress(store, rec, pl.Plan, previouslyDone)
	rep := s.Reports().withReport(ctx, pl, rec, &cfg)
	engine, err := upgrade.New(cfg)
	if err != nil {
		return err
	}
	if err := keptBlueOver(ctx, pl, rec, time.Now()); err != nil {
		return err
	}
	err = CauseOf(ctx, engine.Run(ctx))
	recordEnd(rec, err, engine.Note(), engine.RolledBack())
	recordChange(rec, pl)
	if endErr := keptBlueSuperseded(cleanupCtx, pl, rec); err == nil {
		err = endErr
	}
	rep.finish(cleanupCtx, rec, err)
	if saveErr := store.Save(cleanupCtx, rec); saveErr != nil && err == nil {
		return saveErr
	}
	if err == nil && rec.State == state.StateRolledBack && !r.Rollback {
		return rolledBack(rec, group)
	}
	return stoppedWithNextSteps(rec, err)
}

// startAttempt marks rec as this attempt's, held by holder.
func startAttempt(rec *state.Record, pl *Planned, holder string, earlierDone []string) {
	// What the last stop noted ("paused by cancel ...", "soaking until
	// ...") is no longer so once this run holds the lock; status showed it
	// beside a live run. The run's end writes its own.
	rec.Strategy, rec.Target, rec.Holder, rec.LastError, rec.Note = pl.Strategy, pl.TargetLabels, holder, "", ""
	rec.State = state.StateRunning
	rec.WaitingForWindow = nil
	// The nodes an earlier attempt quarantined are drained again: what
	// held them may have let go.
	rec.Quarantined = nil
	// A rollback counts its own nodes: those the upgrade replaced are
	// replaced again (see state.Record.Counted).
	rec.Batches, rec.NodesTotal = len(pl.Batches), nodesTotal(rec, pl, earlierDone)
	beginAttempt(rec, pl, holder)
	recordFrom(rec, pl)
	answerAsked(rec)
}

// answerAsked marks a resume or rollback asked of rec's run answered
// once an attempt that carries it out starts under the lock: this
// command's, or its in-cluster Job's pod's.
func answerAsked(rec *state.Record) {
	a := rec.Asked
	if a == nil || a.Answered {
		return
	}
	rollback := rec.CurrentAttempt().Kind == state.AttemptRollback
	switch Command(a.Control) {
	case CmdResume:
		a.Answered = !rollback
	case CmdRollback:
		a.Answered = rollback
	}
}

// nodesTotal is how many nodes the run of pl replaces: the earlier
// attempts' and the plan's, or those a service's update under way
// replaces, as its run recorded them (the plan holds the ones left).
func nodesTotal(rec *state.Record, pl *Planned, earlier []string) int {
	// Following the service's update, or finishing on green after blue's
	// deletion, the nodes left to plan are not those the run replaced.
	switch {
	case pl.Cloud == nil:
	case pl.Cloud.Resumed && rec.Managed != nil && len(rec.Managed.Nodes) > 0:
		return len(rec.Managed.Nodes)
	case pl.Cloud.BlueDeleted != "" && rec.Cloud != nil:
		return sets.New(earlier...).Insert(rec.Cloud.BlueNodes...).Len()
	}
	return len(earlier) + pl.Nodes.Outdated
}

// CauseOf is err, or why ctx ended where that is more than a cancel (the
// lock lost, say).
func CauseOf(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// recordRequest writes into rec what resume, rollback and abort repeat:
// the request, and the nodes short-lived leaves running.
func recordRequest(rec *state.Record, pl *Planned) {
	rec.LeftRunning, rec.MaxAge = nil, 0
	if pl.Traits().LeavesRunning {
		for _, n := range pl.ShortLived {
			rec.LeftRunning = append(rec.LeftRunning, state.NodeAge{Name: n.Name, Created: n.Created})
		}
		rec.MaxAge = pl.Request.MaxAge
	}
	req := pl.Request.Request
	if req.Provider == "" && pl.Cloud != nil {
		// Repeated by resume, rollback and abort, where no flag was given
		// to tell a cloud from the cloud flags (--ami, --image).
		req.Provider = pl.Plan.Provider
	}
	rec.Request = &req
}

// recordEnd writes how the run stopped into rec: its state, and for
// people a note (finished, paused, left soaking) or the error.
func recordEnd(rec *state.Record, err error, note string, rolledBack bool) {
	var paused *upgrade.PausedError
	var soaking *upgrade.SoakingError
	var closed *upgrade.WindowClosedError
	var quarantined *upgrade.QuarantinedError
	rec.WaitingForWindow = nil
	switch {
	case errors.As(err, &paused):
		rec.State, rec.Note = state.StatePaused, err.Error()
	case errors.As(err, &soaking):
		rec.State, rec.Note = state.StateSoaking, err.Error()
	case errors.As(err, &closed):
		rec.State, rec.Note = state.StateWindowClosed, err.Error()
	case errors.As(err, &quarantined):
		rec.State, rec.Note = state.StateQuarantined, err.Error()
	case errors.Is(err, context.Canceled):
		// The record says what stopped the run, not Go's "context canceled".
		rec.State, rec.LastError = state.StateInterrupted, InterruptedError
	case err != nil:
		rec.State, rec.LastError = state.StateFailed, err.Error()
	default:
		now := time.Now().UTC().Truncate(time.Second)
		rec.State, rec.FinishedAt, rec.InFlight, rec.Note = state.StateFinished, &now, nil, note
		if rolledBack {
			rec.State = state.StateRolledBack
		}
	}
}

// StoppedError is a run's stop on purpose (paused, left soaking, at
// --not-after) with the next steps its lifecycle takes: the run's own
// words name none, so none is ever refused.
type StoppedError struct {
	Err  error
	Next string
}

func (e *StoppedError) Error() string {
	if e.Next == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "; " + e.Next
}

func (e *StoppedError) Unwrap() error { return e.Err }

// stoppedWithNextSteps is err, with the next steps of rec's run where it
// stopped on purpose.
func stoppedWithNextSteps(rec *state.Record, err error) error {
	switch rec.State {
	case state.StatePaused, state.StateSoaking, state.StateWindowClosed, state.StateQuarantined:
		return &StoppedError{Err: err, Next: Describe(rec, false, "", time.Now()).Suggest()}
	}
	return err
}

// recordToRun is the record this run writes: the unfinished run's, which
// it goes on with, or a new one. It refuses a run paused by cancel, and an
// unfinished run on another group than the plan's.
func (s *Session) recordToRun(ctx context.Context, pl *Planned) (*state.Record, error) {
	group := pl.Request.RecordName()
	rec, err := s.store().Load(ctx, group)
	if err != nil {
		return nil, err
	}
	if rec != nil && rec.State == state.StateSubmitted && rec.Submission != nil {
		// The pod of the Job the run was handed to takes it: from the
		// record as it was, as the run from a terminal would have.
		rec = rec.Submission.Earlier
	}
	if err := s.Controls().RefusePendingCancel(ctx, group, rec); err != nil {
		return nil, err
	}
	// The update a stopped run started unheard is followed, not started
	// again (StartUpdate would only give it back).
	if err := FindStartedUpdate(ctx, pl.Provider, rec); err != nil {
		return nil, err
	}
	if rec == nil || rec.FinishedAt != nil {
		rec = nextRecord(rec, group, time.Now().UTC().Truncate(time.Second))
	}
	if pl.Request.Fleet != "" {
		rec.Fleet = pl.Request.Fleet
	}
	if rec.Cloud != nil && rec.Cloud.Group != cloud.GroupName(pl.Provider) && (pl.Cloud == nil || rec.Cloud.Group != pl.Cloud.BlueDeleted) {
		return nil, Usagef("node group %q has an unfinished run on %s group %q; finish it with %s", group, rec.Cloud.Provider, rec.Cloud.Group, pl.Request.GroupFlags(rec.Cloud.Provider, rec.Cloud.Group))
	}
	return rec, nil
}

// nextRecord is a new run's record after prev, the group's last one
// (nil: none). How the group updated itself before prev's run goes on
// where abort had to leave it held (machines on another template than
// the group's, which it would have replaced undrained): the new run
// would otherwise read the hold as the group's own way and never give
// the group back its policy.
func nextRecord(prev *state.Record, group string, now time.Time) *state.Record {
	rec := &state.Record{NodeGroup: group, StartedAt: now}
	if prev != nil {
		rec.History = prev.History // the group's, not the run's: kept across runs
	}
	if prev != nil && prev.Asked != nil && !prev.Asked.Answered {
		rec.Asked = prev.Asked // the control (a finished run's rollback) that starts this run
	}
	if prev != nil && prev.Cloud != nil && prev.Cloud.UpdatesWere != "" {
		rec.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{
			Provider: prev.Cloud.Provider, Group: prev.Cloud.Group, GroupKind: prev.Cloud.GroupKind, TemplateKind: prev.Cloud.TemplateKind,
		}}
		rec.Cloud.UpdatesWere = prev.Cloud.UpdatesWere
	}
	return rec
}

// settleIdle is what a run that finds nothing to do still owes the
// group, under its lock: the kept blue groups whose time is over are
// deleted, as any run deletes them before it starts (the plan says so);
// and an aborted run whose group it finds so is recorded as finished:
// abort left every node on the target (in the scale-down, say), and
// status would go on saying "aborted" of a group that is upgraded.
func (s *Session) settleIdle(ctx context.Context, pl *Planned, ui Prompt) error {
	group, store := pl.Request.RecordName(), s.store()
	rec, err := store.Load(ctx, group)
	if err != nil || !owesIdle(rec, pl) {
		return err
	}
	if err := confirmKeptOver(rec, pl, ui); err != nil {
		return err
	}
	ctx, _, release, err := s.HoldLock(ctx, group)
	if err != nil {
		return err
	}
	defer release()
	// Read again under the lock: another run may have started meanwhile.
	if rec, err = store.Load(ctx, group); err != nil || !owesIdle(rec, pl) {
		return err
	}
	now := time.Now()
	err = keptBlueOver(ctx, pl, rec, now)
	if rec.AbortedAt != nil {
		rec.AbortedAt, rec.State = nil, state.StateFinished
		rec.Note = "abort left every node on the target: a run after it found nothing to do"
	}
	rec.UpdatedAt = now.UTC().Truncate(time.Second)
	return errors.Join(err, store.Save(ctx, rec))
}

// confirmKeptOver asks, unless --yes, before a run with nothing else to
// do deletes the kept blue groups whose time is over.
func confirmKeptOver(rec *state.Record, pl *Planned, ui Prompt) error {
	kept := keptToEnd(rec, pl, over(time.Now()))
	if len(kept) == 0 || ui.Yes {
		return nil
	}
	names := make([]string, len(kept))
	for i, k := range kept {
		names[i] = fmt.Sprintf("%q", rec.History[k].KeptBlue)
	}
	q := fmt.Sprintf("Nothing to upgrade on %q; delete blue %s, kept past its time (--keep-blue)?", rec.NodeGroup, strings.Join(names, ", "))
	if ok, err := ui.Confirm(q); err != nil || !ok {
		return Usagef("aborted: nothing was changed")
	}
	return nil
}

// owesIdle reports whether a run of pl with nothing to do has rec, the
// group's finished record, to settle (settleIdle).
func owesIdle(rec *state.Record, pl *Planned) bool {
	return rec != nil && rec.FinishedAt != nil && (rec.AbortedAt != nil || len(keptToEnd(rec, pl, over(time.Now()))) > 0)
}

// startPhase is where the run begins: a rollback, or, after an
// interrupted run whose service's update goes on or that got past its
// batches on its cloud group (resumesGroup), where it stopped; "" for the
// strategy's first.
func startPhase(pl *Planned, rec *state.Record) (start plan.Phase, resumesGroup bool) {
	_, isGroup := pl.Provider.(cloud.Scaler)
	flow := plan.Flow{Batches: len(pl.Batches), CloudGroup: isGroup}
	switch {
	case pl.Request.Rollback || ManagedRollingBack(rec):
		// A service's rollback under way is finished, whatever the
		// command: no update can start before it ends.
		return plan.PhaseRollback, false
	case rec.Managed != nil && runStrategy(pl.Plan).ResumeAt(plan.Phase(rec.Phase), flow) != "":
		// The service's update goes on: follow the same one.
		return runStrategy(pl.Plan).ResumeAt(plan.Phase(rec.Phase), flow), false
	case rec.Cloud != nil && pl.Request.strategy.ResumeAt(plan.Phase(rec.Phase), flow) != "":
		// The last run got past its batches: go on from where it stopped.
		return pl.Request.strategy.ResumeAt(plan.Phase(rec.Phase), flow), true
	}
	return "", false
}

// runStrategy is the strategy the run of p executes (the service's update
// where the group's service carries it out).
func runStrategy(p *plan.Plan) plan.Strategy {
	s, _ := p.RunStrategy() // the plan was built from a known strategy
	return s
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
