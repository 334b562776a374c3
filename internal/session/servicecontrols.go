package session

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// ServiceControl carries cancel, complete or resume out on the service's
// update id of run (one whose update the cloud's service runs) with the
// service's own control: it checks the lifecycle, records what was asked
// (state.Record.Asked, the update named), then calls the service and
// records its answer: for resume, the update that continues the run,
// which it returns. A live run owns the rest of its record and reads the
// service's answer itself.
func (s Controls) ServiceControl(ctx context.Context, run *Run, cmd Command, u cloud.ManagedUpdater, id string) (string, error) {
	if err := run.Accept(cmd); err != nil {
		return "", err
	}
	rec := run.Record
	if rec.Managed == nil {
		return "", fmt.Errorf("cannot %s: the run on %q recorded no service's update", cmd, rec.NodeGroup)
	}
	if err := s.recordAsk(ctx, run, cmd, id); err != nil {
		return "", err
	}
	newID, err := callService(ctx, cmd, u, id)
	if err != nil {
		return "", err
	}
	if newID != "" && !run.Alive {
		rec.Managed.UpdateID = newID
	}
	return newID, s.answered(ctx, run)
}

// callService calls the service's control cmd on update id; resume
// returns the update that continues it.
func callService(ctx context.Context, cmd Command, u cloud.ManagedUpdater, id string) (string, error) {
	switch cmd {
	case CmdCancel:
		if c, ok := u.(cloud.UpdateCanceller); ok {
			return "", c.CancelUpdate(ctx, id)
		}
	case CmdComplete:
		if c, ok := u.(cloud.UpdateCompleter); ok {
			return "", c.CompleteUpdate(ctx, id)
		}
	case CmdResume:
		if r, ok := u.(cloud.UpdateResumer); ok {
			return r.ResumeUpdate(ctx, id)
		}
	}
	return "", Usagef("cannot %s: the service's update of %q offers no %s", cmd, u.GroupName(), cmd)
}

// OpenService plans rec's recorded request again, which opens the group's
// provider, for cmd, and finds the update a stopped run started unheard:
// the update the service's controls act on.
func (s Controls) OpenService(ctx context.Context, rec *state.Record, cmd Command) (*plan.Plan, cloud.ManagedUpdater, error) {
	pl, err := s.Replan(ctx, rec, string(cmd))
	if err != nil {
		return nil, nil, err
	}
	if err := FindStartedUpdate(ctx, pl.Provider, rec); err != nil {
		return nil, nil, err
	}
	u, ok := pl.Provider.(cloud.ManagedUpdater)
	if !ok || pl.Managed == nil {
		return nil, nil, fmt.Errorf("cannot %s: the run on %q recorded a service's update, but its nodes no longer lead to the service's group", cmd, rec.NodeGroup)
	}
	return pl.Plan, u, nil
}

// RefuseAbort is abort's check of rec's unfinished run before anything
// changes: the lifecycle's, then, where the service's update has not
// ended and the provider says what the service allows instead
// (cloud.UpdateAborter: EKS, GKE), that advice: abort never stops or
// undoes the service's update behind its back.
func (s Controls) RefuseAbort(ctx context.Context, rec *state.Record) error {
	if rec == nil || rec.FinishedAt != nil {
		return nil
	}
	if err := Describe(rec, false, "", time.Now()).Accept(CmdAbort); err != nil {
		return err
	}
	if rec.Managed == nil || (rec.Managed.UpdateID == "" && !StartedUnheard(rec)) || rec.Request == nil {
		return nil
	}
	_, u, err := s.OpenService(ctx, rec, CmdAbort)
	if err != nil {
		return err
	}
	a, ok := u.(cloud.UpdateAborter)
	if !ok || rec.Managed.UpdateID == "" {
		return nil
	}
	advice, err := a.AbortAdvice(ctx, rec.Managed.UpdateID, rec.NodeGroup)
	if err != nil || advice == "" {
		return err
	}
	return Usagef("cannot abort: %s", advice)
}
