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
	return endKeptBlue(ctx, pl, rec, over(now))
}

// over selects the kept blue groups whose time is over at now.
func over(now time.Time) func(int, state.Change) bool {
	return func(_ int, c state.Change) bool { return c.KeptUntil != nil && !now.Before(*c.KeptUntil) }
}

// keptBlueNotes say, in the plan, which kept blue groups of rec's history
// a run deletes before it starts (keptBlueOver).
func keptBlueNotes(rec *state.Record, pl *Planned, now time.Time) []string {
	var notes []string
	for _, i := range keptToEnd(rec, pl, over(now)) {
		c := rec.History[i]
		notes = append(notes, fmt.Sprintf("blue %q, kept at 0 nodes after the run that finished at %s until %s (--keep-blue), is deleted by the run before it starts", c.KeptBlue, c.FinishedAt.Format(time.RFC3339), c.KeptUntil.Format(time.RFC3339)))
	}
	return notes
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
	bg, _ := pl.Provider.(cloud.BlueGreen)
	for _, i := range keptToEnd(rec, pl, ends) {
		c := rec.History[i]
		if err := bg.DeleteGroup(ctx, c.KeptBlue); err != nil {
			return fmt.Errorf("cannot delete blue %q, kept since the run finished at %s (--keep-blue): %w", c.KeptBlue, c.FinishedAt.Format(time.RFC3339), err)
		}
		rec.History[i].KeptEnd = state.KeptDeleted
	}
	return nil
}

// keptToEnd are the indexes in rec's history of the kept blue groups
// ends selects that pl's provider can delete: not ended yet, and not a
// group the run uses.
func keptToEnd(rec *state.Record, pl *Planned, ends func(int, state.Change) bool) []int {
	if _, ok := pl.Provider.(cloud.BlueGreen); !ok || rec == nil {
		return nil
	}
	var out []int
	for i, c := range rec.History {
		if c.KeptBlue != "" && c.KeptEnd == "" && ends(i, c) && c.KeptBlue != cloud.GroupName(pl.Provider) && c.KeptBlue != pl.Request.BlueGreen.GreenGroup {
			out = append(out, i)
		}
	}
	return out
}
