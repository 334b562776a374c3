package upgrade

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// rollBackService has the service roll back the run's update and follows
// the rollback as it follows an update (the pods and PDBs that hold a
// node named), then puts the update settings from before the run back.
// Intent first: the update rolled back is recorded before the service is
// asked, so a command killed between the two finds the rollback the
// service started (cloud.UpdateFinder) rather than asking twice; where the
// service refuses, the record's update is the run's again.
func (r *managedRun) rollBackService(ctx context.Context, u cloud.ManagedUpdater) error {
	m, mp := r.cfg.Record.Managed, r.cfg.Plan.Managed
	rb, ok := u.(cloud.UpdateRollbacker)
	switch {
	case m == nil || m.UpdateID == "" && m.RollingBackFrom == "":
		return fmt.Errorf("cannot roll back: the run on %q started no %s's update; \"kubectl nodeupgrade abort %s\" puts its settings back", r.cfg.Record.NodeGroup, mp.Service, r.cfg.Record.NodeGroup)
	case !ok:
		return fmt.Errorf("cannot roll back: the %s's update offers no rollback", mp.Service)
	}
	if m.RollingBackFrom == "" {
		m.RollingBackFrom, m.UpdateID = m.UpdateID, ""
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	if err := r.forgetStoppedRollback(ctx, u, m); err != nil {
		return err
	}
	if m.UpdateID == "" {
		id, err := rb.RollbackUpdate(ctx, m.RollingBackFrom)
		if err != nil {
			m.UpdateID, m.RollingBackFrom = m.RollingBackFrom, ""
			return errors.Join(fmt.Errorf("error when asking the %s to roll back update %s: %w", mp.Service, m.UpdateID, err), r.save(context.WithoutCancel(ctx)))
		}
		m.UpdateID = id
		if err := r.save(ctx); err != nil {
			return err
		}
		r.logf("rolling back the update of %q: %s update %s", r.cfg.Record.NodeGroup, mp.Service, id)
	} else {
		r.logf("following the %s's rollback %s of %q", mp.Service, m.UpdateID, r.cfg.Record.NodeGroup)
	}
	if err := r.awaitService(ctx, u, m.UpdateID); err != nil {
		return err
	}
	if err := r.restoreService(ctx, u); err != nil {
		return err
	}
	r.tally.addNote(fmt.Sprintf("rolled back by the %s's update %s", mp.Service, m.UpdateID))
	r.logf("rolled back %q: the nodes the update had replaced run the previous version again", r.cfg.Record.NodeGroup)
	return nil
}

// forgetStoppedRollback drops the recorded rollback where it was
// cancelled or failed before this run: following it would only say so
// again, so the service is asked for a new one.
func (r *managedRun) forgetStoppedRollback(ctx context.Context, u cloud.ManagedUpdater, m *state.ManagedRecord) error {
	if m.UpdateID == "" {
		return nil
	}
	p, err := r.readUpdate(ctx, u, m.UpdateID)
	if err != nil || p.State != cloud.UpdateCancelled && p.State != cloud.UpdateFailed {
		return err
	}
	r.logf("%s rollback %s ended %s before this run: asking for a new one", r.cfg.Plan.Managed.Service, m.UpdateID, p.State)
	m.UpdateID = ""
	return r.save(ctx)
}
