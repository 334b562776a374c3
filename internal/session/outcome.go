package session

import (
	"context"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The words of how a run stands: status's STATUS column, report's outcome
// line and each attempt's end, so that they never disagree.
const (
	OutcomeRunning     = "running"            // a live process drives it
	OutcomePausing     = "pausing"            // alive, asked by cancel to stop at its next safe point
	OutcomePaused      = "paused"             // stopped by cancel; resume continues it
	OutcomeSoaking     = "soaking"            // blue/green soak: alive and waiting, or left soaking with --no-wait
	OutcomeSoakOver    = "soak over"          // left soaking with --no-wait, and the soak has ended: resume deletes blue
	OutcomeWaiting     = "waiting for window" // alive, holding its next batch until a maintenance window opens (--window, --not-before)
	OutcomeWindowOver  = "window closed"      // stopped at --not-after with no window left: the same command with a later --not-after goes on
	OutcomeRollingBack = "rolling back"       // alive, undoing the upgrade
	OutcomeRolledBack  = "rolled back"        // the rollback finished
	OutcomeFinished    = "finished"           // the upgrade finished
	OutcomeAborted     = "aborted"            // put back in service by the abort command before it finished
	OutcomeInterrupted = "interrupted"        // stopped by Ctrl-C, SIGTERM or a kill before it finished; run it again
	OutcomeFailed      = "failed"             // stopped by an error (LAST ERROR says why); fix it and run again
)

// Outcome is how the run of record r stands, given whether a live process
// holds its lock and a request (cancel, rollback) it has not taken yet.
// status and report both call it: the one place the rules live.
func Outcome(r *state.Record, alive bool, request string, now time.Time) string {
	phase := plan.Phase(r.Phase)
	switch {
	case r.FinishedAt != nil:
		if r.AbortedAt != nil {
			return OutcomeAborted
		}
		if rolledBack(r) {
			return OutcomeRolledBack
		}
		return OutcomeFinished
	// The run clears LastError when it starts and writes it when it stops,
	// before it gives the lock up: an error means the run is over.
	case r.LastError != "":
		if Interrupted(r.LastError) {
			return OutcomeInterrupted
		}
		return OutcomeFailed
	case alive:
		return aliveOutcome(r, request)
	case request == state.RequestCancel || strings.HasPrefix(r.Note, "paused by cancel"):
		return OutcomePaused
	case strings.Contains(r.Note, windowClosedNote):
		return OutcomeWindowOver
	case r.Cloud != nil && r.Cloud.SoakUntil != nil && (phase == plan.PhaseSoak || strings.HasPrefix(r.Note, "soaking until")):
		if !now.Before(*r.Cloud.SoakUntil) {
			return OutcomeSoakOver
		}
		return OutcomeSoaking
	}
	// Neither finished nor stopped by an error, and no process holds the
	// lock: killed (kill -9, a lost machine) before it could say why.
	return OutcomeInterrupted
}

// aliveOutcome is how a run a live process drives stands.
func aliveOutcome(r *state.Record, request string) string {
	phase := plan.Phase(r.Phase)
	switch {
	case request == state.RequestCancel:
		return OutcomePausing
	case phase == plan.PhaseRollback || request == state.RequestRollback || rolledBack(r):
		return OutcomeRollingBack
	case phase == plan.PhaseSoak || phase == plan.PhaseBatchSoak:
		return OutcomeSoaking
	case r.WaitingForWindow != nil:
		return OutcomeWaiting
	}
	return OutcomeRunning
}

// rolledBack reports whether the record is of a rollback: blue/green's, or
// an eks or surge run sent back to the launch template version the group
// launched before (the rollback command's recorded request).
func rolledBack(r *state.Record) bool {
	if plan.Phase(r.Phase) == plan.PhaseRollback || strings.HasPrefix(r.Note, "rolled back") {
		return true
	}
	c := r.Cloud
	return c != nil && c.FromVersion != "" && c.TargetVersion == c.FromVersion &&
		r.Request != nil && r.Request.Cloud.Version == c.FromVersion
}

// Interrupted reports whether a recorded error is an interruption (Ctrl-C,
// SIGTERM) rather than a failure; older versions recorded "context canceled".
func Interrupted(lastError string) bool {
	return lastError == context.Canceled.Error() || strings.HasPrefix(lastError, "interrupted")
}

// windowClosedNote is in the note of a run stopped at --not-after
// (upgrade.WindowClosedError).
const windowClosedNote = "no maintenance window opens before --not-after"
