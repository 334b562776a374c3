package session

import (
	"context"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Cancel pauses run, once the lifecycle takes it: a submitted run's Job,
// whose pod has not started it, is withdrawn (earlier is the record as it
// was before, nil: none); a live run is asked to pause at its next safe
// point; a stopped one is marked paused (run refuses it until resume).
func (s Controls) Cancel(ctx context.Context, run *Run) (earlier *state.Record, err error) {
	if err := run.Accept(CmdCancel); err != nil {
		return nil, err
	}
	if run.Status == state.StateSubmitted {
		return s.Jobs().Withdraw(ctx, run.Record.NodeGroup)
	}
	return nil, s.askRun(ctx, run, CmdCancel, state.RequestCancel)
}

// AskRollback asks run's live process, once the lifecycle takes it, to
// turn the run around at its next safe point.
func (s Controls) AskRollback(ctx context.Context, run *Run) error {
	if err := run.Accept(CmdRollback); err != nil {
		return err
	}
	return s.askRun(ctx, run, CmdRollback, state.RequestRollback)
}

// Complete ends run's soak. A live run is asked to and deletes blue at
// once (asked); a stopped run in its node-pool soak has the soak ended in
// its record, so status says "soak over" and resume or run go straight on.
// A stopped batch soak, whose length the record does not hold, is ended
// by the request the run resuming it reads (ClearRequests keeps it).
func (s Controls) Complete(ctx context.Context, run *Run) (asked bool, err error) {
	if err := run.Accept(CmdComplete); err != nil {
		return false, err
	}
	rec := run.Record
	if run.Alive || !soakRecorded(rec) {
		return run.Alive, s.askRun(ctx, run, CmdComplete, state.RequestComplete)
	}
	if err := s.recordAsk(ctx, run, CmdComplete, ""); err != nil {
		return false, err
	}
	now := time.Now().UTC().Truncate(time.Second)
	if now.Before(*rec.Cloud.SoakUntil) {
		rec.Cloud.SoakUntil = &now
	}
	return false, s.answered(ctx, run)
}

// askRun records cmd asked of run, then leaves req for its process (a
// live run reads it between phases; a stopped one's next run does).
func (s Controls) askRun(ctx context.Context, run *Run, cmd Command, req string) error {
	if err := s.recordAsk(ctx, run, cmd, ""); err != nil {
		return err
	}
	if err := s.ask(ctx, run.Record.NodeGroup, req); err != nil {
		return err
	}
	return s.answered(ctx, run)
}

// recordAsk records in run's stored record that cmd was asked of it (of
// the service's update, where one is named), before the command acts: a
// command killed, or an act that fails, leaves the record saying so. A
// live run's own writes keep it (state.Store.Ask).
func (s Controls) recordAsk(ctx context.Context, run *Run, cmd Command, update string) error {
	ask := state.NewAsk(string(cmd), update)
	if _, err := s.store().Ask(ctx, run.Record.NodeGroup, ask); err != nil {
		return err
	}
	run.Record.Asked = &ask
	return nil
}

// answered records that run's asked control was carried out: with the
// rest of a stopped run's record, which the command changed; in a live
// run's, which its process owns, that alone.
func (s Controls) answered(ctx context.Context, run *Run) error {
	ask := *run.Record.Asked
	ask.Answered = true
	run.Record.Asked = &ask
	if run.Alive {
		_, err := s.store().Ask(ctx, run.Record.NodeGroup, ask)
		return err
	}
	return s.store().Save(ctx, run.Record)
}

// soakRecorded reports whether r's run stands in its node-pool soak with
// the soak's end recorded.
func soakRecorded(r *state.Record) bool {
	return plan.Phase(r.Phase) == plan.PhaseSoak && r.Cloud != nil && r.Cloud.SoakUntil != nil
}

// ClearRequests drops the requests to group a run started again by
// resume or rollback answers (a cancel, a rollback). Resuming, it keeps a
// complete: that ends the soak the run resumes in.
func (s Controls) ClearRequests(ctx context.Context, group string, resuming bool) error {
	if resuming {
		pending, err := s.Requests(group).Pending(ctx)
		if err != nil || pending == state.RequestComplete {
			return err
		}
	}
	return s.clear(ctx, group)
}

// AskStop asks group's live run to stop at its next safe point, as cancel
// does: abort --wait, which then waits for the lock.
func (s Controls) AskStop(ctx context.Context, group string) error {
	return s.ask(ctx, group, state.RequestCancel)
}

// RefusePendingCancel refuses to start over a run paused by cancel. A
// request left on a finished run (a cancel sent as it finished: the run
// reads requests between phases, not after its last) is for no run: it is
// dropped, or it would refuse every later run of the group.
func (s Controls) RefusePendingCancel(ctx context.Context, group string, rec *state.Record) error {
	req, err := s.Requests(group).Pending(ctx)
	switch {
	case err != nil:
		return err
	case req == "":
		return nil
	case rec == nil || rec.FinishedAt != nil:
		return s.clear(ctx, group)
	case req == state.RequestCancel:
		return Describe(rec, false, req, time.Now()).Accept(CmdRun)
	}
	return nil
}

// ask and clear are the one place a command sends a request to a run's
// process (which reads it between phases) or drops the pending one.
func (s Controls) ask(ctx context.Context, group, req string) error {
	return s.Requests(group).Send(ctx, req)
}

func (s Controls) clear(ctx context.Context, group string) error {
	return s.Requests(group).Clear(ctx)
}
