package upgrade

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// holdUpdates stops a group that replaces machines of its own accord
// (cloud.SelfUpdater) before the run points it at the target, so that it
// never replaces a node the run has not drained. How it updated itself
// before is recorded first, once, so that whatever ends the run puts it
// back.
func (cg *cloudGroup) holdUpdates(ctx context.Context) error {
	u, ok := cg.pool.(cloud.SelfUpdater)
	if !ok {
		return nil
	}
	cr := cg.cloudRecord()
	if cr.UpdatesWere == "" {
		was, err := u.SelfUpdates(ctx)
		if err != nil {
			return err
		}
		cr.UpdatesWere = was
		if err := cg.save(ctx); err != nil {
			return err
		}
	}
	if err := u.HoldUpdates(ctx); err != nil {
		return err
	}
	cg.logf("%s %q replaces no machine of its own accord during the run (was: %s)", cg.words.groupKind(), cg.pool.GroupName(), cr.UpdatesWere)
	return nil
}

// holdPoolUpdates holds off a pool that replaces machines of its own
// accord where the run has no Setup to do it in (a Pool that is no Group:
// Karpenter's NodePool), before its first phase, then points it at the
// target where the run does that itself (cloud.Retargeter: a rollback
// after a finished run); a run that starts at its end or rolls back
// holds nothing.
func (cg *cloudGroup) holdPoolUpdates(ctx context.Context, first plan.Phase) error {
	if _, resizes := cg.pool.(cloud.Scaler); resizes || first == plan.PhaseDone || first == plan.PhaseRollback {
		return nil
	}
	if err := cg.holdUpdates(ctx); err != nil {
		return err
	}
	r, ok := cg.pool.(cloud.Retargeter)
	if !ok {
		return nil
	}
	what, err := r.Retarget(ctx)
	if err != nil {
		return cg.releaseHold(ctx, err)
	}
	if what != "" {
		cg.logf("%s", what)
	}
	return nil
}

// restoreUpdates puts back how the group updated itself before the run:
// at the run's end and on abort.
func (cg *cloudGroup) restoreUpdates(ctx context.Context) error {
	cr := cg.cfg.Record.Cloud
	u, ok := cg.pool.(cloud.SelfUpdater)
	if cr == nil || cr.UpdatesWere == "" || !ok {
		return nil
	}
	note, err := u.RestoreUpdates(ctx, cr.UpdatesWere)
	if err != nil {
		return err
	}
	if note != "" {
		// Still held: the record keeps what to put back, for the run that
		// finishes the group.
		cg.tally.note = joinNote(cg.tally.note, note)
		cg.logf("%s", cg.cfg.Color.Yellow(note))
		return nil
	}
	cg.logf("%s %q updates itself again as before the run (%s)", cg.words.groupKind(), cg.pool.GroupName(), cr.UpdatesWere)
	cr.UpdatesWere = ""
	return cg.save(ctx)
}
