package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The controls of a run whose update the cloud's service carries out
// (EKS managed node groups, GKE node pools): the session calls the
// service's own control (cloud.UpdateCanceller, ...) on the recorded
// update, its intent recorded first (session.Controls.ServiceControl);
// these refuse, saying why, where the service has none, and print.

// managedControl carries the action out on the service's update of run.
func (o *ControlOptions) managedControl(ctx context.Context, run *session.Run) error {
	rec, alive := run.Record, run.Alive
	p, provider, err := o.sess.Controls().OpenService(ctx, rec, session.Command(o.action))
	if err != nil {
		return err
	}
	if follow, err := o.followsUpdate(ctx, rec, provider, alive); err != nil || follow {
		return err
	}
	if err := o.refuseControl(p.Managed, provider); err != nil {
		return err
	}
	id := rec.Managed.UpdateID
	if id == "" && !session.ManagedRollingBack(rec) {
		return usageErrorf("cannot %s: the run on %q has not started the %s's update yet; run it again, or \"kubectl nodeupgrade abort %s\"", o.action, o.NodeGroup, p.Managed.Service, o.NodeGroup)
	}
	switch o.action {
	case "cancel":
		if _, err := o.sess.Controls().ServiceControl(ctx, run, session.CmdCancel, provider, id); err != nil {
			return err
		}
		undo := ""
		if slices.Contains(p.Managed.Controls, "rollback") {
			undo = ", \"rollback\" undoes it"
		}
		fmt.Fprintf(o.Out, "cancelled the %s's update %s of %q: the nodes under way finish, no other starts; \"kubectl nodeupgrade resume %s\" continues it%s\n", p.Managed.Service, id, o.NodeGroup, o.NodeGroup, undo)
		return nil
	case "complete":
		if _, err := o.sess.Controls().ServiceControl(ctx, run, session.CmdComplete, provider, id); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "ended the soak of the %s's update %s of %q: the blue nodes are deleted now\n", p.Managed.Service, id, o.NodeGroup)
		return nil
	}
	if alive {
		return usageErrorf("cannot %s: the run on %q is alive (%s) and follows the %s's update %s; cancel it first", o.action, o.NodeGroup, rec.Holder, p.Managed.Service, id)
	}
	if o.action == "resume" && !session.ManagedRollingBack(rec) {
		return o.resumeManaged(ctx, run, provider, id)
	}
	return o.rollbackManaged(ctx, rec, provider, p.Managed, id)
}

// followsUpdate resumes a stopped run whose service's update goes on (or
// ended well): the run follows it to its end, which needs none of the
// service's controls (EKS has none). It reports whether it did.
func (o *ControlOptions) followsUpdate(ctx context.Context, rec *state.Record, u cloud.ManagedUpdater, alive bool) (bool, error) {
	id := rec.Managed.UpdateID
	if o.action != "resume" || alive || id == "" || session.ManagedRollingBack(rec) {
		return false, nil
	}
	pr, err := u.Progress(ctx, id)
	if err != nil || (pr.State != cloud.UpdateInProgress && pr.State != cloud.UpdateSucceeded) {
		return false, err
	}
	return true, o.rerunRecorded(ctx, rec, false)
}

// refuseControl refuses an action the service's update does not offer,
// saying why: the service cannot stop it (EKS), or offers others only.
func (o *ControlOptions) refuseControl(mp *plan.ManagedPlan, provider cloud.Provider) error {
	if slices.Contains(cloud.ManagedControls(provider), o.action) && slices.Contains(mp.Controls, o.action) {
		return nil
	}
	if mp.NoStop != "" {
		return usageErrorf("cannot %s: %s", o.action, mp.NoStop)
	}
	offered := "none"
	if len(mp.Controls) > 0 {
		offered = strings.Join(mp.Controls, ", ")
	}
	return usageErrorf("cannot %s: the %s's update offers no %s here (it offers: %s)", o.action, mp.Service, o.action, offered)
}

// resumeManaged continues a cancelled update with the service's resume
// (or, where the update still runs, follows it), then finishes the run.
func (o *ControlOptions) resumeManaged(ctx context.Context, run *session.Run, u cloud.ManagedUpdater, id string) error {
	pr, err := u.Progress(ctx, id)
	if err != nil {
		return err
	}
	if pr.State == cloud.UpdateCancelled || pr.State == cloud.UpdateFailed || pr.State == cloud.UpdateQuarantined {
		newID, err := o.sess.Controls().ServiceControl(ctx, run, session.CmdResume, u, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "resumed the update of %q: update %s\n", o.NodeGroup, newID)
	}
	return o.rerunRecorded(ctx, run.Record, false)
}

// rollbackManaged has the service roll back a stopped update: the run
// goes on rolling back on the engine (intent recorded before the service
// is asked; held pods named), which ends it rolled back. A rollback a
// killed command left under way is finished the same way.
func (o *ControlOptions) rollbackManaged(ctx context.Context, rec *state.Record, u cloud.ManagedUpdater, mp *plan.ManagedPlan, id string) error {
	if !session.ManagedRollingBack(rec) {
		pr, err := u.Progress(ctx, id)
		if err != nil {
			return err
		}
		if !pr.Finished() {
			return usageErrorf("cannot roll back: the %s's update %s of %q still runs; cancel it first", mp.Service, id, o.NodeGroup)
		}
	}
	return o.rerunRecorded(ctx, rec, true)
}
