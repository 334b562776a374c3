package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestAWSSurgeOverQuota: a surge the account's On-Demand Standard vCPU
// quota cannot hold is refused by plan --detailed-exitcode and by run,
// naming the quota, what is needed and free and the surge that fits,
// with nothing changed; the run with that surge finishes.
func TestAWSSurgeOverQuota(t *testing.T) {
	t.Parallel()
	const name = "aws-quota"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	// 3 m5.large run (2 vCPUs each): 6 of 8 used, room for 1 more.
	g.srv.SetQuota("ec2", "L-1216C47A", 8)
	over := []string{"--strategy", "surge", "--max-surge", "2", "--max-unavailable", "0", "--ami", "ami-new"}
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	if err := os.WriteFile(prices, []byte("readAt: 2026-11-01\nprices:\n  m5.large:\n    us-east-1: 0.096\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pl := g.run(t, append([]string{"plan", name, "--detailed-exitcode", "--price-file", prices}, over...)...)
	for _, want := range []string{"insufficient-quota", "L-1216C47A", "need 4 vCPUs", "which has 2 free of its 8", "--max-surge 1 fits",
		"m5.large in us-east-1 at 0.096 USD an hour, prices read 2026-11-01", "surge       2 nodes for ~"} {
		if pl.code != nodeupgrade.ExitBlockers || !strings.Contains(pl.stdout+pl.stderr, want) {
			t.Fatalf("plan must exit %d naming %q: %s", nodeupgrade.ExitBlockers, want, pl)
		}
	}
	js := g.run(t, append([]string{"plan", name, "-o", "json", "--price-file", prices}, over...)...)
	var saved struct{ Cost plan.CostPlan }
	if err := json.Unmarshal([]byte(js.stdout), &saved); err != nil || len(saved.Cost.Strategies) != 3 || saved.Cost.Strategies[1].Cost == nil {
		t.Fatalf("plan -o json must carry each strategy's priced cost (%v): %s", err, js)
	}
	if r := g.run(t, append([]string{"run", name, "--yes", "--price-file", prices}, over...)...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "insufficient-quota") {
		t.Fatalf("run must refuse the surge over quota with exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	g.assertAsBefore(t)
	fits := []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--ami", "ami-new"}
	if r := g.run(t, append([]string{"run", name, "--yes"}, fits...)...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run with the surge that fits: %s", r)
	}
	g.assertFinished(t)
}
