package upgrade

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// shrinkableSizes are the group's sizes before the service's update,
// where the run can bring them back (cloud.Shrinker); nil elsewhere.
func (r *managedRun) shrinkableSizes(ctx context.Context) (*plan.Sizes, error) {
	g, ok := r.group.pool.(cloud.Shrinker)
	if !ok {
		return nil, nil
	}
	sizes, err := g.Sizes(ctx)
	if err != nil {
		return nil, err
	}
	return &sizes, nil
}

// abortScaleUp takes back the scale-up a failed update of the service
// left (EKS raises desired and max before it drains, and documents no
// scale-down after a failure). An update that succeeded scaled down
// itself, and one never started scaled nothing: the sizes are then left
// to their owner (the cluster autoscaler).
func (r *managedRun) abortScaleUp(ctx context.Context) error {
	m := r.cfg.Record.Managed
	if r.service == nil || m == nil {
		return nil
	}
	failed := m.FailedUpdate
	if m.UpdateID != "" {
		p, err := r.service.Progress(ctx, m.UpdateID)
		if err != nil {
			return err
		}
		if p.State == cloud.UpdateFailed {
			failed = m.UpdateID
		}
	}
	if failed == "" {
		return nil
	}
	return r.takeBackScaleUp(ctx, failed)
}

// takeBackScaleUp brings the group back to the sizes recorded before the
// run, one drained node at a time, the nodes the service added first,
// with the scale-down of a run of the plugin's own; failed names the
// update whose scale-up it takes back.
func (r *managedRun) takeBackScaleUp(ctx context.Context, failed string) error {
	m := r.cfg.Record.Managed
	if m.SizesBefore == nil {
		return nil
	}
	if _, ok := r.group.pool.(cloud.Shrinker); !ok {
		return nil
	}
	sizes, err := r.group.pool.Sizes(ctx)
	if err != nil {
		return err
	}
	before := *m.SizesBefore
	if m.ScaleDown == nil {
		if sizes.Desired <= before.Desired && sizes.Max <= before.Max {
			return nil
		}
		// The service set the desired size it left: that is the size the
		// scale-down starts from, not a scale-up by someone else.
		m.ScaleDown = &state.ScaleRecord{LastDesired: sizes.Desired}
		if err := r.save(ctx); err != nil {
			return err
		}
		r.logf("the %s's update %s failed and left %s %q at %s (before the run: %s): taking its scale-up back", r.cfg.Plan.Managed.Service, failed, r.words.groupKind(), r.group.pool.GroupName(), sizes, before)
	}
	return r.group.shrink.shrinkBackTo(ctx, m.ScaleDown, before)
}
