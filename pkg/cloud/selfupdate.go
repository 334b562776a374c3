package cloud

import "context"

// SelfUpdater is a Pool that replaces machines of its own accord once it
// is pointed at a new template (GCE: a managed instance group whose update
// policy is PROACTIVE; Karpenter: a NodePool whose nodes drifted): it
// would replace nodes nobody drained. A run holds it off from before
// Setup (a Pool that is no Group: before its first phase) to the run's
// end (its finish or abort), the way before recorded first, and puts it
// back then.
type SelfUpdater interface {
	Pool
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

// Provisioner is a Provider whose machines are launched for pending pods
// (Karpenter): a batch whose pods fit on no node that stays is drained
// all the same, since the pods it evicts are what the launches are for.
type Provisioner interface {
	Provider
	// Provisions says who launches for the evicted pods, for the log.
	Provisions() string
}

// Retargeter is a Pool the run points at its target itself where it has
// no Setup to do it in (Karpenter's NodePool, pointed back at the
// NodeClass a rollback after a finished run returns to): once its own
// updates are held, before the first phase. Retarget may be repeated;
// what is "" when the pool was on the target already.
type Retargeter interface {
	Pool
	Retarget(ctx context.Context) (what string, err error)
}
