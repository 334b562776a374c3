package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
)

// WindowClosedError stops a run whose next disruptive step could not start
// before --not-after: nothing is in flight, and running again with a later
// --not-after (or resume) goes on.
type WindowClosedError struct {
	What     string
	NotAfter time.Time
}

func (e *WindowClosedError) Error() string {
	return fmt.Sprintf("stopped before %s: no maintenance window opens before --not-after %s",
		e.What, e.NotAfter.UTC().Format(time.RFC3339))
}

// windowWait holds a run's steps to its maintenance windows (--window,
// --not-before, --not-after) and waits with an ear for the requests of
// other terminals (cancel, rollback); the record says until when it
// waits.
type windowWait struct {
	schedule window.Schedule
	control  Control
	plan     *plan.Plan
	record   *state.Record
	start    plan.Phase
	now      func() time.Time
	progress *progress
	journal  *report.Journal // counts the waits (nil: no report)
	logf     func(format string, args ...any)
	save     func(ctx context.Context) error
	// liveRollback: the strategy turns around at its next safe point
	// when rollback is asked for (blue/green).
	liveRollback bool
	// gatedBatch is the last batch whose start awaited the maintenance
	// window: its later phases are in flight.
	gatedBatch int
}

// gatedWhat names what state s starts when it may start only inside a
// maintenance window ("" when it may start any time): the run's first
// change, each batch, and the steps that take capacity away (the
// scale-down, blue's deletion). A batch in flight goes on: only its
// first phase is gated. Rollback and Done restore service and never wait.
func (ww *windowWait) gatedWhat(s plan.State, first bool) string {
	switch {
	case s.Phase == plan.PhaseRollback || s.Phase == plan.PhaseDone:
		return ""
	case plan.BatchPhase(s.Phase) && s.Batch != ww.gatedBatch:
		ww.gatedBatch = s.Batch
		return batchLabel(ww.plan, s.Batch)
	case s.Phase == plan.PhaseScaleDown:
		return "the scale-down"
	case s.Phase == plan.PhaseDeleteBlue:
		return "the deletion of blue"
	case s.Phase == plan.PhaseUpdate && ww.serviceNotStarted():
		return "the service's update"
	case first && ww.start == "":
		// A run that goes on where one stopped (a service's update
		// under way, say) made its first change already.
		return fmt.Sprintf("phase %s", s.Phase)
	}
	return ""
}

// serviceNotStarted reports whether the run has not started the
// service's update yet: its start is gated, its following is not.
func (ww *windowWait) serviceNotStarted() bool {
	r := ww.record
	return r == nil || r.Managed == nil || r.Managed.UpdateID == ""
}

// awaitWindow holds state s until the schedule lets it start: a timer to
// the next opening, no polling; cancel pauses the wait and rollback turns
// a blue/green run around. The record says until when it waits.
func (ww *windowWait) awaitWindow(ctx context.Context, s plan.State, first bool) error {
	if ww.schedule.Empty() {
		return nil
	}
	what := ww.gatedWhat(s, first)
	if what == "" {
		return nil
	}
	return ww.holdUntilOpen(ctx, s, what)
}

// holdUntilOpen waits, in state s, until a window is open for what, or
// stops the run when none opens before --not-after.
func (ww *windowWait) holdUntilOpen(ctx context.Context, s plan.State, what string) error {
	sched, now := ww.schedule, ww.now()
	opens, ok := ww.startAt(s, now)
	if !ok {
		return &WindowClosedError{What: what, NotAfter: sched.NotAfter}
	}
	if !opens.After(now) {
		return nil
	}
	where := "outside the maintenance window"
	if sched.Contains(now) {
		where = "the maintenance window closes before the service's update's estimate ends"
	}
	ww.logf("%s (%s): %s waits until %s (in %s)", where, sched, what, opens.Format(time.RFC3339), plan.FormatDuration(opens.Sub(now).Round(time.Second)))
	ww.progress.waitingFor(fmt.Sprintf("the maintenance window to open at %s", opens.Format(time.RFC3339)))
	defer ww.progress.waitingFor("")
	if err := ww.setWindowWait(ctx, &opens); err != nil {
		return err
	}
	ww.journal.Enter(report.PhaseWindowWait, 0)
	if err := ww.waitUntil(ctx, opens.Sub(now)); err != nil {
		return err
	}
	ww.logf("maintenance window open: %s starts", what)
	return ww.setWindowWait(ctx, nil)
}

// startAt is when what state s starts may start: the next opening; for
// a service's update that cannot be paused (its settings, its start), the
// next opening its estimate fits, where one comes within a week.
func (ww *windowWait) startAt(s plan.State, now time.Time) (time.Time, bool) {
	sched, mp := ww.schedule, ww.plan.Managed
	if mp != nil && !mp.Pausable() && (s.Phase == plan.PhaseConfigure || s.Phase == plan.PhaseUpdate) {
		if at, fits := sched.OpenFor(now, ww.plan.ServiceNeeds(s.Phase)); fits {
			return at, true
		}
	}
	return sched.NextOpen(now)
}

// setWindowWait records until when the run waits for a window (nil: it
// does not), for status.
func (ww *windowWait) setWindowWait(ctx context.Context, until *time.Time) error {
	if ww.record == nil {
		return nil
	}
	if until != nil {
		u := until.UTC().Truncate(time.Second)
		until = &u
	}
	ww.record.WaitingForWindow = until
	return ww.save(ctx)
}

// waitUntil waits d, or until a request from another terminal stops or
// turns the wait.
func (ww *windowWait) waitUntil(ctx context.Context, d time.Duration) error {
	return ww.waitOrRequest(ctx, d, 0, nil, func(req string) (bool, error) {
		return false, ww.windowRequest(ctx, req)
	})
}

// waitOrRequest waits d, calling tick every interval (0: never), while
// it hands each request from another terminal to handle: an error ends
// the wait with it, done ends it early with nil. The watch of requests
// is opened again when it ends.
func (ww *windowWait) waitOrRequest(ctx context.Context, d, every time.Duration, tick func(), handle func(req string) (done bool, err error)) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var ticks <-chan time.Time
	if every > 0 {
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		ticks = ticker.C
	}
	var requests <-chan string
	for {
		if requests == nil && ww.control != nil {
			ch, err := ww.control.Watch(ctx)
			if err != nil {
				return err
			}
			requests = ch
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-ticks:
			tick()
		case req, ok := <-requests:
			if !ok {
				requests = nil // the watch ended; watch again
				continue
			}
			if done, err := handle(req); done || err != nil {
				return err
			}
		}
	}
}

// recordedPhase is the phase the run's record names.
func (ww *windowWait) recordedPhase() plan.Phase {
	if ww.record == nil {
		return ""
	}
	return plan.Phase(ww.record.Phase)
}

// windowRequest is what a request does to a wait for a window: cancel
// pauses it; rollback turns a run that can be turned around live.
func (ww *windowWait) windowRequest(ctx context.Context, req string) error {
	switch {
	case req == state.RequestCancel:
		// The wait comes before s is entered: the run is paused in the
		// phase its record names (none before its first), as status and
		// run say.
		return &PausedError{Phase: ww.recordedPhase()}
	case req == state.RequestRollback && ww.liveRollback:
		if err := ww.control.Clear(ctx); err != nil {
			return err
		}
		return errRollbackRequested
	}
	return nil
}
