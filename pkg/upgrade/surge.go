package upgrade

import (
	"context"
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
	cr := e.cloudRecord()
	if cr.Original == nil {
		sizes, err := e.group.Sizes(ctx)
		if err != nil {
			return err
		}
		cr.Original, cr.LastDesired = &sizes, sizes.Desired
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	n := min(e.cfg.Plan.MaxSurge, len(e.cfg.Plan.Batches[i].Nodes))
	if n == 0 {
		return nil
	}
	orig := *cr.Original
	wantDesired, wantMax := orig.Desired+int32(n), orig.Max+int32(n)
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return err
	}
	if sizes.Desired < wantDesired || sizes.Max < wantMax {
		d, m := max(sizes.Desired, wantDesired), max(sizes.Max, wantMax)
		e.logf("batch %d/%d: surge: Auto Scaling group %q desired %d -> %d, max %d -> %d", i+1, len(e.cfg.Plan.Batches), e.group.GroupName(), sizes.Desired, d, sizes.Max, m)
		if err := e.group.SetDesiredAndMax(ctx, d, m); err != nil {
			return err
		}
		sizes.Desired = d
	}
	cr.ScaleUp, cr.LastDesired = int32(n), sizes.Desired
	if err := e.save(ctx); err != nil {
		return err
	}
	if err := e.waitNewNodes(ctx, cr, nil); err != nil {
		return err
	}
	return e.protectNewNodes(ctx, true)
}

// removeNode takes a drained node out: under surge on a cloud group, with
// the desired size lowered while it is above the recorded one (a surge
// node replaced this one), else replaced by the group; otherwise as the
// provider removes nodes. It returns what it did, for the log.
func (e *Engine) removeNode(ctx context.Context, name string) (string, error) {
	if !e.flow().surge || e.group == nil || e.cfg.Record.Cloud == nil || e.cfg.Record.Cloud.Original == nil {
		return e.cfg.Provider.Describe(), e.cfg.Provider.RemoveNode(ctx, name)
	}
	cr := e.cfg.Record.Cloud
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return "", err
	}
	if sizes.Desired > cr.Original.Desired {
		if err := e.group.Shrink(ctx, name); err != nil {
			return "", err
		}
		e.shrunk.Insert(name)
		cr.LastDesired = sizes.Desired - 1
		return "terminated with the desired size lowered; a surge node replaced it", e.save(ctx)
	}
	return e.cfg.Provider.Describe(), e.cfg.Provider.RemoveNode(ctx, name)
}

// restoreMax brings max back to the recorded one once the desired size
// allows it.
func (e *Engine) restoreMax(ctx context.Context) error {
	cr := e.cfg.Record.Cloud
	if cr == nil || cr.Original == nil {
		return nil
	}
	sizes, err := e.group.Sizes(ctx)
	if err != nil {
		return err
	}
	if m := max(cr.Original.Max, sizes.Desired); sizes.Max != m {
		return e.group.SetMax(ctx, m)
	}
	return nil
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
	return e.waitNewNodes(ctx, cr, nil)
}
