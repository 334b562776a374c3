package plan

// Phase is a state of a run's state machine; the record keeps it so a re-run
// knows where the last one stopped.
type Phase string

// The phases a strategy strings together. The batch phases (Surge to
// Recover, and BatchSoak) repeat once per batch.
const (
	// PhaseSetup points the group at the target configuration.
	PhaseSetup Phase = "Setup"
	// PhasePrepareTarget makes the target configuration exist without
	// pointing the group at it (blue keeps its own).
	PhasePrepareTarget Phase = "PrepareTarget"
	PhaseScaleUp       Phase = "ScaleUp"
	PhaseTaint         Phase = "Taint"
	PhaseSurge         Phase = "Surge"
	PhaseCreateGreen   Phase = "CreateGreen"
	PhaseCordonBlue    Phase = "CordonBlue"
	PhaseRoom          Phase = "WaitForRoom"
	PhaseDrain         Phase = "Drain"
	PhaseCordon        Phase = "Cordon"
	PhaseRemove        Phase = "Remove"
	PhaseRecover       Phase = "Recover"
	PhaseBatchSoak     Phase = "BatchSoak"
	PhaseSoak          Phase = "Soak"
	PhaseDeleteBlue    Phase = "DeleteBlue"
	PhaseRollback      Phase = "Rollback"
	PhaseScaleDown     Phase = "ScaleDown"
	PhaseDone          Phase = "Done"
)

// BatchPhase reports whether the phase works on one batch of nodes.
func BatchPhase(p Phase) bool {
	switch p {
	case PhaseSurge, PhaseRoom, PhaseDrain, PhaseCordon, PhaseRemove, PhaseRecover, PhaseBatchSoak:
		return true
	}
	return false
}

// State is where a run is: the phase and, in the batch phases, the batch.
type State struct {
	Phase Phase
	Batch int // index into Plan.Batches
}

// Flow is what a strategy's transitions depend on besides the state.
type Flow struct {
	Batches int
	// CloudGroup says a provider resizes a group of machines: the run
	// points it at the target first and restores its sizes at the end.
	CloudGroup bool
}

// batchNext is the batch loop most strategies share: WaitForRoom, Drain,
// Cordon (and the post-drain wait), Remove, Recover; then the next batch
// from start, or end after the last.
func batchNext(s State, f Flow, start Phase, end State) (State, bool) {
	switch s.Phase {
	case PhaseRoom:
		return State{Phase: PhaseDrain, Batch: s.Batch}, true
	case PhaseDrain:
		return State{Phase: PhaseCordon, Batch: s.Batch}, true
	case PhaseCordon:
		return State{Phase: PhaseRemove, Batch: s.Batch}, true
	case PhaseRemove:
		return State{Phase: PhaseRecover, Batch: s.Batch}, true
	case PhaseRecover:
		if s.Batch+1 < f.Batches {
			return State{Phase: start, Batch: s.Batch + 1}, true
		}
		return end, true
	}
	return State{}, false
}
