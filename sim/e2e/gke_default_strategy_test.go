package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestGKEPlanWithoutStrategy: on a pool set to SURGE, a plan without
// --strategy takes the pool's own strategy and settings, as GKE's own
// upgrade would, and says so; the plan shows what GKE does (its
// settings, the nodes it replaces in no promised order, what the run does
// meanwhile), not batches GKE does not follow; -o json, which run
// --plan-file reads, holds the strategy.
func TestGKEPlanWithoutStrategy(t *testing.T) {
	t.Parallel()
	const name = "gke-own"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	p := g.run(t, "plan", name, "--node-version", "1.31")
	if p.code != nodeupgrade.ExitOK {
		t.Fatalf("plan: %s", p)
	}
	for _, want := range []string{
		"Strategy:        surge (the pool's own upgrade strategy), run by the GKE node pool's service",
		"update settings: strategy SURGE, maxUnavailable 0, maxSurge 1",
		"replaces:        the 3 outdated nodes below, as many at once as its update settings allow, in an order of its own (none promised)",
		"meanwhile:       the run follows the update to its end",
		"Outdated nodes, by name (the GKE node pool picks the order):",
	} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("plan must say %q:\n%s", want, p.stdout)
		}
	}
	for _, dontWant := range []string{"Batches:", "seed", "Max unavailable:", "per batch", "BATCH"} {
		if strings.Contains(p.stdout, dontWant) {
			t.Errorf("plan must not say %q:\n%s", dontWant, p.stdout)
		}
	}
	j := g.run(t, "plan", name, "--node-version", "1.31", "-o", "json")
	var saved plan.Plan
	if err := json.Unmarshal([]byte(j.stdout), &saved); j.code != nodeupgrade.ExitOK || err != nil || saved.Strategy != "surge" || saved.StrategyFrom == "" {
		t.Errorf("plan -o json: strategy %q from %q (%v): %s", saved.Strategy, saved.StrategyFrom, err, j)
	}
	if calls := g.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("plan changed the pool: %v", calls)
	}
}
