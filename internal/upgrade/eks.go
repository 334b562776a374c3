package upgrade

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The EKS update (the default strategy): point the group at the target,
// scale it up, taint every outdated node, replace them in batches, scale
// back down.
func init() {
	registerSteps(plan.StrategyEKS, func(t toolkit) strategyRun { return &eksRun{t} })
}

// eksRun is the eks strategy's execution.
type eksRun struct{ toolkit }

func (r *eksRun) steps() map[plan.Phase]step {
	return map[plan.Phase]step{
		plan.PhaseSetup:     unbatched(r.group.setup),
		plan.PhaseScaleUp:   unbatched(r.scaleUp),
		plan.PhaseTaint:     unbatched(r.taintAll),
		plan.PhaseScaleDown: unbatched(r.group.shrink.scaleDown),
	}
}

// holdsOutdatedOff: taintAll keeps new pods off every outdated node.
func (r *eksRun) holdsOutdatedOff() {}

// scaleUp raises desired and max by the planned count, recording the sizes
// before it does, so a re-run never inflates twice and the end restores
// the sizes of before the run.
func (r *eksRun) scaleUp(ctx context.Context) error {
	cr, err := r.recordScaleUp(ctx)
	if err != nil {
		return err
	}
	zones, err := r.recordScaleUpZones(ctx, cr)
	if err != nil {
		return err
	}
	if err := r.group.reserveSurge(ctx, cr.ScaleUp); err != nil {
		return err
	}
	from, to, err := r.group.raise(ctx, cr.ScaleUp)
	if to != from {
		r.logf("scaling %s %q up by %d: %s", r.words.groupKind(), r.group.pool.GroupName(), cr.ScaleUp, r.cfg.Plan.Cloud.ResizeText(from, to))
	}
	if err != nil {
		return err
	}
	if to != from {
		cr.LastDesired = to.Desired
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	if cr.ScaledFor != "" && cr.ScaledFor != cr.TargetVersion {
		// The run being rolled back scaled up for another version: its
		// extra nodes are outdated now, the nodes from before the run
		// serve, and replacements of the target come as the others are
		// removed. Nothing new to wait for. The scale-down removes as
		// many outdated nodes as the scale-up added, unreplaced.
		how := "its nodes are replaced like the others"
		if d := len(r.cfg.Plan.Deferred); d > 0 {
			how = fmt.Sprintf("the scale-down removes %s without replacing them", plan.Count(d, "outdated node"))
		}
		r.logf("%s %q was scaled up for version %s by an earlier run; %s", r.words.groupKind(), r.group.pool.GroupName(), cr.ScaledFor, how)
		return nil
	}
	if err := r.group.waitNewNodes(ctx, &cr.GroupRecord, zones, int(cr.LastDesired)); err != nil {
		return err
	}
	if err := r.group.releaseSurge(ctx); err != nil {
		return err
	}
	return r.group.protectNewNodes(ctx, true)
}

// recordScaleUp records the sizes before the run and the scale-up the
// run adds to them, before the raise.
func (r *eksRun) recordScaleUp(ctx context.Context) (*state.CloudRecord, error) {
	cr := r.group.cloudRecord()
	var inc int32
	if r.cfg.Plan.Cloud != nil {
		inc = r.cfg.Plan.Cloud.ScaleUp
	}
	if _, err := r.group.recordOriginal(ctx, inc); err != nil {
		return nil, err
	}
	if cr.ScaledForOther(cr.TargetVersion) && inc > 0 {
		// An interrupted run scaled up for another version: its nodes are
		// outdated too, so the target needs room of its own. Recorded
		// before the raise, so a re-run does not add it twice.
		r.logf("%s %q was scaled up for version %s by an interrupted run; its nodes are outdated too: scaling up again for version %s", r.words.groupKind(), r.group.pool.GroupName(), cr.ScaledFor, cr.TargetVersion)
		cr.ScaleUp, cr.ScaledFor = cr.ScaleUp+inc, cr.TargetVersion
		if err := r.save(ctx); err != nil {
			return nil, err
		}
	}
	return cr, nil
}

// recordScaleUpZones returns the zones the raise surely launches a new
// node in, where the run waits for one.
func (r *eksRun) recordScaleUpZones(ctx context.Context, cr *state.CloudRecord) ([]string, error) {
	// Where the new machines land is the cloud's choice (AWS: the zones
	// with the fewest first): read before the raise, from the nodes then,
	// and recorded, so a run resumed after the raise waits for the same
	// zones rather than for every outdated zone, some of which the raise
	// may never have launched in.
	zones := cr.ScaleUpZones
	if sizes, err := r.group.pool.Sizes(ctx); err == nil && sizes.Desired < cr.Original.Desired+cr.ScaleUp {
		var skipped []string
		zones, skipped = r.scaleUpZones(ctx, int(cr.Original.Desired+cr.ScaleUp-sizes.Desired))
		if len(skipped) > 0 {
			r.logf("the new nodes go to the zones with the fewest nodes first: zones %s may get none, so their pods may move to other zones", quoteAll(skipped))
		}
		if !slices.Equal(cr.ScaleUpZones, zones) {
			cr.ScaleUpZones = zones
			if err := r.save(ctx); err != nil {
				return nil, err
			}
		}
	}
	return zones, nil
}

// taintAll keeps new pods off every outdated node before any is drained,
// so evicted pods do not land on a node drained later.
func (r *eksRun) taintAll(ctx context.Context) error {
	names := r.cfg.Plan.OutdatedNames()
	r.logf("tainting %d outdated nodes with %s", len(names), plan.TaintString(r.cfg.Taint))
	err := r.nodes.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		changed, err := r.nodes.updateNode(ctx, name, func(n *corev1.Node) bool {
			if slices.ContainsFunc(n.Spec.Taints, r.nodes.isOurTaint) {
				return false
			}
			n.Spec.Taints = append(n.Spec.Taints, r.cfg.Taint)
			return true
		})
		if err != nil {
			return fmt.Errorf("error when tainting node %q: %w", name, err)
		}
		if changed {
			r.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, "NodeUpgradeTainted", "tainted %s: outdated (%s)", plan.TaintString(r.cfg.Taint), planDescription(r.cfg.Plan))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.nodes.releaseCurrent(ctx)
}
