package session

import (
	"cmp"
	"fmt"
	"maps"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
)

// versionsOf are what pl's group launches now and what it launches after
// the run, as the plan reads them.
func versionsOf(pl *Planned) (before, after state.Version) {
	if cp := pl.Plan.Cloud; cp != nil {
		id := state.Version{Provider: cp.Provider, Group: cp.Group, GroupKind: cp.GroupKind, Template: cp.Template, TemplateKind: cp.TemplateKind}
		before, after = id, id
		before.Version = cp.CurrentVersion
		if cp.Previous != "" {
			before.Template, before.Version, before.InPlace = cmp.Or(cp.PreviousTemplate, before.Template), cp.Previous, true
		}
		before.BackBy = cp.BackBy
		after.Image = cp.TargetImage
		if cp.TargetVersion != plan.NewVersion {
			after.Version = cp.TargetVersion
		}
	}
	if m := pl.Plan.Managed; m != nil {
		after.Service = m.Target
	}
	if len(pl.TargetLabels) > 0 {
		after.Labels = maps.Clone(pl.TargetLabels)
	}
	return before, after
}

// recordFrom writes, at a run's first attempt, what the group launched
// before it: once the run changed the group, the plan of a re-run reads
// the target there.
func recordFrom(rec *state.Record, pl *Planned) {
	if rec.From != nil {
		return
	}
	before, _ := versionsOf(pl)
	if c := rec.Cloud; c != nil && c.FromVersion != "" {
		// A record of an earlier plugin version, resumed: its cloud part
		// knows the version before the run; the group may not any more.
		before.Version = c.FromVersion
	}
	rec.From = &before
}

// recordChange adds the run's change to rec's History once it finished on
// its target (not aborted, not rolled back in place): what a rollback
// after it goes back to.
func recordChange(rec *state.Record, pl *Planned) {
	if rec.State != state.StateFinished || rec.FinishedAt == nil || rec.AbortedAt != nil || rec.From == nil {
		return
	}
	_, after := versionsOf(pl)
	if c := rec.Cloud; c != nil && c.TargetVersion != "" {
		after.Version = c.TargetVersion // the version the run created, where the plan said "new"
	}
	change := state.Change{Strategy: rec.Strategy, Before: *rec.From, After: after, FinishedAt: *rec.FinishedAt}
	if last, ok := rec.LastChange(); ok && (pl.Request.Rollback || pl.Request.BlueGreen.Kept) {
		change.RollbackOf = &last.FinishedAt
	}
	if c := rec.Cloud; c != nil && c.BlueKeptUntil != nil {
		change.KeptBlue, change.KeptUntil = c.Group, c.BlueKeptUntil
	}
	rec.AddChange(change)
}

// RollbackRequest is the run that takes rec's group back to the version
// before its latest finished run, within window of its end at now: the
// recorded request again, with the same strategy and safeguards, towards
// the recorded version. Refused (bad input, nothing changed) past the
// window, and where the group's version before is not one a run can name.
func RollbackRequest(rec *state.Record, now time.Time, window time.Duration) (*Request, state.Change, error) {
	c, err := rollbackable(rec, now, window)
	if err != nil {
		return nil, c, err
	}
	r, err := FromRecord(rec, nil, string(CmdRollback))
	if err != nil {
		return nil, c, err
	}
	// Towards the version before, by number: an image (--ami) would make
	// yet another version, and the plan file was the finished run's.
	r.Cloud.Image, r.Cloud.Version, r.PlanFile = "", c.Before.Version, ""
	keepSchedule(&r.Request, *rec.Request, now)
	if c.BlueKeptAt(now) {
		toKeptBlue(r, rec, c)
	}
	return r, c, nil
}

// toKeptBlue makes r, the rollback of a blue/green run that kept blue,
// a blue/green run from the group green became to the kept blue, which
// it scales back up: no group is made. The soaks were the finished run's
// trial of green; blue ran before it.
func toKeptBlue(r *Request, rec *state.Record, c state.Change) {
	r.BlueGreen.GreenGroup, r.BlueGreen.GreenSelector, r.BlueGreen.Kept = c.KeptBlue, "", true
	r.BlueGreen.BatchSoak, r.BlueGreen.NodePoolSoak = 0, 0
	if rec.Cloud != nil && rec.Cloud.Green != "" {
		r.Cloud.Group = rec.Cloud.Green
	}
}

// keepSchedule gives the rollback of a finished run (r) the maintenance
// windows of its request (ran): a new run on the group, it disrupts as
// much. Its --window always; its --not-before and --not-after only while
// still ahead of now: passed, one would refuse the rollback for nothing.
// The rollback command's own window flags replace them.
func keepSchedule(r *plan.Request, ran plan.Request, now time.Time) {
	r.Windows, r.NotBefore, r.NotAfter = ran.Windows, "", ""
	if t, err := window.ParseTime(ran.NotBefore); err == nil && t.After(now) {
		r.NotBefore = ran.NotBefore
	}
	if t, err := window.ParseTime(ran.NotAfter); err == nil && t.After(now) {
		r.NotAfter = ran.NotAfter
	}
}

// rollbackable is rec's latest change, when a rollback at now within
// window can undo it; else the refusal.
func rollbackable(rec *state.Record, now time.Time, window time.Duration) (state.Change, error) {
	c, err := rec.RollbackTarget(now, window)
	if err != nil {
		return c, Usagef("%s", err)
	}
	if c.Before.BackBy != "" && !c.BlueKeptAt(now) {
		return c, Usagef("cannot roll back the run on %q that finished at %s: %s", rec.NodeGroup, c.FinishedAt.Format(time.RFC3339), c.Before.BackBy)
	}
	if !c.BlueKeptAt(now) && (rec.Managed != nil && !c.Before.InPlace || rollbackKind(rec) != plan.RollbackInPlace) {
		// Blue is gone once a blue/green run finished (unless kept), and
		// a service's update has its own way back: a run towards the
		// version before.
		return c, Usagef("cannot roll back: the run on %q finished at %s with strategy %q, which leaves nothing to go back to%s; undo it with %s", rec.NodeGroup, c.FinishedAt.Format(time.RFC3339), rec.Strategy, keptPast(c), RunBack(rec, rec.NodeGroup))
	}
	if c.Before.Version == "" || rec.Request == nil || rec.Request.Provider == "" {
		return c, Usagef("cannot roll back: the run on %q finished at %s on %s, which names no version of its group to go back to; run towards it with \"kubectl nodeupgrade run %s\" and the provider's flags", rec.NodeGroup, c.FinishedAt.Format(time.RFC3339), c.Before, rec.NodeGroup)
	}
	return c, nil
}

// keptPast says, for a run whose kept blue's time is over, until when it
// was kept.
func keptPast(c state.Change) string {
	if c.KeptBlue == "" || c.KeptUntil == nil || c.KeptEnd == state.KeptRestored {
		return ""
	}
	return fmt.Sprintf(" (blue %q was kept until %s, --keep-blue)", c.KeptBlue, c.KeptUntil.Format(time.RFC3339))
}

// rollbackUntil is, for a finished run that rollback can undo now, when
// the default --rollback-window closes; nil otherwise.
func rollbackUntil(rec *state.Record, now time.Time) *time.Time {
	if rec.State != state.StateFinished {
		return nil
	}
	c, err := rollbackable(rec, now, state.DefaultRollbackWindow)
	if err != nil {
		return nil
	}
	until := c.RollbackUntil(state.DefaultRollbackWindow)
	if c.BlueKeptAt(now) && c.KeptUntil.Before(until) {
		return c.KeptUntil // then blue is gone: nothing to go back to
	}
	return &until
}
