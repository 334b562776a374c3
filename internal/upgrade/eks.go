package upgrade

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The EKS update (the default strategy): point the group at the target,
// scale it up, taint every outdated node, replace them in batches, scale
// back down.
func init() {
	registerSteps(plan.DefaultStrategy, map[plan.Phase]step{
		plan.PhaseSetup:     unbatched((*Engine).setup),
		plan.PhaseScaleUp:   unbatched((*Engine).scaleUp),
		plan.PhaseTaint:     unbatched((*Engine).taintAll),
		plan.PhaseScaleDown: unbatched((*Engine).scaleDown),
	})
}

// scaleUp raises desired and max by the planned count, recording the sizes
// before it does, so a re-run never inflates twice and the end restores
// the sizes of before the run.
func (e *Engine) scaleUp(ctx context.Context) error {
	cr := e.cloudRecord()
	var inc int32
	if e.cfg.Plan.Cloud != nil {
		inc = e.cfg.Plan.Cloud.ScaleUp
	}
	if _, err := e.recordOriginal(ctx, inc); err != nil {
		return err
	}
	if cr.ScaledForOther(cr.TargetVersion) && inc > 0 {
		// An interrupted run scaled up for another version: its nodes are
		// outdated too, so the target needs room of its own. Recorded
		// before the raise, so a re-run does not add it twice.
		e.logf("%s %q was scaled up for version %s by an interrupted run; its nodes are outdated too: scaling up again for version %s", e.groupKind(), e.group.GroupName(), cr.ScaledFor, cr.TargetVersion)
		cr.ScaleUp, cr.ScaledFor = cr.ScaleUp+inc, cr.TargetVersion
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	// Where the new machines land is the cloud's choice (AWS: the zones
	// with the fewest first): read before the raise, from the nodes then,
	// and recorded, so a run resumed after the raise waits for the same
	// zones rather than for every outdated zone, some of which the raise
	// may never have launched in.
	zones := cr.ScaleUpZones
	if sizes, err := e.group.Sizes(ctx); err == nil && sizes.Desired < cr.Original.Desired+cr.ScaleUp {
		var skipped []string
		zones, skipped = e.scaleUpZones(int(cr.Original.Desired + cr.ScaleUp - sizes.Desired))
		if len(skipped) > 0 {
			e.logf("the new nodes go to the zones with the fewest nodes first: zones %s may get none, so their pods may move to other zones", quoteAll(skipped))
		}
		if !slices.Equal(cr.ScaleUpZones, zones) {
			cr.ScaleUpZones = zones
			if err := e.save(ctx); err != nil {
				return err
			}
		}
	}
	from, to, err := e.raise(ctx, cr.ScaleUp)
	if to != from {
		e.logf("scaling %s %q up by %d: desired %d -> %d, max %d -> %d", e.groupKind(), e.group.GroupName(), cr.ScaleUp, from.Desired, to.Desired, from.Max, to.Max)
	}
	if err != nil {
		return err
	}
	if to != from {
		cr.LastDesired = to.Desired
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	if cr.ScaledFor != "" && cr.ScaledFor != cr.TargetVersion {
		// The run being rolled back scaled up for another version: its
		// extra nodes are outdated now, the nodes from before the run
		// serve, and replacements of the target come as the others are
		// removed. Nothing new to wait for.
		e.logf("%s %q was scaled up for version %s by an earlier run; its nodes are replaced like the others", e.groupKind(), e.group.GroupName(), cr.ScaledFor)
		return nil
	}
	if err := e.waitNewNodes(ctx, cr, zones, int(cr.LastDesired)); err != nil {
		return err
	}
	return e.protectNewNodes(ctx, true)
}

// taintAll keeps new pods off every outdated node before any is drained,
// so evicted pods do not land on a node drained later.
func (e *Engine) taintAll(ctx context.Context) error {
	names := e.cfg.Plan.OutdatedNames()
	e.logf("tainting %d outdated nodes with %s", len(names), plan.TaintString(e.cfg.Taint))
	err := e.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		changed, err := e.updateNode(ctx, name, func(n *corev1.Node) bool {
			if slices.ContainsFunc(n.Spec.Taints, e.isOurTaint) {
				return false
			}
			n.Spec.Taints = append(n.Spec.Taints, e.cfg.Taint)
			return true
		})
		if err != nil {
			return fmt.Errorf("error when tainting node %q: %w", name, err)
		}
		if changed {
			e.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeTainted", "tainted %s: outdated (%s)", plan.TaintString(e.cfg.Taint), e.planDescription())
		}
		return nil
	})
	if err != nil {
		return err
	}
	return e.releaseCurrent(ctx)
}
