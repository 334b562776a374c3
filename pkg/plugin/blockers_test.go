package plugin

import (
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// TestBlockersFoundOffersWhatLifts: check's closing advice offers
// --ignore-check for the checks it lifts, never for a node protected by
// Karpenter's do-not-disrupt, which only the annotation's removal lifts.
func TestBlockersFoundOffersWhatLifts(t *testing.T) {
	for _, tc := range []struct {
		checks []string
		n      int
		want   string
	}{
		{[]string{check.CheckPDBZeroDisruptions}, 1, "1 blocker found; fix it before running, or use run --ignore-check pdb-zero-disruptions"},
		{[]string{check.CheckNodeDoNotDisrupt}, 2, "2 blockers found; fix them before running"},
		{[]string{check.CheckNodeDoNotDisrupt, check.CheckDoNotDisrupt}, 2, "2 blockers found; fix them before running, or use run --ignore-check do-not-disrupt"},
		{[]string{check.CheckMachineLeftRunning}, 1, "1 blocker found; fix it before running, or use the flags the findings name"},
	} {
		t.Run(strings.Join(tc.checks, ","), func(t *testing.T) {
			if got := (&blockersFound{n: tc.n, checks: tc.checks}).Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
