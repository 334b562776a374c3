package fleet

import (
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestMakespan(t *testing.T) {
	m := time.Minute
	tests := []struct {
		name string
		n    int
		work []time.Duration
		want time.Duration
	}{
		{"one at a time adds up", 1, []time.Duration{m, 2 * m, 3 * m}, 6 * m},
		{"all at once is the longest", 3, []time.Duration{m, 2 * m, 3 * m}, 3 * m},
		{"two at once: the third starts when the first ends", 2, []time.Duration{m, 3 * m, 2 * m}, 3 * m},
		{"two at once, a long one last", 2, []time.Duration{m, m, 5 * m}, 6 * m},
		{"no work", 2, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Makespan(tc.n, tc.work); got != tc.want {
				t.Errorf("Makespan(%d, %v) = %s, want %s", tc.n, tc.work, got, tc.want)
			}
		})
	}
}

// planned is a target's plan of d minutes needing vcpus of quota scope.
func planned(d time.Duration, scope string, vcpus int64) *plan.Plan {
	return &plan.Plan{
		Steps:    []plan.Step{{Estimate: plan.Duration(d)}},
		Capacity: &plan.CapacityPlan{Quotas: []plan.QuotaUse{{Scope: scope, Name: "vCPUs", Unit: "vCPUs", Needed: vcpus, Free: 10, Limit: 100}}},
	}
}

func TestPlanRollout(t *testing.T) {
	a, b, c := Target{Context: "a", NodeGroup: "ng"}, Target{Context: "b", NodeGroup: "ng"}, Target{Context: "c", NodeGroup: "ng"}
	f := &Fleet{Name: "f", Stages: []ResolvedStage{
		{Name: "canary", MaxConcurrency: 1, Targets: []Target{a}, Soak: 10 * time.Minute, Approval: true},
		{Name: "rest", MaxConcurrency: 2, Targets: []Target{b, c}},
	}}
	tests := []struct {
		name         string
		plans        map[string]TargetPlan
		wantEstimate time.Duration
		wantQuota    bool
		wantRefused  bool
	}{
		{"fits: the stages' work and the soak add up",
			map[string]TargetPlan{"a/ng": {Plan: planned(5*time.Minute, "aws:1:us-east-1", 4)}, "b/ng": {Plan: planned(3*time.Minute, "aws:1:us-east-1", 4)}, "c/ng": {Plan: planned(4*time.Minute, "aws:2:us-east-1", 8)}},
			19 * time.Minute, false, false},
		{"two targets at once on one quota need more than is free",
			map[string]TargetPlan{"a/ng": {Plan: planned(5*time.Minute, "aws:1:us-east-1", 4)}, "b/ng": {Plan: planned(3*time.Minute, "aws:1:us-east-1", 6)}, "c/ng": {Plan: planned(4*time.Minute, "aws:1:us-east-1", 6)}},
			19 * time.Minute, true, true},
		{"a target that could not be planned refuses the fleet",
			map[string]TargetPlan{"a/ng": {Error: "unreachable", ExitCode: 9}, "b/ng": {Plan: planned(3*time.Minute, "s", 1)}, "c/ng": {Plan: planned(4*time.Minute, "s", 1)}},
			14 * time.Minute, false, true},
		{"a target's blockers refuse the fleet",
			map[string]TargetPlan{"a/ng": {Plan: planned(5*time.Minute, "s", 1), Refused: true}, "b/ng": {Plan: planned(3*time.Minute, "s", 1)}, "c/ng": {Plan: planned(4*time.Minute, "s", 1)}},
			19 * time.Minute, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := PlanRollout(f, tc.plans)
			if got := time.Duration(r.Estimate); got != tc.wantEstimate {
				t.Errorf("estimate %s, want %s", got, tc.wantEstimate)
			}
			if got := len(r.Stages[1].Quotas) > 0; got != tc.wantQuota {
				t.Errorf("stage rest's quota blockers %v, want some: %v", r.Stages[1].Quotas, tc.wantQuota)
			}
			if r.Refused() != tc.wantRefused {
				t.Errorf("Refused() = %v, want %v", r.Refused(), tc.wantRefused)
			}
			if r.Approvals != 1 || r.Stages[1].Targets[0].ID() != b.ID() {
				t.Errorf("approvals %d, stage rest's first target %+v", r.Approvals, r.Stages[1].Targets[0].Target)
			}
		})
	}
}
