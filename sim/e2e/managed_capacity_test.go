package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

// TestManagedScaleUpOverQuota: EKS's scale-up of a managed node group
// (twice its 3 zones: 6 t3.medium, 12 vCPUs) exceeds the account's
// On-Demand Standard vCPU quota (10, of which the group's 2 nodes use 4):
// plan --detailed-exitcode and run refuse it (exit 5) naming the quota,
// what is needed and what is free, before EKS is asked for anything.
func TestManagedScaleUpOverQuota(t *testing.T) {
	t.Parallel()
	const name = "mng-quota"
	m := setupManagedGroup(t, name, 2, time.Minute)
	m.srv.SetQuota("ec2", "L-1216C47A", 10)
	args := []string{"--kubernetes-version", "1.31"}
	pl := m.run(t, append([]string{"plan", name, "--detailed-exitcode"}, args...)...)
	for _, want := range []string{"insufficient-quota", "(L-1216C47A)", "need 12 vCPUs", "which has 6 free of its 10"} {
		if pl.code != nodeupgrade.ExitBlockers || !strings.Contains(pl.stdout+pl.stderr, want) {
			t.Fatalf("plan must exit %d naming %q: %s", nodeupgrade.ExitBlockers, want, pl)
		}
	}
	if r := m.run(t, append([]string{"run", name, "--yes"}, args...)...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "insufficient-quota") {
		t.Fatalf("run must refuse the scale-up the quota cannot hold with exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	if calls := m.changingCalls(); len(calls) != 0 {
		t.Errorf("EKS was asked to change something: %v", calls)
	}
}
