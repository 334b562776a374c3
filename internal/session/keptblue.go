package session

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The blue groups finished blue/green runs kept at 0 nodes (--keep-blue)
// live until a run after them has no more use for them: one whose time
// is over is deleted by the next run on the group, before that run starts
// (keptBlueOver); one still in its time by the end of the next run that
// finishes (keptBlueSuperseded), which either scaled it back up (the
// rollback) or made it unreachable (rollback undoes the latest run only).

// keptBlueOver deletes the kept blue groups of rec's history whose time
// is over at now. A group the run itself uses is left alone.
func keptBlueOver(ctx context.Context, pl *Planned, rec *state.Record, now time.Time) error {
	return endKeptBlue(ctx, pl, rec, func(i int, c state.Change) bool {
		return c.KeptUntil != nil && !now.Before(*c.KeptUntil)
	})
}

// keptBlueSuperseded ends, once rec's run finished, the kept blue groups
// of the runs before it: the one a rollback scaled back up serves now
// (restored); any other is deleted.
func keptBlueSuperseded(ctx context.Context, pl *Planned, rec *state.Record) error {
	if rec.State != state.StateFinished {
		return nil
	}
	last := len(rec.History) - 1
	bgr := pl.Request.BlueGreen
	for i := range last {
		if c := &rec.History[i]; bgr.Kept && c.KeptEnd == "" && c.KeptBlue == bgr.GreenGroup {
			c.KeptEnd = state.KeptRestored
		}
	}
	return endKeptBlue(ctx, pl, rec, func(i int, _ state.Change) bool { return i < last })
}

// endKeptBlue deletes the kept blue groups of rec's history that ends
// selects, through pl's provider, and records each deleted.
func endKeptBlue(ctx context.Context, pl *Planned, rec *state.Record, ends func(int, state.Change) bool) error {
	bg, ok := pl.Provider.(cloud.BlueGreen)
	if !ok {
		return nil
	}
	for i, c := range rec.History {
		if c.KeptBlue == "" || c.KeptEnd != "" || !ends(i, c) || c.KeptBlue == cloud.GroupName(pl.Provider) || c.KeptBlue == pl.Request.BlueGreen.GreenGroup {
			continue
		}
		if err := bg.DeleteGroup(ctx, c.KeptBlue); err != nil {
			return fmt.Errorf("cannot delete blue %q, kept since the run finished at %s (--keep-blue): %w", c.KeptBlue, c.FinishedAt.Format(time.RFC3339), err)
		}
		rec.History[i].KeptEnd = state.KeptDeleted
	}
	return nil
}
