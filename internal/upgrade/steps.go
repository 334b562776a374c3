package upgrade

import (
	"context"
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// step performs one phase of a run; batch is the state's batch.
type step func(e *Engine, ctx context.Context, batch int) error

// strategySteps are the steps each strategy runs, by phase: a strategy's
// execution, registered in its own file beside the steps only it takes.
var strategySteps = map[string]map[plan.Phase]step{}

// batchSteps are the toolkit every strategy's batches share: wait for
// room, drain, cordon, remove, wait for the workloads.
var batchSteps = map[plan.Phase]step{
	plan.PhaseRoom:    (*Engine).waitForRoom,
	plan.PhaseDrain:   (*Engine).drainBatch,
	plan.PhaseCordon:  (*Engine).cordonBatch,
	plan.PhaseRemove:  (*Engine).removeBatch,
	plan.PhaseRecover: (*Engine).waitRecovered,
}

// registerSteps registers the steps of strategy: its own, and the batch
// toolkit.
func registerSteps(strategy string, own map[plan.Phase]step) {
	steps := map[plan.Phase]step{}
	for phase, s := range batchSteps {
		steps[phase] = s
	}
	for phase, s := range own {
		steps[phase] = s
	}
	strategySteps[strategy] = steps
}

// unbatched adapts a step that takes no batch.
func unbatched(f func(e *Engine, ctx context.Context) error) step {
	return func(e *Engine, ctx context.Context, _ int) error { return f(e, ctx) }
}

// step performs one phase with the strategy's step for it, or the
// service's where the cloud's service runs the update.
func (e *Engine) step(ctx context.Context, s plan.State) error {
	if e.cfg.Plan.Managed != nil {
		return e.serviceStep(ctx, s)
	}
	run, ok := strategySteps[e.strategy.Name()][s.Phase]
	if !ok {
		return fmt.Errorf("cannot run phase %q: strategy %q has no step for it", s.Phase, e.strategy.Name())
	}
	return run(e, ctx, s.Batch)
}
