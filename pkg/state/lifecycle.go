package state

import "time"

// RunState is where a run stands as its last writer left it: stored in
// the record as data, so status, report and the controls read one answer
// instead of interpreting notes (which are for people). What only the
// lock and the requests tell (a live run pausing, a stored "running"
// whose process is gone) is derived from it by the session's lifecycle.
type RunState string

// The stored states. Their words are status's STATUS column.
const (
	// StateSubmitted: handed to an in-cluster Job whose pod has not
	// taken the run yet.
	StateSubmitted RunState = "submitted"
	// StateWaiting: holding its next step until a maintenance window
	// opens (--window, --not-before); WaitingForWindow says until when.
	StateWaiting RunState = "waiting for window"
	// StateRunning: a process works on it (in the phase Phase names).
	StateRunning RunState = "running"
	// StatePaused: stopped by cancel at a safe point.
	StatePaused RunState = "paused"
	// StateWindowClosed: stopped at --not-after with no window left.
	StateWindowClosed RunState = "window closed"
	// StateQuarantined: went on around the nodes --undrainable cordon
	// left quarantined (Record.Quarantined) and stopped with them left.
	StateQuarantined RunState = "quarantined"
	// StateSoaking: left at its blue/green soak (--no-wait).
	StateSoaking RunState = "soaking"
	// StateInterrupted: stopped by Ctrl-C or SIGTERM before it finished.
	StateInterrupted RunState = "interrupted"
	// StateFailed: stopped by an error, LastError says which.
	StateFailed RunState = "failed"
	// StateFinished: the upgrade reached its target.
	StateFinished RunState = "finished"
	// StateRolledBack: a rollback finished.
	StateRolledBack RunState = "rolled back"
	// StateAborted: put back in service by abort before it finished.
	StateAborted RunState = "aborted"
)

// Over reports whether s ends the run: nothing resumes it.
func (s RunState) Over() bool {
	return s == StateFinished || s == StateRolledBack || s == StateAborted
}

// Submission is a run handed to an in-cluster Job whose pod has not
// taken it yet. The record as it was before (Earlier; nil: none) comes
// back when the Job ends, or is withdrawn, before a pod takes the run: a
// submission that never ran leaves nothing behind. The pod that takes
// the run starts from Earlier, as a run from a terminal would.
type Submission struct {
	Job     string    `json:"job"`
	At      time.Time `json:"at"`
	Earlier *Record   `json:"earlier,omitempty"`
}
