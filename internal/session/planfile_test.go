package session

import (
	"slices"
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
