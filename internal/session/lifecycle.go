package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The run lifecycle: the record stores where a run stands (state.RunState),
// Describe adds what only the lock and the pending requests tell, and
// Accept says which command each status takes. Every message that
// suggests a next command takes it from Next, so no suggestion is refused
// (TestEverySuggestionIsAccepted holds that for every status and command).

// Command is an operator's command on a node group's recorded run.
type Command string

// The commands that act on a recorded run. CmdRun is the same run command
// again (a run that stopped is finished by running it again).
const (
	CmdRun      Command = "run"
	CmdResume   Command = "resume"
	CmdCancel   Command = "cancel"
	CmdRollback Command = "rollback"
	CmdComplete Command = "complete"
	CmdAbort    Command = "abort"
)

// Commands are every command the lifecycle answers for, in the order
// suggestions list them.
var Commands = []Command{CmdResume, CmdRun, CmdComplete, CmdCancel, CmdRollback, CmdAbort}

// The status words that only the lock and the requests tell, beside the
// stored states.
const (
	StatusPausing     state.RunState = "pausing"      // alive, asked by cancel to stop at its next safe point
	StatusRollingBack state.RunState = "rolling back" // alive, undoing the upgrade
	StatusSoakOver    state.RunState = "soak over"    // left soaking, and the soak has ended: resume deletes blue
)

// Statuses are every status Describe gives, in docs/controls.md's order.
var Statuses = []state.RunState{
	state.StateSubmitted, state.StateWaiting, state.StateRunning, StatusPausing, StatusRollingBack,
	state.StatePaused, state.StateWindowClosed, state.StateQuarantined, state.StateSoaking, StatusSoakOver,
	state.StateInterrupted, state.StateFailed, state.StateFinished, state.StateRolledBack, state.StateAborted,
}

// Run is a recorded run as every command sees it.
type Run struct {
	Record *state.Record
	// Alive says a live process holds the run's lock; Request is a
	// control request (cancel, rollback, complete) it has not taken yet.
	Alive   bool
	Request string
	Status  state.RunState
	// RollbackUntil is, for a finished run rollback can undo, when the
	// default --rollback-window closes; nil otherwise.
	RollbackUntil *time.Time
	// KeptBlue is the blue group a finished blue/green run keeps at 0
	// nodes until RollbackUntil (--keep-blue); "" when none.
	KeptBlue string
}

// Describe is the run of r as it stands now, given whether a live process
// holds its lock and a pending request.
func Describe(r *state.Record, alive bool, request string, now time.Time) Run {
	v := Run{Record: r, Alive: alive, Request: request, Status: statusOf(r, alive, request, now)}
	if v.Status == state.StateFinished {
		v.RollbackUntil = rollbackUntil(r, now)
		if c, ok := r.LastChange(); ok && v.RollbackUntil != nil && c.BlueKeptAt(now) {
			v.KeptBlue = c.KeptBlue
		}
	}
	return v
}

func statusOf(r *state.Record, alive bool, request string, now time.Time) state.RunState {
	stored := r.State
	if stored == "" {
		stored = storedBefore(r)
	}
	phase := plan.Phase(r.Phase)
	switch {
	case stored.Over():
		return stored
	case alive && stoppedOnItsOwn(stored):
		// The run wrote how it stopped and has not given the lock up yet.
		return stored
	case alive:
		switch {
		case request == state.RequestCancel:
			return StatusPausing
		case phase == plan.PhaseRollback || request == state.RequestRollback:
			return StatusRollingBack
		case phase == plan.PhaseSoak || phase == plan.PhaseBatchSoak:
			return state.StateSoaking
		case r.WaitingForWindow != nil:
			return state.StateWaiting
		}
		return state.StateRunning
	case request == state.RequestCancel:
		// Cancel marks a stopped run paused; run refuses it until resume.
		return state.StatePaused
	case soakRecorded(r) && stored != state.StateFailed:
		// Left in its soak (--no-wait, Ctrl-C, a kill): the soak's clock
		// runs on in the record whether or not a process follows it.
		if now.Before(*r.Cloud.SoakUntil) {
			return state.StateSoaking
		}
		return StatusSoakOver
	case stored == state.StateRunning || stored == state.StateWaiting:
		// No process holds the lock of a run recorded as going on:
		// killed (kill -9, a lost machine) before it could say why.
		return state.StateInterrupted
	}
	return stored
}

// stoppedOnItsOwn reports whether s is written by a run as it stops:
// a run starting again writes "running" before anything else.
func stoppedOnItsOwn(s state.RunState) bool {
	switch s {
	case state.StateInterrupted, state.StateFailed, state.StatePaused, state.StateWindowClosed, state.StateQuarantined:
		return true
	}
	return false
}

// storedBefore is the state of a record written before records kept one,
// read from its typed fields.
func storedBefore(r *state.Record) state.RunState {
	switch {
	case r.AbortedAt != nil:
		return state.StateAborted
	case r.FinishedAt != nil && rolledBackInPlace(r):
		return state.StateRolledBack
	case r.FinishedAt != nil:
		return state.StateFinished
	case r.LastError == InterruptedError || r.LastError == "context canceled":
		return state.StateInterrupted
	case r.LastError != "":
		return state.StateFailed
	case r.Cloud != nil && r.Cloud.SoakUntil != nil && plan.Phase(r.Phase) == plan.PhaseSoak:
		return state.StateSoaking
	}
	return state.StateRunning
}

// rolledBackInPlace reports whether r is of a rollback: blue/green's, or
// an eks or surge run sent back to the version the group launched before.
func rolledBackInPlace(r *state.Record) bool {
	if plan.Phase(r.Phase) == plan.PhaseRollback {
		return true
	}
	c := r.Cloud
	return c != nil && c.FromVersion != "" && c.TargetVersion == c.FromVersion &&
		r.Request != nil && r.Request.Cloud.Version == c.FromVersion
}

// Live reports whether a process works on the run now.
func (v Run) Live() bool { return v.Alive && !v.Status.Over() }

// Unfinished reports whether the run can still go on or be undone.
func (v Run) Unfinished() bool { return !v.Status.Over() }

// Where says in words where the run stands: its phase, or what it waits
// for before it has one.
func (v Run) Where() string {
	r := v.Record
	switch {
	case r.WaitingForWindow != nil && v.Alive:
		return "waiting for its maintenance window (opens " + r.WaitingForWindow.UTC().Format(time.RFC3339) + ")"
	case r.Phase != "":
		return "in phase " + r.Phase
	case v.Status == state.StateSubmitted:
		return "submitted to its Job, whose pod has not started it"
	}
	return "before its first phase"
}

// Accept is nil when the run takes cmd now, else the refusal (bad input)
// saying why and what it takes instead.
func (v Run) Accept(cmd Command) error {
	reason := v.refusal(cmd)
	if reason == "" {
		return nil
	}
	verb := string(cmd)
	if cmd == CmdRollback {
		verb = "roll back"
	}
	msg := fmt.Sprintf("cannot %s: %s", verb, reason)
	if next := v.Suggest(); next != "" {
		msg += "; " + next
	}
	return Usagef("%s", msg)
}

// refusal is why the run does not take cmd now; "" when it does.
func (v Run) refusal(cmd Command) string {
	g, r := v.Record.NodeGroup, v.Record
	switch {
	case !v.Unfinished():
		if cmd == CmdRun || cmd == CmdAbort {
			return "" // a new run; abort looks for anything a run left
		}
		if cmd == CmdRollback && v.Status == state.StateFinished {
			return "" // a run back to the version before (RollbackRequest)
		}
		return fmt.Sprintf("the last run on %q is %s: it has nothing to %s", g, v.Status, cmd)
	case plan.Phase(r.Phase) == plan.PhaseDeleteBlue && cmd != CmdResume && cmd != CmdRun:
		return fmt.Sprintf("the run on %q is deleting blue, which cannot be stopped or undone", g)
	case v.Live():
		return v.liveRefusal(cmd)
	}
	return v.stoppedRefusal(cmd)
}

// liveRefusal is why a run a live process drives does not take cmd.
func (v Run) liveRefusal(cmd Command) string {
	g, r := v.Record.NodeGroup, v.Record
	alive := fmt.Sprintf("the run on %q is alive (%s)", g, r.Holder)
	if r.Managed != nil && cmd != CmdResume && cmd != CmdRun {
		return "" // the service's own controls: they say what they allow
	}
	switch cmd {
	case CmdCancel:
		if v.Status != StatusPausing && noSafePointLeft(r) {
			return v.noSafePoint()
		}
		return ""
	case CmdComplete:
		return notSoaking(v)
	case CmdRollback:
		switch {
		case r.Managed != nil:
			return alive + " and follows the service's update"
		case rollbackKind(r) == plan.RollbackInPlace:
			return alive
		case v.Status == StatusRollingBack:
			return fmt.Sprintf("the run on %q is rolling back already", g)
		}
		return v.rollbackRefusal()
	}
	return alive
}

// stoppedRefusal is why a run no process drives does not take cmd.
func (v Run) stoppedRefusal(cmd Command) string {
	g := v.Record.NodeGroup
	switch cmd {
	case CmdRun:
		if v.Status == state.StatePaused {
			return fmt.Sprintf("node group %q is paused (cancel) %s", g, v.Where())
		}
		if v.Status == state.StateSubmitted {
			return fmt.Sprintf("the run on %q is %s", g, v.Where())
		}
	case CmdResume:
		if v.Status == state.StateSubmitted {
			return fmt.Sprintf("the run on %q is %s", g, v.Where())
		}
	case CmdComplete:
		return notSoaking(v)
	case CmdRollback:
		return v.rollbackRefusal()
	}
	return ""
}

// notSoaking is why a run is not one whose soak complete can end.
func notSoaking(v Run) string {
	if p := plan.Phase(v.Record.Phase); p == plan.PhaseSoak || p == plan.PhaseBatchSoak || v.Record.Managed != nil {
		return ""
	}
	return fmt.Sprintf("the run on %q is not soaking (%s)", v.Record.NodeGroup, v.Where())
}

// noSafePoint is why a live run past its last safe point is not paused:
// it ends on its own, and then a run towards the version before undoes
// it (rollback is a live run's no more).
func (v Run) noSafePoint() string {
	g, r := v.Record.NodeGroup, v.Record
	msg := fmt.Sprintf("the run on %q is in phase %s, after which it has no safe point to pause at: it ends on its own; follow it with \"kubectl nodeupgrade status -w %s\"", g, r.Phase, g)
	if plan.Phase(r.Phase) != plan.PhaseRollback {
		msg += ", then undo it with " + RunBack(r, g)
	}
	return msg
}

// rollbackKind is how the strategy of r is undone.
func rollbackKind(r *state.Record) plan.Rollback {
	if s, err := plan.LookupStrategy(r.Strategy); err == nil {
		return s.Traits().Rollback
	}
	return plan.RollbackNone
}

// rollbackRefusal is why a stopped run (or a live blue/green one) cannot
// be rolled back.
func (v Run) rollbackRefusal() string {
	g, r := v.Record.NodeGroup, v.Record
	switch {
	case r.Managed != nil:
		return "" // the service's own rollback: it says what it allows
	case v.Status == state.StateSubmitted:
		return fmt.Sprintf("the run on %q is %s", g, v.Where())
	case len(r.Done) == 0 && (r.Cloud == nil || r.Cloud.Original == nil) && r.Phase == "":
		return fmt.Sprintf("the run on %q changed nothing yet (%s): there is nothing to undo", g, v.Where())
	}
	switch rollbackKind(r) {
	case plan.RollbackNone:
		names := plan.RollbackStrategies()
		return fmt.Sprintf("the run on %q uses strategy %q; rollback supports %s and %s", g, r.Strategy, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
	case plan.RollbackInPlace:
		if r.Cloud == nil || r.Cloud.FromVersion == "" {
			return fmt.Sprintf("the run on %q recorded no version of its group to go back to (%s)", g, v.Where())
		}
	}
	return ""
}

// noSafePointLeft reports whether a live run in r's phase meets no safe
// point before it ends (the engine reads requests between phases): a
// cancel would be answered yes and do nothing.
func noSafePointLeft(r *state.Record) bool {
	phase := plan.Phase(r.Phase)
	if phase == plan.PhaseRollback || phase == plan.PhaseDone {
		return true // a rollback reads no request
	}
	s, err := plan.LookupStrategy(r.Strategy)
	if err != nil || phase == "" {
		return false
	}
	next := s.Next(plan.State{Phase: phase, Batch: max(r.Batch-1, 0)}, plan.Flow{Batches: r.Batches, CloudGroup: r.Cloud != nil})
	return next.Phase == plan.PhaseDone
}

// Next are the commands the run takes now that move it on, in the order
// an operator would reach for them.
func (v Run) Next() []Command {
	var next []Command
	for _, cmd := range v.relevant() {
		// A service's update takes its own controls alone: the control
		// itself refuses the others, saying what the service offers.
		if m := v.Record.Managed; m != nil && !m.Offers(string(cmd)) {
			continue
		}
		if cmd == CmdAbort && v.settingsStuck() {
			continue
		}
		if v.refusal(cmd) == "" {
			next = append(next, cmd)
		}
	}
	return next
}

// settingsStuck reports whether abort would refuse the stopped run: the
// service's update stopped (cancel, a failure) with the run's settings on
// the group, and the service takes abort's write of them as the order to
// finish it (state.ManagedRecord.SettingsStuck). Abort is not refused here:
// once the settings are set back by hand it ends the record.
func (v Run) settingsStuck() bool {
	return !v.Live() && plan.Phase(v.Record.Phase) == plan.PhaseUpdate && v.Record.Managed.SettingsStuck()
}

// relevant are the commands worth suggesting in the run's status: those
// that move it on, not every one it would take.
func (v Run) relevant() []Command {
	switch {
	case v.RollbackUntil != nil:
		return []Command{CmdRollback}
	case !v.Unfinished():
		return nil
	case v.Live():
		return []Command{CmdComplete, CmdCancel, CmdRollback}
	case v.Status == state.StatePaused:
		return []Command{CmdResume, CmdComplete, CmdRollback, CmdAbort}
	case v.Status == state.StateSubmitted:
		return []Command{CmdCancel, CmdAbort}
	}
	return []Command{CmdRun, CmdComplete, CmdRollback, CmdAbort}
}

// Suggest is the next steps of the run in words, each a command it takes.
func (v Run) Suggest() string {
	var parts []string
	for _, cmd := range v.Next() {
		parts = append(parts, v.suggestion(cmd))
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + ", or " + parts[len(parts)-1]
}

// suggestion is one next step: what it does, and the command.
func (v Run) suggestion(cmd Command) string {
	g := v.Record.NodeGroup
	line := fmt.Sprintf("%q", "kubectl nodeupgrade "+string(cmd)+" "+g)
	switch cmd {
	case CmdRun:
		switch v.Status {
		case state.StateWindowClosed:
			return "run the same command again with a later --not-after to go on"
		case state.StateQuarantined:
			return "relax what holds the quarantined nodes and run the same command again to replace them"
		}
		return "run the same command again or " + fmt.Sprintf("%q", "kubectl nodeupgrade resume "+g) + " to go on"
	case CmdResume:
		return "continue with " + line
	case CmdComplete:
		return "end the soak now with " + line
	case CmdCancel:
		if v.Status == state.StateSubmitted {
			return "withdraw the Job with " + line
		}
		return "pause it with " + line
	case CmdRollback:
		switch {
		case v.KeptBlue != "":
			return fmt.Sprintf("undo it with %s until %s, which scales blue %q, kept at 0 nodes, back up (--keep-blue); the next run after that deletes blue", line, v.RollbackUntil.UTC().Format(time.RFC3339), v.KeptBlue)
		case v.RollbackUntil != nil:
			return fmt.Sprintf("undo it with %s until %s (--rollback-window %s)", line, v.RollbackUntil.UTC().Format(time.RFC3339), state.DefaultRollbackWindow)
		}
		return "undo it with " + line
	}
	return "put the group back in service with " + line
}

// Look is the recorded run of group as it stands now (nil: none
// recorded). A read that fails is an error, never "no run".
func (s *Session) Look(ctx context.Context, group string) (*Run, error) {
	rec, err := s.store().Load(ctx, group)
	if err != nil || rec == nil {
		return nil, err
	}
	return s.lookAt(ctx, rec)
}

// Runs are every run recorded in the state namespace, as they stand now.
func (s *Session) Runs(ctx context.Context) ([]*Run, error) {
	records, err := s.store().List(ctx)
	if err != nil {
		return nil, err
	}
	var runs []*Run
	for _, rec := range records {
		run, err := s.lookAt(ctx, rec)
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// lookAt reads what rec alone does not say: whether a live process holds
// the lock, and a pending request.
func (s *Session) lookAt(ctx context.Context, rec *state.Record) (*Run, error) {
	held, err := s.Holder(ctx, rec.NodeGroup)
	if err != nil {
		return nil, err
	}
	if held == nil && rec.FinishedAt == nil {
		// rec was read before the lock: the run may have written its last
		// record and given the lock up in between (it does so in that
		// order), so a record read now is its last word.
		again, err := s.store().Load(ctx, rec.NodeGroup)
		if err != nil {
			return nil, err
		}
		if again != nil {
			rec = again
		}
	}
	request, err := s.Requests(rec.NodeGroup).Pending(ctx)
	if err != nil {
		return nil, err
	}
	run := Describe(rec, held != nil, request, time.Now())
	return &run, nil
}

// LifecycleTable is docs/controls.md's table of the lifecycle: for each
// status, whether each command is taken there, for an eks run on a cloud
// group and a blue/green one ("eks / blue-green"), from the example runs
// ExampleRun builds.
func LifecycleTable() string {
	var b strings.Builder
	b.WriteString("| status |")
	for _, cmd := range Commands {
		fmt.Fprintf(&b, " %s |", cmd)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(Commands)))
	b.WriteString("\n")
	for _, st := range Statuses {
		fmt.Fprintf(&b, "| %s |", st)
		for _, cmd := range Commands {
			var cells []string
			for _, strategy := range []string{"eks", "blue-green"} {
				cells = append(cells, takes(ExampleRun(st, strategy), cmd))
			}
			fmt.Fprintf(&b, " %s |", strings.Join(cells, " / "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// takes is a cell of LifecycleTable: yes, no, or - where the strategy has
// no such status.
func takes(run *Run, cmd Command) string {
	switch {
	case run == nil:
		return "-"
	case run.Accept(cmd) == nil:
		return "yes"
	}
	return "no"
}

// ExampleRun is a run of strategy (eks or blue-green, on a cloud group)
// in status st, two batches of five in, as the run leaves its record
// there; nil where the strategy has no such status (eks never soaks).
func ExampleRun(st state.RunState, strategy string) *Run {
	started := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	now := started.Add(20 * time.Minute)
	r := &state.Record{NodeGroup: "demo", Strategy: strategy, State: state.StateRunning, Phase: string(plan.PhaseDrain),
		Batch: 3, Batches: 5, NodesTotal: 10, Done: []string{"n1", "n2", "n3", "n4"}, StartedAt: started, UpdatedAt: now,
		Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "demo", FromVersion: "1", TargetVersion: "2", Original: &plan.Sizes{Min: 3, Desired: 10, Max: 12}}}}
	alive, request := false, ""
	soaks := strategy == string(plan.StrategyBlueGreen)
	switch st {
	case state.StateSubmitted:
		r.State, r.Phase, r.Done, r.Cloud = st, "", nil, nil
	case state.StateWaiting:
		opens := now.Add(time.Hour)
		alive, r.WaitingForWindow = true, &opens
	case state.StateRunning:
		alive = true
	case StatusPausing:
		alive, request = true, state.RequestCancel
	case StatusRollingBack:
		alive, request = true, state.RequestRollback
	case state.StatePaused:
		r.State, request = st, state.RequestCancel
	case state.StateQuarantined:
		if soaks { // blue/green deletes all of blue: it keeps no node back
			return nil
		}
		r.State = st
		r.Quarantined = []state.Quarantined{{Node: "n5", Held: []state.HeldByPDB{{Pod: "shop/db-0", Reason: "blocked by PodDisruptionBudget", PDBs: []string{"shop/db"}}}}}
	case state.StateSoaking, StatusSoakOver:
		if !soaks {
			return nil
		}
		until := now.Add(time.Hour)
		if st == StatusSoakOver {
			until = now.Add(-time.Minute)
		}
		r.State, r.Phase, r.Cloud.SoakUntil = state.StateSoaking, string(plan.PhaseSoak), &until
	case state.StateFinished, state.StateRolledBack, state.StateAborted:
		r.State, r.Phase, r.FinishedAt = st, string(plan.PhaseDone), &now
		if st == state.StateAborted {
			r.AbortedAt = &now
		}
	default:
		r.State = st
	}
	run := Describe(r, alive, request, now)
	return &run
}
