package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Service carries cmd out on the update of run that the cloud's service
// carries out (EKS managed node groups, GKE node pools): the service's
// own control (ServiceControl, intent recorded first), then, for resume
// and rollback, the run again, which follows the update to its end. It
// refuses, saying why, where the service has no such control, and says
// on s.Out what it did.
func (s Controls) Service(ctx context.Context, run *Run, cmd Command, ui Prompt) error {
	if err := run.Accept(cmd); err != nil {
		return err
	}
	rec := run.Record
	p, provider, err := s.OpenService(ctx, rec, cmd)
	if err != nil {
		return err
	}
	if follow, err := s.followsUpdate(ctx, run, cmd, provider, ui); err != nil || follow {
		return err
	}
	if err := refuseControl(cmd, p.Managed, provider); err != nil {
		return err
	}
	id := rec.Managed.UpdateID
	if id == "" && !ManagedRollingBack(rec) {
		return Usagef("cannot %s: the run on %q has not started the %s's update yet; run it again, or \"kubectl nodeupgrade abort %s\"", cmd, rec.NodeGroup, p.Managed.Service, rec.NodeGroup)
	}
	switch cmd {
	case CmdCancel, CmdComplete:
		return s.serviceStop(ctx, run, cmd, provider, p.Managed)
	}
	if run.Alive {
		return Usagef("cannot %s: the run on %q is alive (%s) and follows the %s's update %s; cancel it first", cmd, rec.NodeGroup, rec.Holder, p.Managed.Service, id)
	}
	if cmd == CmdResume && !ManagedRollingBack(rec) {
		return s.resumeService(ctx, run, provider, ui)
	}
	return s.rollbackService(ctx, rec, provider, p.Managed, ui)
}

// serviceStop cancels or completes the service's update, and says so.
func (s Controls) serviceStop(ctx context.Context, run *Run, cmd Command, u cloud.ManagedUpdater, mp *plan.ManagedPlan) error {
	g, id := run.Record.NodeGroup, run.Record.Managed.UpdateID
	if _, err := s.ServiceControl(ctx, run, cmd, u, id); err != nil {
		return err
	}
	if cmd == CmdComplete {
		fmt.Fprintf(s.Out, "ended the soak of the %s's update %s of %q: the blue nodes are deleted now\n", mp.Service, id, g)
		return nil
	}
	undo := ""
	if slices.Contains(mp.Controls, string(CmdRollback)) {
		undo = ", \"rollback\" undoes it"
	}
	fmt.Fprintf(s.Out, "cancelled the %s's update %s of %q: the nodes under way finish, no other starts; \"kubectl nodeupgrade resume %s\" continues it%s\n", mp.Service, id, g, g, undo)
	return nil
}

// followsUpdate resumes a stopped run whose service's update goes on (or
// ended well): the run follows it to its end, which needs none of the
// service's controls (EKS has none). It reports whether it did.
func (s Controls) followsUpdate(ctx context.Context, run *Run, cmd Command, u cloud.ManagedUpdater, ui Prompt) (bool, error) {
	rec := run.Record
	id := rec.Managed.UpdateID
	if cmd != CmdResume || run.Alive || id == "" || ManagedRollingBack(rec) {
		return false, nil
	}
	pr, err := u.Progress(ctx, id)
	if err != nil || (pr.State != cloud.UpdateInProgress && pr.State != cloud.UpdateSucceeded) {
		return false, err
	}
	return true, s.rerunRecorded(ctx, rec, CmdResume, ui)
}

// refuseControl refuses cmd where the service's update does not offer
// it, saying why: the service cannot stop it (EKS), or offers others only.
func refuseControl(cmd Command, mp *plan.ManagedPlan, provider cloud.Provider) error {
	if slices.Contains(cloud.ManagedControls(provider), string(cmd)) && slices.Contains(mp.Controls, string(cmd)) {
		return nil
	}
	if mp.NoStop != "" {
		return Usagef("cannot %s: %s", cmd, mp.NoStop)
	}
	offered := "none"
	if len(mp.Controls) > 0 {
		offered = strings.Join(mp.Controls, ", ")
	}
	return Usagef("cannot %s: the %s's update offers no %s here (it offers: %s)", cmd, mp.Service, cmd, offered)
}

// resumeService continues a cancelled update with the service's resume
// (or, where the update still runs, follows it), then finishes the run.
func (s Controls) resumeService(ctx context.Context, run *Run, u cloud.ManagedUpdater, ui Prompt) error {
	id := run.Record.Managed.UpdateID
	pr, err := u.Progress(ctx, id)
	if err != nil {
		return err
	}
	if pr.State == cloud.UpdateCancelled || pr.State == cloud.UpdateFailed || pr.State == cloud.UpdateQuarantined {
		newID, err := s.ServiceControl(ctx, run, CmdResume, u, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "resumed the update of %q: update %s\n", run.Record.NodeGroup, newID)
	}
	return s.rerunRecorded(ctx, run.Record, CmdResume, ui)
}

// rollbackService has the service roll back a stopped update: the run
// goes on rolling back on the engine (intent recorded before the service
// is asked; held pods named), which ends it rolled back. A rollback a
// killed command left under way is finished the same way.
func (s Controls) rollbackService(ctx context.Context, rec *state.Record, u cloud.ManagedUpdater, mp *plan.ManagedPlan, ui Prompt) error {
	if !ManagedRollingBack(rec) {
		id := rec.Managed.UpdateID
		pr, err := u.Progress(ctx, id)
		if err != nil {
			return err
		}
		if !pr.Finished() {
			return Usagef("cannot roll back: the %s's update %s of %q still runs; cancel it first", mp.Service, id, rec.NodeGroup)
		}
	}
	return s.rerunRecorded(ctx, rec, CmdRollback, ui)
}
