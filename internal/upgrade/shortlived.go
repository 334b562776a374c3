package upgrade

import "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"

// Short-lived: only point the group at the target; the outdated nodes are
// left to end on their own.
func init() {
	registerSteps(plan.StrategyShortLived, func(t toolkit) strategyRun { return shortLivedRun{t} })
}

// shortLivedRun is the short-lived strategy's execution.
type shortLivedRun struct{ toolkit }

func (r shortLivedRun) steps() map[plan.Phase]step {
	return map[plan.Phase]step{plan.PhaseSetup: unbatched(r.group.setup)}
}
