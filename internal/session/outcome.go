package session

import (
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The words of how a run stands, for report's outcome line and each
// attempt's end: the lifecycle's statuses (Describe), so that report and
// status never disagree.
const (
	OutcomeRunning     = string(state.StateRunning)
	OutcomePausing     = string(StatusPausing)
	OutcomePaused      = string(state.StatePaused)
	OutcomeSoaking     = string(state.StateSoaking)
	OutcomeSoakOver    = string(StatusSoakOver)
	OutcomeWaiting     = string(state.StateWaiting)
	OutcomeWindowOver  = string(state.StateWindowClosed)
	OutcomeQuarantined = string(state.StateQuarantined)
	OutcomeRollingBack = string(StatusRollingBack)
	OutcomeRolledBack  = string(state.StateRolledBack)
	OutcomeFinished    = string(state.StateFinished)
	OutcomeAborted     = string(state.StateAborted)
	OutcomeInterrupted = string(state.StateInterrupted)
	OutcomeFailed      = string(state.StateFailed)
)

// Outcome is how the run of record r stands, in the lifecycle's words,
// given whether a live process holds its lock and a request it has not
// taken yet: status and report both read it from Describe.
func Outcome(r *state.Record, alive bool, request string, now time.Time) string {
	return string(Describe(r, alive, request, now).Status)
}
