package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// A service's update and the maintenance windows. Its start waits for a
// window (gatedWhat). Once it runs, a service that can pause it is paused
// when the window closes and resumed when the next opens. GKE: an
// UPGRADE_NODES operation "may be canceled" (API reference,
// Operation.Type), the nodes that started their upgrade complete it
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#cancel-surge),
// and nodePools.update to the same target again resumes it
// (https://cloud.google.com/kubernetes-engine/docs/how-to/upgrading-a-cluster#resume-upgrade). The pause comes after the nodes in flight, not at a
// zone's end: GKE's operation counts nodes, never zones, so the run cannot
// tell where one zone ends (its nodes are upgraded zone by zone,
// .../concepts/node-pool-upgrade-strategies#surge). A service that cannot
// pause it (EKS) runs it to its end, and the plan says so.

// The blue/green phases the window treats apart (API reference,
// BlueGreenInfo.phase).
const (
	phaseSoaking    = "NODE_POOL_SOAKING"
	phaseDeleteBlue = "DELETING_BLUE_POOL"
)

// holdsService reports whether the window closed on the update p: the
// run pauses it. Blue's deletion cannot be cancelled once begun
// (.../node-pool-upgrade-strategies#cancel-bg); a soak disrupts nothing
// and is held only when the service would delete blue before the next
// opening (BlueDeletion; unknown: held).
func (r *managedRun) holdsService(p cloud.UpdateProgress, now time.Time) bool {
	sched := r.cfg.Window
	if sched.Empty() || sched.Contains(now) || !r.pausable() || p.Finished() {
		return false
	}
	switch p.Phase {
	case phaseDeleteBlue:
		return false
	case phaseSoaking:
		next, ok := sched.NextOpen(now)
		return p.BlueDeletion.IsZero() || !ok || p.BlueDeletion.Before(next)
	}
	return true
}

// windowCloses fires when the window open now closes, so the run pauses
// the update then rather than at its next read; nil where nothing is
// paused.
func (r *managedRun) windowCloses() <-chan time.Time {
	now := r.cfg.Now()
	if r.cfg.Window.Empty() || !r.pausable() || !r.cfg.Window.Contains(now) {
		return nil
	}
	c, ok := r.cfg.Window.Closes(now)
	if !ok {
		return nil
	}
	return time.After(c.Sub(now))
}

// pausable reports whether the provider and the plan offer the service's
// cancel and resume. A rollback is never paused: like the engine's own,
// it runs outside the window to put the group back.
func (r *managedRun) pausable() bool {
	_, cancels := r.service.(cloud.UpdateCanceller)
	_, resumes := r.service.(cloud.UpdateResumer)
	return !r.rollingBack && cancels && resumes && r.cfg.Plan.Managed.Pausable()
}

// serviceWindow applies the window to the update p and returns the ID of
// the update to follow on: p's, or the resumed one's. It pauses the
// update when the window closes, resumes the update it paused once a
// window opens, and ends the soak it held.
func (r *managedRun) serviceWindow(ctx context.Context, p cloud.UpdateProgress) (string, error) {
	m, now := r.cfg.Record.Managed, r.cfg.Now()
	switch {
	case p.State == cloud.UpdateCancelled && m.WindowPaused == p.ID:
		return r.resumeService(ctx, p)
	case p.Finished() || m.WindowPaused == p.ID:
		return p.ID, nil
	case r.holdsService(p, now):
		return p.ID, r.pauseService(ctx, p)
	case m.CompleteSoak && p.Phase == phaseSoaking && r.cfg.Window.Contains(now):
		return p.ID, r.completeSoak(ctx, p)
	}
	return p.ID, nil
}

// pauseService cancels the update for the window, the intent recorded
// first: a run killed meanwhile resumes it.
func (r *managedRun) pauseService(ctx context.Context, p cloud.UpdateProgress) error {
	m, mp := r.cfg.Record.Managed, r.cfg.Plan.Managed
	m.WindowPaused = p.ID
	m.CompleteSoak = p.Phase == phaseSoaking && !p.BlueDeletion.IsZero()
	if err := r.save(ctx); err != nil {
		return err
	}
	if err := r.service.(cloud.UpdateCanceller).CancelUpdate(ctx, p.ID); err != nil {
		// It may have ended meanwhile: then there is nothing to pause.
		if now, perr := r.service.Progress(ctx, p.ID); perr == nil && now.Finished() && now.State != cloud.UpdateCancelled {
			m.WindowPaused, m.CompleteSoak = "", false
			return r.save(ctx)
		}
		return err
	}
	what := "the nodes in flight finish, no other starts"
	if p.Phase == phaseSoaking {
		what = fmt.Sprintf("blue stays; the service would have deleted it at %s", p.BlueDeletion.Format(time.RFC3339))
	}
	r.logf("the maintenance window closed: paused the %s's update %s (%s); it is resumed when a window opens", mp.Service, p.ID, what)
	return nil
}

// resumeService waits for a window, then resumes the update the run
// paused and records the update that goes on.
func (r *managedRun) resumeService(ctx context.Context, p cloud.UpdateProgress) (string, error) {
	m, mp := r.cfg.Record.Managed, r.cfg.Plan.Managed
	what := fmt.Sprintf("the %s's update (paused: %s)", mp.Service, p.ID)
	if err := r.windows.holdUntilOpen(ctx, plan.State{Phase: plan.PhaseUpdate}, what); err != nil {
		return "", err
	}
	id, err := r.service.(cloud.UpdateResumer).ResumeUpdate(ctx, p.ID)
	if err != nil {
		return "", err
	}
	m.UpdateID, m.WindowPaused = id, ""
	if err := r.save(ctx); err != nil {
		return "", err
	}
	r.logf("resumed the %s's update: update %s", mp.Service, id)
	return id, nil
}

// completeSoak ends the soak the window held: it ran its length before
// the window closed, so blue is deleted now, inside the window.
func (r *managedRun) completeSoak(ctx context.Context, p cloud.UpdateProgress) error {
	m := r.cfg.Record.Managed
	c, ok := r.service.(cloud.UpdateCompleter)
	if ok {
		if err := c.CompleteUpdate(ctx, p.ID); err != nil {
			return err
		}
		r.logf("the soak of update %s ran its length before the window closed: ended it, blue is deleted inside the window", p.ID)
	}
	m.CompleteSoak = false
	return r.save(ctx)
}
