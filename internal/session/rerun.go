package session

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The controls that run a recorded run again: resume, and rollback of a
// stopped or finished run. Each checks the lifecycle, then runs the run
// as run does (Execute), which records the control asked (Request.Control)
// once the run is agreed, before it acts.

// RollbackOptions are what the rollback command adds to the record.
type RollbackOptions struct {
	// Window is how long after a run finished rollback takes the group
	// back to the version before it (--rollback-window).
	Window time.Duration
	// Schedule, when set, replaces a finished run's maintenance windows
	// (--window, --not-before, --not-after).
	Schedule *plan.Request
}

// Resume continues run, stopped, from its recorded phase with its
// recorded request; where the cloud's service runs the update, through
// the service's resume (Service).
func (s Controls) Resume(ctx context.Context, run *Run, ui Prompt) error {
	if err := run.Accept(CmdResume); err != nil {
		return err
	}
	if run.Record.Managed != nil {
		return s.Service(ctx, run, CmdResume, ui)
	}
	return s.rerunRecorded(ctx, run.Record, CmdResume, ui)
}

// Rollback undoes run once the lifecycle takes it: a finished run by a
// run back to the version before (within o.Window), a service's update
// by the service's rollback, an eks or surge run in place, a stopped
// blue/green run by its rollback run; a live blue/green run is asked to
// turn around at its next safe point (asked).
func (s Controls) Rollback(ctx context.Context, run *Run, o RollbackOptions, ui Prompt) (asked bool, err error) {
	rec := run.Record
	if o.Schedule != nil && run.Status != state.StateFinished {
		return false, Usagef("--window, --not-before and --not-after apply to the rollback of a finished run; the run on %q is %s and its rollback puts the group back at once: drop them", rec.NodeGroup, run.Status)
	}
	if err := run.Accept(CmdRollback); err != nil {
		return false, err
	}
	switch {
	case run.Status == state.StateFinished:
		return false, s.rollbackFinished(ctx, rec, o, ui)
	case rec.Managed != nil:
		return false, s.Service(ctx, run, CmdRollback, ui)
	case rollbackKind(rec) == plan.RollbackInPlace:
		return false, s.rollbackInPlace(ctx, rec, ui)
	case !run.Alive:
		return false, s.rerunRecorded(ctx, rec, CmdRollback, ui)
	}
	return true, s.AskRollback(ctx, run)
}

// rerunRecorded runs the recorded request again, forward (resume) or
// rolling back, with no request pending but a complete, which ends the
// soak it resumes.
func (s Controls) rerunRecorded(ctx context.Context, rec *state.Record, cmd Command, ui Prompt) error {
	r, err := FromRecord(rec, nil, string(cmd))
	if err != nil {
		return err
	}
	r.Rollback = cmd == CmdRollback
	what := "resuming"
	if r.Rollback {
		what = "rolling back"
	}
	return s.rerun(ctx, rec, r, cmd, ui, fmt.Sprintf("%s the run on %q from phase %s", what, rec.NodeGroup, rec.Phase))
}

// rollbackInPlace undoes a partial eks or surge run on a cloud group: the
// same strategy, run again towards the version the group launched before,
// so only the nodes already upgraded are replaced; the others are not
// touched, and the end restores the recorded sizes.
func (s Controls) rollbackInPlace(ctx context.Context, rec *state.Record, ui Prompt) error {
	r, err := FromRecord(rec, nil, string(CmdRollback))
	if err != nil {
		return err
	}
	r.Cloud.Image, r.Cloud.Version, r.PlanFile = "", rec.Cloud.FromVersion, ""
	return s.rerun(ctx, rec, r, CmdRollback, ui, fmt.Sprintf("rolling back the run on %q: the nodes already on version %s go back to version %s", rec.NodeGroup, rec.Cloud.TargetVersion, rec.Cloud.FromVersion))
}

// rerun runs rec's run again as r asks, from its recorded phase, with
// this command's connection: once r is valid and can be confirmed, the
// requests cmd answers are dropped and says is printed.
func (s Controls) rerun(ctx context.Context, rec *state.Record, r *Request, cmd Command, ui Prompt, says string) error {
	if r.PlanFile == PodPlanFile {
		// An in-cluster run's plan was its pod's: plan its request again.
		r.PlanFile = ""
	}
	if err := r.LoadPlanFile(); err != nil {
		return err
	}
	if err := r.ValidateRun(); err != nil {
		return err
	}
	if err := ui.canConfirm(); err != nil {
		return err
	}
	if err := s.ClearRequests(ctx, rec.NodeGroup, cmd == CmdResume); err != nil {
		return err
	}
	fmt.Fprintln(s.Out, says)
	r.Control = cmd
	return s.Execute(ctx, r, ui)
}

// rollbackFinished runs the group back to the version it ran before its
// latest finished run, within o.Window: a new run, planned and confirmed
// as any, that resume or run finish if it is interrupted.
func (s Controls) rollbackFinished(ctx context.Context, rec *state.Record, o RollbackOptions, ui Prompt) error {
	r, c, err := RollbackRequest(rec, time.Now(), o.Window)
	if err != nil {
		return err
	}
	if o.Schedule != nil {
		r.Windows, r.NotBefore, r.NotAfter = o.Schedule.Windows, o.Schedule.NotBefore, o.Schedule.NotAfter
	}
	if err := r.ValidateRun(); err != nil {
		return err
	}
	if err := ui.canConfirm(); err != nil {
		return err
	}
	if err := s.ClearRequests(ctx, rec.NodeGroup, false); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "rolling back the run on %q that finished at %s: from %s back to %s\n", rec.NodeGroup, c.FinishedAt.Format(time.RFC3339), c.After, c.Before)
	r.Control = CmdRollback
	return s.Execute(ctx, r, ui)
}

// canConfirm refuses a run that would have to ask with no terminal to
// ask on.
func (ui Prompt) canConfirm() error {
	if !ui.Yes && !ui.Terminal {
		return Usagef("refusing to run without a terminal to confirm on; use --yes")
	}
	return nil
}
