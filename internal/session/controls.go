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
	return nil, s.Requests(run.Record.NodeGroup).Send(ctx, state.RequestCancel)
}

// AskRollback asks run's live process, once the lifecycle takes it, to
// turn the run around at its next safe point.
func (s Controls) AskRollback(ctx context.Context, run *Run) error {
	if err := run.Accept(CmdRollback); err != nil {
		return err
	}
	return s.Requests(run.Record.NodeGroup).Send(ctx, state.RequestRollback)
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
		return run.Alive, s.Requests(rec.NodeGroup).Send(ctx, state.RequestComplete)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if now.Before(*rec.Cloud.SoakUntil) {
		rec.Cloud.SoakUntil = &now
	}
	return false, s.store().Save(ctx, rec)
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
	requests := s.Requests(group)
	if resuming {
		pending, err := requests.Pending(ctx)
		if err != nil || pending == state.RequestComplete {
			return err
		}
	}
	return requests.Clear(ctx)
}
