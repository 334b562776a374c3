package upgrade

import (
	"context"
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The surge strategy on a cloud group: each batch (at most maxSurge +
// maxUnavailable nodes of one zone) first raises the group by up to
// maxSurge nodes and waits for them, then its old nodes are cordoned,
// drained and removed, the first ones with the desired size lowered again
// (the surge nodes replaced them), the rest replaced by the group. The
// sizes before the run are recorded before the first change, so a re-run
// raises to the same absolute sizes, never above them.

// surge adds the batch's surge nodes and waits until they are Ready.
func (e *Engine) surge(ctx context.Context, i int) error {
	if _, err := e.recordOriginal(ctx, 0); err != nil {
		return err
	}
	n := int32(min(e.cfg.Plan.MaxSurge, len(e.cfg.Plan.Batches[i].Nodes)))
	if n == 0 {
		return nil
	}
	from, to, err := e.raise(ctx, n)
	if to != from {
		e.logf("%s: surge: %s %q desired %d -> %d, max %d -> %d", e.batchLabel(i), e.groupKind(), e.group.GroupName(), from.Desired, to.Desired, from.Max, to.Max)
	}
	if err != nil {
		return err
	}
	cr := e.cloudRecord()
	cr.ScaleUp, cr.LastDesired = n, to.Desired
	if err := e.save(ctx); err != nil {
		return err
	}
	if err := e.waitNewNodes(ctx, cr, nil, int(cr.LastDesired)); err != nil {
		return err
	}
	return e.protectNewNodes(ctx, true)
}

// removeNode takes a drained node out: where a surge node replaced it, its
// machine goes with the desired size lowered while that is above the
// recorded one; otherwise as the provider removes nodes (the group
// replaces it). It returns what it did, for the log.
func (e *Engine) removeNode(ctx context.Context, name string) (string, error) {
	e.written.forget(name) // no write of the run's follows
	r, ok := e.cfg.Provider.(cloud.Remover)
	if !ok {
		return "", fmt.Errorf("cannot remove node %q: provider %q does not remove nodes", name, e.cfg.Provider.Name())
	}
	cr := e.cfg.Record.Cloud
	if !e.traits.SurgeReplaces || e.group == nil || cr == nil || cr.Original == nil {
		return r.Describe(), r.RemoveNode(ctx, name)
	}
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return "", err
	}
	if sizes.Desired <= cr.Original.Desired {
		return r.Describe(), r.RemoveNode(ctx, name)
	}
	if err := e.holdRebalance(ctx); err != nil {
		return "", err
	}
	g, err := e.resizer()
	if err != nil {
		return "", err
	}
	if err := g.Shrink(ctx, name); err != nil {
		return "", err
	}
	e.shrunk.Insert(name)
	cr.LastDesired = sizes.Desired - 1
	return "machine removed with the desired size lowered; a surge node replaced it", e.save(ctx)
}

// waitReplacements waits, after a surge batch, until the group runs its
// desired size again in Ready nodes of the target configuration: the
// nodes removed without lowering the desired size have their replacements.
func (e *Engine) waitReplacements(ctx context.Context) error {
	cr := e.cfg.Record.Cloud
	if cr == nil {
		return nil
	}
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return err
	}
	cr.LastDesired = sizes.Desired
	if err := e.save(ctx); err != nil {
		return err
	}
	return e.waitNewNodes(ctx, cr, nil, int(cr.LastDesired))
}

// Surge: point the group at the target, then per batch add new nodes for
// the batch's outdated ones and replace them; back to the sizes of before.
func init() {
	registerSteps("surge", map[plan.Phase]step{
		plan.PhaseSetup:     unbatched((*Engine).setup),
		plan.PhaseSurge:     (*Engine).surge,
		plan.PhaseScaleDown: unbatched((*Engine).scaleDown),
	})
}
