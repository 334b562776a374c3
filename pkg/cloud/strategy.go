package cloud

import "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"

// The strategies a provider names when it declares what its service runs
// (ServicePlanner.Runs) and its group's own strategy (OwnStrategy): the
// contract's words for them, so a provider fills its side from this
// package. They are the planner's own (package plan, which this package
// builds on, defines and plans them), not copies.
type (
	// StrategyName is what --strategy takes.
	StrategyName = plan.StrategyName
	// GroupStrategy is a group's own update strategy in the flags' terms.
	GroupStrategy = plan.GroupStrategy
)

// The strategies, by --strategy name.
const (
	StrategyEKS                 = plan.StrategyEKS
	StrategySurge               = plan.StrategySurge
	StrategyBlueGreen           = plan.StrategyBlueGreen
	StrategyAutoscaledBlueGreen = plan.StrategyAutoscaledBlueGreen
	StrategyShortLived          = plan.StrategyShortLived
)
