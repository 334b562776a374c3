package e2e

import (
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestFaultsGKE: the GKE endpoint refuses faultRate of the plugin's
// calls with the faults Google's APIs answer under load (403
// rateLimitExceeded and userRateLimitExceeded, 429, 500, 502, 503, 504:
// sim/gcpfault); a surge and a blue/green upgrade GKE runs finish with
// every node on the target, the pool's settings restored, no PDB violated
// and exactly one update started.
func TestFaultsGKE(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		strategy string
		args     []string
	}{
		{"surge", []string{"--max-surge", "2", "--max-unavailable", "0"}},
		{"blue-green", []string{"--batch-node-count", "2", "--batch-soak", "1s", "--node-pool-soak", "0s"}},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			name := "faults-gke-" + tc.strategy
			g := setupGKEPool(t, name, gkePoolSpec{faults: faultRate, seed: uint64(11 + 2*i)}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
			watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := g.run(t, append([]string{"run", name, "--yes", "--strategy", tc.strategy, "--node-version", gkeNew}, tc.args...)...)
			faults := g.srv.Faults()
			t.Logf("%s through %d GKE faults: %s", tc.strategy, faults, time.Since(start).Round(time.Millisecond))
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run: %s", r)
			}
			if faults == 0 {
				t.Error("no call was refused: the run was not tested against faults")
			}
			if n := g.srv.UpgradeCalls(); n != 1 {
				t.Errorf("%d nodePools.update calls with an upgrade, want exactly 1", n)
			}
			g.assertUpgraded(t)
			if v := watch.Stop(); len(v) != 0 {
				t.Errorf("PDB violations: %v", v)
			}
		})
	}
}
