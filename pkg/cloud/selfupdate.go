package cloud

import "context"

// SelfUpdater is a Group that replaces machines of its own accord once it
// is pointed at a new template (GCE: a managed instance group whose update
// policy is PROACTIVE): it would replace nodes nobody drained. A run holds
// it off from before Setup to the run's end (its finish or abort), the way
// before recorded first, and puts it back then.
type SelfUpdater interface {
	Scaler
	// SelfUpdates reads how the group updates itself now, in the
	// provider's terms, for the record.
	SelfUpdates(ctx context.Context) (string, error)
	// HoldUpdates stops the group from replacing machines itself; it may
	// be repeated.
	HoldUpdates(ctx context.Context) error
	// RestoreUpdates puts back what SelfUpdates read before the run. Where
	// that would replace machines the run has not drained (an abort left
	// some on the old template), it leaves them held and says so in note.
	RestoreUpdates(ctx context.Context, was string) (note string, err error)
}
