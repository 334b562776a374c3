package upgrade

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The surge strategy on a cloud group: each batch (at most maxSurge +
// maxUnavailable nodes of one zone) first raises the group by up to
// maxSurge nodes and waits for them, then its old nodes are cordoned,
// drained and removed, the first ones with the desired size lowered again
// (the surge nodes replaced them), the rest replaced by the group. The
// sizes before the run are recorded before the first change, so a re-run
// raises to the same absolute sizes, never above them.
func init() {
	registerSteps(plan.StrategySurge, func(e *Engine) strategyRun { return &surgeRun{e} })
}

// surgeRun is the surge strategy's execution.
type surgeRun struct{ *Engine }

func (r *surgeRun) steps() map[plan.Phase]step {
	return map[plan.Phase]step{
		plan.PhaseSetup:     unbatched(r.group.setup),
		plan.PhaseSurge:     r.surge,
		plan.PhaseScaleDown: unbatched(r.group.shrink.scaleDown),
	}
}

// surge adds the batch's surge nodes and waits until they are Ready.
func (r *surgeRun) surge(ctx context.Context, i int) error {
	if _, err := r.group.recordOriginal(ctx, 0); err != nil {
		return err
	}
	n := int32(min(r.cfg.Plan.MaxSurge, len(r.cfg.Plan.Batches[i].Nodes)))
	if n == 0 {
		return nil
	}
	from, to, err := r.group.raise(ctx, n)
	if to != from {
		r.logf("%s: surge: %s %q %s", r.batchLabel(i), r.groupKind(), r.group.pool.GroupName(), r.cfg.Plan.Cloud.ResizeText(from, to))
	}
	if err != nil {
		return err
	}
	cr := r.group.cloudRecord()
	cr.ScaleUp, cr.LastDesired = n, to.Desired
	if err := r.save(ctx); err != nil {
		return err
	}
	if err := r.group.waitNewNodes(ctx, &cr.GroupRecord, nil, int(cr.LastDesired)); err != nil {
		return err
	}
	return r.group.protectNewNodes(ctx, true)
}
