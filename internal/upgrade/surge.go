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
	registerSteps(plan.StrategySurge, func(t toolkit) strategyRun { return &surgeRun{t} })
}

// surgeRun is the surge strategy's execution.
type surgeRun struct{ toolkit }

func (r *surgeRun) steps() map[plan.Phase]step {
	return map[plan.Phase]step{
		plan.PhaseSetup:     unbatched(r.group.setup),
		plan.PhaseSurge:     r.surge,
		plan.PhaseDrain:     r.cordonThenDrain,
		plan.PhaseRemove:    r.remove,
		plan.PhaseRecover:   r.recover,
		plan.PhaseScaleDown: unbatched(r.group.shrink.scaleDown),
	}
}

// cordonThenDrain cordons the batch's nodes before their drain, as GKE's
// surge does, so none takes pods while its neighbours drain.
func (r *surgeRun) cordonThenDrain(ctx context.Context, i int) error {
	if names := r.batches.batchNodesLeft(i); len(names) > 0 {
		if err := r.nodes.setUnschedulable(ctx, names, true); err != nil {
			return err
		}
	}
	return r.batches.drainBatch(ctx, i)
}

// remove removes the batch's drained nodes, those the surge nodes replaced
// with the desired size lowered, and brings max back down.
func (r *surgeRun) remove(ctx context.Context, i int) error {
	if r.group.pool == nil {
		return r.batches.removeBatch(ctx, i)
	}
	if err := r.batches.removeBatchWith(ctx, i, r.removeReplaced); err != nil {
		return err
	}
	_, err := r.group.restoreMax(ctx)
	return err
}

// removeReplaced takes a drained node out: while the desired size is above
// the recorded one a surge node replaced it, and its machine goes with the
// desired size lowered; otherwise as the provider removes nodes (the group
// replaces it).
func (r *surgeRun) removeReplaced(ctx context.Context, name string) (string, error) {
	cr := r.cfg.Record.Cloud
	if cr == nil || cr.Original == nil {
		return r.batches.removeNode(ctx, name)
	}
	sizes, err := r.group.pool.Sizes(ctx)
	if err != nil {
		return "", err
	}
	if sizes.Desired <= cr.Original.Desired {
		return r.batches.removeNode(ctx, name)
	}
	if err := r.group.holdRebalance(ctx); err != nil {
		return "", err
	}
	g, err := r.group.resizer()
	if err != nil {
		return "", err
	}
	if err := g.Shrink(ctx, name); err != nil {
		return "", err
	}
	r.group.shrunk.Insert(name)
	cr.LastDesired = sizes.Desired - 1
	return "machine removed with the desired size lowered; a surge node replaced it", r.save(ctx)
}

// recover waits for the group's replacements of the batch's nodes, then
// for the workloads, as every strategy's Recover does.
func (r *surgeRun) recover(ctx context.Context, i int) error {
	if r.group.pool == nil {
		return r.batches.waitRecovered(ctx, i)
	}
	return r.batches.recoverAfter(ctx, i, r.group.waitReplacements)
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
	if err := r.group.reserveSurge(ctx, n); err != nil {
		return err
	}
	from, to, err := r.group.raise(ctx, n)
	if to != from {
		r.logf("%s: surge: %s %q %s", batchLabel(r.cfg.Plan, i), r.words.groupKind(), r.group.pool.GroupName(), r.cfg.Plan.Cloud.ResizeText(from, to))
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
	if err := r.group.releaseSurge(ctx); err != nil {
		return err
	}
	return r.group.protectNewNodes(ctx, true)
}
