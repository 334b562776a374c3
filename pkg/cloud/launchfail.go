package cloud

import (
	"context"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// LaunchRefusals is a Pool whose cloud says why it could not launch the
// group's machines (AWS: the Auto Scaling group's failed scaling
// activities): a run's wait for new machines stops at a refusal no wait
// outlasts, naming it and the zones with capacity, rather than at
// --node-ready-timeout. A Pool without it is waited for until then.
type LaunchRefusals interface {
	Pool
	// LaunchRefused is the newest refusal, since the time given, of a
	// launch for want of capacity, with the zones the group launched in
	// since; nil when there is none.
	LaunchRefused(ctx context.Context, since time.Time) (*plan.LaunchFailure, error)
}
