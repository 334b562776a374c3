package upgrade

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// rebalancingBlueGreen is a blue group that rebalances between zones
// unless suspended (AWS's AZRebalance, a regional MIG's redistribution).
type rebalancingBlueGreen struct {
	*fakeBlueGreen
	held bool
}

var _ cloud.Rebalancer = (*rebalancingBlueGreen)(nil)

func (r *rebalancingBlueGreen) RebalanceName() string { return "Rebalance" }

func (r *rebalancingBlueGreen) RebalanceHeld(context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held, nil
}

func (r *rebalancingBlueGreen) RebalanceZones(context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.zones), nil
}

func (r *rebalancingBlueGreen) HoldRebalance(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = true
	r.calls = append(r.calls, "Hold")
	return nil
}

func (r *rebalancingBlueGreen) ReleaseRebalance(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = false
	r.calls = append(r.calls, "Release")
	return nil
}

// TestAutoscaledBlueGreenHoldsBluesRebalancing: while the autoscaler takes
// blue's nodes away, unevenly between zones, blue's own rebalancing would
// terminate a blue node nobody drained: it is suspended from CreateGreen
// until blue is deleted, and nothing resumes it on the group that is gone.
func TestAutoscaledBlueGreenHoldsBluesRebalancing(t *testing.T) {
	t.Parallel()
	r := newBGRun(t)
	blue := &rebalancingBlueGreen{fakeBlueGreen: r.blue}
	r.in = plan.BlueGreenInput{WaitPeriod: time.Hour}
	r.planAndConfigure("autoscaled-blue-green")
	r.cfg.Provider = blue
	heldInWait := false
	got := r.run(func(s plan.State) {
		if s.Phase != plan.PhaseSoak {
			return
		}
		heldInWait, _ = blue.RebalanceHeld(context.Background())
		r.control.sendWhenWatched(state.RequestComplete)
	})
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	if !heldInWait {
		t.Error("blue's rebalancing was not held during the wait period")
	}
	calls := blue.callsNow()
	hold, del := slices.Index(calls, "Hold"), slices.Index(calls, "DeleteGroup asg")
	if hold < 0 || del < 0 || hold > slices.Index(calls, "SetGroupSizes asg min 0, desired 3, max 4") {
		t.Errorf("calls %v: want Hold before blue may shrink, and DeleteGroup", calls)
	}
	if slices.Contains(calls, "Release") {
		t.Errorf("calls %v: Release of a deleted group", calls)
	}
	if cr := r.cfg.Record.Cloud; cr == nil || cr.RebalanceHeld {
		t.Errorf("record %+v: want the rebalancing no longer held", cr)
	}
}
