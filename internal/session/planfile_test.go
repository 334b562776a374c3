package session

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestSavedPlanKeepsItsWindows: run --plan-file (and the in-cluster Job,
// which runs one) keeps the maintenance windows the plan was reviewed
// with; windows given again on the command line win.
func TestSavedPlanKeepsItsWindows(t *testing.T) {
	notAfter := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	saved := &plan.Plan{NodeGroup: "demo", Strategy: string(plan.StrategyEKS), Window: &plan.WindowPlan{
		Windows: []string{"Sat-Sun 22:00-06:00 Europe/Berlin"}, NotAfter: &notAfter,
	}}
	for _, tc := range []struct {
		name         string
		given        []string
		wantWindows  []string
		wantNotAfter string
	}{
		{"none given: the plan's", nil, []string{"Sat-Sun 22:00-06:00 Europe/Berlin"}, "2026-12-01T06:00:00Z"},
		{"given again: those", []string{"daily 01:00-05:00"}, []string{"daily 01:00-05:00"}, "2026-12-01T06:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Request
			r.Windows = tc.given
			r.fromPlan(saved)
			if !slices.Equal(r.Windows, tc.wantWindows) || r.NotAfter != tc.wantNotAfter || r.NotBefore != "" {
				t.Errorf("windows %q, not before %q, not after %q; want %q, \"\", %q", r.Windows, r.NotBefore, r.NotAfter, tc.wantWindows, tc.wantNotAfter)
			}
		})
	}
}

// TestSavedPlanOfARollback: a saved rollback plan runs while its scale-down
// would remove the nodes it names (some gone already, removed by a run of
// it), and is stale once another node would go unreplaced.
func TestSavedPlanOfARollback(t *testing.T) {
	t.Parallel()
	planOf := func(batched, deferred []string) *plan.Plan {
		p := &plan.Plan{}
		for _, n := range batched {
			p.Batches = append(p.Batches, plan.Batch{Nodes: []plan.PlannedNode{{Name: n}}})
		}
		for _, n := range deferred {
			p.Deferred = append(p.Deferred, plan.PlannedNode{Name: n})
		}
		p.Nodes.Outdated, p.Nodes.Deferred = len(batched), len(deferred)
		return p
	}
	saved := planOf([]string{"a"}, []string{"x", "y"})
	for _, tc := range []struct {
		name      string
		fresh     *plan.Plan
		wantError string
	}{
		{name: "the same split", fresh: planOf([]string{"a"}, []string{"x", "y"})},
		{name: "a deferred node removed already", fresh: planOf(nil, []string{"y"})},
		{name: "a deferred node batched now", fresh: planOf([]string{"a", "x"}, []string{"y"}), wantError: `node "x" is outdated but not in the plan`},
		{name: "another node deferred", fresh: planOf([]string{"a"}, []string{"x", "z"}), wantError: `node "z" is outdated but not in the plan's scale-down`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := compareSaved(saved, tc.fresh, "p.json", map[string]bool{"a": tc.fresh.Nodes.Outdated == 0})
			if tc.wantError == "" && err != nil || tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)) {
				t.Fatalf("error %v, want %q", err, tc.wantError)
			}
			if err == nil {
				p := withoutDone(saved, tc.fresh, nil)
				if got := p.DeferredNames(); !slices.Equal(got, tc.fresh.DeferredNames()) || p.Nodes.Deferred != len(got) {
					t.Errorf("the plan run defers %v (counted %d), want the fresh plan's %v", got, p.Nodes.Deferred, tc.fresh.DeferredNames())
				}
			}
		})
	}
}
