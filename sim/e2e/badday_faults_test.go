package e2e

import (
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/faultproxy"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestBadDayFaultsOnEvictionsAndNodeLists: the evictions and the lists of
// a node's pods, the two requests whose lost connection ended runs, meet
// resets and closed connections far more often than the rest (a closed
// connection cuts every request on it, "http2: client connection force
// closed" among them), and the run still finishes with no PDB violated.
func TestBadDayFaultsOnEvictionsAndNodeLists(t *testing.T) {
	t.Parallel()
	const name = "badday-faults"
	setupGroup(t, name, 9, 3, faultApps()...)
	p, err := faultproxy.Start(faultproxy.Options{
		Upstream: sim.RestConfig,
		Seed:     41,
		Routes: []faultproxy.Route{
			{Name: "evictions", Match: faultproxy.Evictions, Rates: map[faultproxy.Kind]float64{
				faultproxy.ResetBefore: 0.15, faultproxy.ResetAfter: 0.15, faultproxy.ConnClosed: 0.15},
				First: []faultproxy.Kind{faultproxy.ResetBefore, faultproxy.ResetAfter, faultproxy.ConnClosed}},
			{Name: "node pods", Match: faultproxy.NodePodLists, Rates: map[faultproxy.Kind]float64{
				faultproxy.ResetBefore: 0.25, faultproxy.ConnClosed: 0.25},
				First: []faultproxy.Kind{faultproxy.ResetBefore, faultproxy.ConnClosed}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := p.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	watcher, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	r := pluginAs(t, kubeconfig, "run", name, "--target-label", target, "--max-unavailable", "3",
		"--post-drain-wait", "0s", "--seed", "1", "--yes")
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	assertNoViolations(t, violations)
	assertUpgraded(t, name, 3)
	for route, kinds := range map[string][]faultproxy.Kind{
		"evictions": {faultproxy.ResetBefore, faultproxy.ResetAfter, faultproxy.ConnClosed},
		"node pods": {faultproxy.ResetBefore, faultproxy.ConnClosed},
	} {
		n, faults := p.RouteCounts(route)
		t.Logf("%s: %d requests, faults %v", route, n, faults)
		for _, k := range kinds {
			if faults[k] == 0 {
				t.Errorf("%s: no %s fault made: the run was not tested against it", route, k)
			}
		}
	}
}
