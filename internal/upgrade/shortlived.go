package upgrade

import "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"

// Short-lived: only point the group at the target; the outdated nodes are
// left to end on their own.
func init() {
	registerSteps("short-lived", map[plan.Phase]step{
		plan.PhaseSetup: unbatched((*Engine).setup),
	})
}
