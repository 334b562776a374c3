package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// rebalancingGroup is a fake group whose cloud rebalances between zones
// unless suspended; its calls say whether it was held at each Shrink.
type rebalancingGroup struct {
	*fakeGroup
	held bool
}

var _ cloud.Rebalancer = (*rebalancingGroup)(nil)

func (r *rebalancingGroup) RebalanceName() string { return "Rebalance" }

func (r *rebalancingGroup) RebalanceHeld(context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held, nil
}

func (r *rebalancingGroup) RebalanceZones(context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.zones), nil
}

func (r *rebalancingGroup) HoldRebalance(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = true
	r.calls = append(r.calls, "Hold")
	return nil
}

func (r *rebalancingGroup) ReleaseRebalance(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = false
	r.calls = append(r.calls, "Release")
	return nil
}

func (r *rebalancingGroup) Shrink(ctx context.Context, node string) error {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf("held=%v", r.held))
	r.mu.Unlock()
	return r.fakeGroup.Shrink(ctx, node)
}

// rebalanceCalls are the calls about rebalancing, each Shrink as whether
// it found the rebalancing held.
func (r *rebalancingGroup) rebalanceCalls() []string {
	return slices.DeleteFunc(r.callsNow(), func(c string) bool {
		return c != "Hold" && c != "Release" && !strings.HasPrefix(c, "held=")
	})
}

func TestRebalanceHeldForShrinks(t *testing.T) {
	t.Parallel()
	shrinks := func(n int) []string { return slices.Repeat([]string{"held=true"}, n) }
	for _, tc := range []struct {
		name     string
		strategy plan.StrategyName
		in       plan.Input
		// heldBefore: suspended before the run by someone else.
		heldBefore bool
		// killAt kills a first run there; abort then ends it.
		killAt    string
		wantCalls []string
		wantHeld  bool
	}{
		{name: "eks: held from the scale-down's first termination to its end", strategy: "eks", in: plan.Input{MaxUnavailable: "2"},
			wantCalls: concat([]string{"Hold"}, shrinks(4), []string{"Release"})},
		{name: "surge: held from the first batch's termination to the end", strategy: "surge", in: plan.Input{MaxSurge: 1, MaxUnavailable: "0"},
			wantCalls: concat([]string{"Hold"}, shrinks(3), []string{"Release"})},
		{name: "suspended before the run: never resumed", strategy: "eks", in: plan.Input{MaxUnavailable: "2"}, heldBefore: true,
			wantCalls: shrinks(4), wantHeld: true},
		{name: "surge with no surge node: nothing lowers the desired size", strategy: "surge", in: plan.Input{MaxUnavailable: "1"}},
		// Killed between batches with the rebalancing held: abort
		// resumes it.
		{name: "abort resumes what a killed run held", strategy: "surge", in: plan.Input{MaxSurge: 1, MaxUnavailable: "0"}, killAt: "Surge 2",
			wantCalls: concat([]string{"Hold"}, shrinks(1), []string{"Release"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
			client, fg := cloudCluster(before, threeOldNodes()...)
			group := &rebalancingGroup{fakeGroup: fg, held: tc.heldBefore}
			in := tc.in
			in.Strategy, in.Cloud = tc.strategy, fg.cloudGroup()
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, group)
			cfg.Drain = drainOpts()
			rec := cfg.Record
			if tc.killAt != "" {
				cfg.OnProgress = killAt(rec, p, tc.killAt)
			}
			got := runEngine(t, cfg, nil, fg)
			if tc.killAt != "" {
				if !errors.Is(got.err, errKilled) {
					t.Fatalf("first run: %v, want it killed\n%s", got.err, got.out)
				}
				if !rec.Cloud.RebalanceHeld || !group.held {
					t.Fatalf("killed run: record %+v, held %v: want it held", rec.Cloud, group.held)
				}
				again := buildPlan(t, client, plan.Input{Strategy: tc.strategy, MaxSurge: in.MaxSurge, MaxUnavailable: in.MaxUnavailable, Cloud: fg.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
				acfg := cloudRun(again, client, group)
				acfg.Record = rec
				out, _, err := abortRun(t, acfg, fg)
				if err != nil {
					t.Fatalf("abort: %v\n%s", err, out)
				}
			} else if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			if calls := group.rebalanceCalls(); !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls %v, want %v", calls, tc.wantCalls)
			}
			if group.held != tc.wantHeld {
				t.Errorf("rebalancing held at the end: %v, want %v", group.held, tc.wantHeld)
			}
			if cr := rec.Cloud; cr != nil && (cr.RebalanceHeld || cr.RebalanceWasHeld != tc.heldBefore) {
				t.Errorf("record held %v, was held %v; want false, %v", cr.RebalanceHeld, cr.RebalanceWasHeld, tc.heldBefore)
			}
			if s := fg.sizesNow(); s != before {
				t.Errorf("sizes %s, want %s", s, before)
			}
		})
	}
}

// A run killed after it recorded the hold and before the call holds it
// on resume, and releases it at the end.
func TestRebalanceRecordedBeforeTheCall(t *testing.T) {
	t.Parallel()
	client, fg := cloudCluster(plan.Sizes{Min: 1, Desired: 4, Max: 5}, groupNode("a", "z1", "2"), groupNode("b", "z1", "2"), groupNode("c", "z2", "2"), groupNode("d", "z2", "2"))
	group := &rebalancingGroup{fakeGroup: fg}
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: "eks"}
	cfg := cloudRun(p, client, group)
	cfg.Drain, cfg.Start = drainOpts(), plan.PhaseScaleDown
	cfg.Record = &state.Record{Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "fake", Group: "asg", Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 4}, Holds: state.Holds{RebalanceHeld: true}}}
	if got := runEngine(t, cfg, nil, fg); got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	if calls, want := group.rebalanceCalls(), []string{"Hold", "held=true", "Release"}; !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if group.held || cfg.Record.Cloud.RebalanceHeld {
		t.Errorf("held %v, recorded %v at the end", group.held, cfg.Record.Cloud.RebalanceHeld)
	}
}

// A surge run's Shrinks lower the desired size in the zone of the batch
// while the group launches each surge node in its emptiest zone, ties to
// the first (as Auto Scaling does): three nodes over three zones end
// 2/1/0. Resumed so, the group's rebalancing would terminate a node
// nobody drained; the run evens the zones out first, with one node more
// and one drained off the fullest zone, or, where the cloud launches
// elsewhere, leaves the rebalancing suspended and says so.
func TestZonesEvenedBeforeRebalanceResumes(t *testing.T) {
	t.Parallel()
	shrinks := func(n int) []string { return slices.Repeat([]string{"held=true"}, n) }
	for _, tc := range []struct {
		name      string
		onlyZone  string
		wantZones []int
		wantCalls []string
		wantHeld  bool
		wantNote  string
	}{
		{name: "surge nodes to the emptiest zone, ties to the first", wantZones: []int{1, 1, 1},
			wantCalls: concat([]string{"Hold"}, shrinks(3+1), []string{"Release"})},
		{name: "capacity in one zone only", onlyZone: "z1", wantZones: []int{3, 0, 0},
			wantCalls: concat([]string{"Hold"}, shrinks(3+1)), wantHeld: true,
			wantNote: `Rebalance of Auto Scaling group "asg" stays suspended: its zones are uneven (z1 3, z2 0, z3 0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
			client, fg := cloudCluster(before, groupNode("old-a", "z1", "1"), groupNode("old-b", "z2", "1"), groupNode("old-c", "z3", "1"))
			fg.emptiestFirst, fg.onlyZone = true, tc.onlyZone
			group := &rebalancingGroup{fakeGroup: fg}
			in := plan.Input{Strategy: "surge", MaxSurge: 1, MaxUnavailable: "0", Cloud: fg.cloudGroup()}
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, group)
			cfg.Drain = drainOpts()
			got := runEngine(t, cfg, nil, fg)
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			if z := fg.zoneCounts(); !slices.Equal(z, tc.wantZones) {
				t.Errorf("machines per zone %v, want %v\n%s", z, tc.wantZones, got.out)
			}
			if calls := group.rebalanceCalls(); !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls %v, want %v", calls, tc.wantCalls)
			}
			if group.held != tc.wantHeld || cfg.Record.Cloud.RebalanceHeld {
				t.Errorf("rebalancing held at the end: %v (recorded for the run to resume: %v), want %v (false)", group.held, cfg.Record.Cloud.RebalanceHeld, tc.wantHeld)
			}
			if tc.wantNote != "" && !strings.Contains(got.out, tc.wantNote) {
				t.Errorf("output does not say %q:\n%s", tc.wantNote, got.out)
			}
			if s := fg.sizesNow(); s != before {
				t.Errorf("sizes %s, want %s", s, before)
			}
			wantNoMarks(t, client)
		})
	}
}
