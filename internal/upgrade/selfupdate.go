package upgrade

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// holdUpdates stops a group that replaces machines of its own accord
// (cloud.SelfUpdater) before the run points it at the target, so that it
// never replaces a node the run has not drained. How it updated itself
// before is recorded first, once, so that whatever ends the run puts it
// back.
func (e *Engine) holdUpdates(ctx context.Context) error {
	u, ok := e.group.(cloud.SelfUpdater)
	if !ok {
		return nil
	}
	cr := e.cloudRecord()
	if cr.UpdatesWere == "" {
		was, err := u.SelfUpdates(ctx)
		if err != nil {
			return err
		}
		cr.UpdatesWere = was
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	if err := u.HoldUpdates(ctx); err != nil {
		return err
	}
	e.logf("%s %q replaces no machine of its own accord during the run (was: %s)", e.groupKind(), e.group.GroupName(), cr.UpdatesWere)
	return nil
}

// restoreUpdates puts back how the group updated itself before the run:
// at the run's end and on abort.
func (e *Engine) restoreUpdates(ctx context.Context) error {
	cr := e.cfg.Record.Cloud
	u, ok := e.group.(cloud.SelfUpdater)
	if cr == nil || cr.UpdatesWere == "" || !ok {
		return nil
	}
	note, err := u.RestoreUpdates(ctx, cr.UpdatesWere)
	if err != nil {
		return err
	}
	if note != "" {
		e.note = joinNote(e.note, note)
		e.logf("%s", e.cfg.Color.Yellow(note))
	} else {
		e.logf("%s %q updates itself again as before the run (%s)", e.groupKind(), e.group.GroupName(), cr.UpdatesWere)
	}
	cr.UpdatesWere = ""
	return e.save(ctx)
}
