package cloud

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// CapacityProver is a Provider that can read the cloud's shared limits the
// machines a run adds count against (vCPU quotas, subnet addresses), so
// that the plan says the run would not fit before anything changes. A
// provider without it proves nothing and warns of nothing.
type CapacityProver interface {
	Provider
	// ProveCapacity reads what added more of the group's machines need of
	// each limit and what is free. What it cannot read it names in
	// Unprovable; an error is a cloud that could not be asked at all.
	ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error)
}
