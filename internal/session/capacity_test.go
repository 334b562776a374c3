package session

import (
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestRefuseCapacityBlockers: a capacity blocker yields to its own
// --ignore-check only, not to --force: it is about the cloud, not pods.
func TestRefuseCapacityBlockers(t *testing.T) {
	for _, name := range []string{check.CheckInsufficientQuota, check.CheckInsufficientIPs} {
		p := &plan.Plan{Findings: []check.Finding{{Check: name, Severity: check.Blocker, Kind: "Quota", Name: "q"}}}
		for _, tc := range []struct {
			name    string
			r       Request
			refused bool
		}{
			{name: name + " refused", r: Request{}, refused: true},
			{name: name + " not lifted by --force", r: Request{Request: plan.Request{Force: true}}, refused: true},
			{name: name + " lifted by its --ignore-check", r: Request{Request: plan.Request{IgnoreChecks: []string{name}}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := tc.r.RefuseBlockers(p, "refusing to run"); (err != nil) != tc.refused {
					t.Errorf("RefuseBlockers() = %v, want refused %v", err, tc.refused)
				}
			})
		}
	}
}
