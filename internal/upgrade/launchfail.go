package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// launchRefusals reads, for a wait for new machines, the cloud's
// refusals of the group's launches (cloud.LaunchRefusals): one no wait
// outlasts ends the wait at once, recorded, before anything is drained.
type launchRefusals struct {
	// raisedAt is when this process last raised the group: refusals are
	// read from then, or, for a wait of a resumed run, from its start
	// (the group retries a refused launch, so a refusal that still holds
	// comes again).
	raisedAt time.Time
	// unreadable says the cloud would not say (a permission missing):
	// the wait runs to --node-ready-timeout, as without it.
	unreadable bool
}

// refused is the refusal that ends the wait, recorded in the run's
// record; nil while there is none.
func (cg *cloudGroup) refused(ctx context.Context, waitStart time.Time) (*plan.LaunchFailure, error) {
	lr, ok := cg.pool.(cloud.LaunchRefusals)
	if !ok || cg.refusals.unreadable {
		return nil, nil
	}
	since := waitStart
	if !cg.refusals.raisedAt.IsZero() {
		since = cg.refusals.raisedAt
	}
	lf, err := lr.LaunchRefused(ctx, since)
	if err != nil && !cloud.Transient(err) {
		cg.refusals.unreadable = true
		cg.logf("%s; the wait for new nodes cannot tell a refused launch and runs to --node-ready-timeout", err)
		return nil, nil
	}
	cr := cg.cloudRecord()
	if err != nil || (lf == nil && cr.LaunchFailure == nil) {
		return nil, err
	}
	cr.LaunchFailure = lf
	return lf, cg.save(ctx)
}

// refusedOr is, for a look at the new machines that failed because one
// cannot be created (cloud.CodeNodeCreation, as GCE's lastAttempt errors
// are), the cloud's refusal of the launches where it gives one, so the
// run records it and names the zones as for any refusal; err otherwise.
func (cg *cloudGroup) refusedOr(ctx context.Context, waitStart time.Time, err error, failure func() *NodeCreationFailure) error {
	if unlaunchable(err) == nil {
		return err
	}
	lf, rerr := cg.refused(ctx, waitStart)
	if rerr != nil || lf == nil {
		return err
	}
	f := failure()
	f.Refused = lf
	return f
}

// refusedText says a refusal for NodeCreationFailure: the zones refused,
// the cloud's words, the zones the group launched in instead.
func refusedText(groupKind, group string, lf *plan.LaunchFailure) string {
	s := fmt.Sprintf("%s %q cannot launch in zones %s: %s: %s", groupKind, group, quoteAll(lf.Zones), lf.Code, lf.Message)
	if len(lf.Launched) > 0 {
		return s + "; it launched in zones " + quoteAll(lf.Launched) + " since the scale-up"
	}
	return s + "; it launched in no zone since the scale-up"
}
