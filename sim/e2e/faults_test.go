package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/faultproxy"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// faultRate is the chance of each kind of fault for one request in the
// tests that assert: about a third of the plugin's requests fail once.
const faultRate = 0.05

// faultyKubeconfig starts a proxy that fails requests at rates, and
// returns a kubeconfig that reaches the cluster through it.
func faultyKubeconfig(t *testing.T, rates map[faultproxy.Kind]float64, seed uint64) (string, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.Start(faultproxy.Options{Upstream: sim.RestConfig, Rates: rates, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := p.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path, p
}

// assertEveryFault fails unless the proxy made every kind of fault (the
// watch cuts where the run watched long enough), and logs what it made.
func assertEveryFault(t *testing.T, p *faultproxy.Proxy) {
	t.Helper()
	requests, faults := p.Counts()
	t.Logf("%d requests through the proxy, faults %v", requests, faults)
	for _, k := range faultproxy.Kinds {
		if faults[k] == 0 && k != faultproxy.WatchCut {
			t.Errorf("no %s fault made: the run was not tested against it", k)
		}
	}
}

// faultApps are the workloads of the fault tests: each with a PDB.
func faultApps() []scenario.App {
	return []scenario.App{
		{Name: "web", Replicas: 18, MinAvailable: pct("75%")},
		{Name: "api", Replicas: 9, MaxUnavailable: num(2)},
	}
}

// runThroughFaults runs the plugin command cmd makes for a kubeconfig
// through a proxy that fails faultRate of the requests with each kind of
// fault, and fails unless it finished with no PDB of group violated and
// every kind of fault met.
func runThroughFaults(t *testing.T, group string, seed uint64, cmd func(kubeconfig string) *exec.Cmd) result {
	t.Helper()
	kubeconfig, proxy := faultyKubeconfig(t, faultproxy.Every(faultRate), seed)
	watcher, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, group)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := runCmd(t, cmd(kubeconfig))
	t.Logf("%s through faults: %s", group, time.Since(start).Round(time.Millisecond))
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	assertNoViolations(t, violations)
	assertEveryFault(t, proxy)
	if !strings.Contains(r.stdout, "retrying in") {
		t.Errorf("no retry was told:\n%s", r.stdout)
	}
	return r
}

// TestFaultsProviderNone: through a proxy that fails 5% of the requests
// with each kind of fault, a run finishes, with no PDB violated and no
// node left marked.
func TestFaultsProviderNone(t *testing.T) {
	t.Parallel()
	const name = "faults-none"
	setupGroup(t, name, 9, 3, faultApps()...)
	runThroughFaults(t, name, 1, func(kubeconfig string) *exec.Cmd {
		cmd := exec.Command(binary, "run", name, "--target-label", target, "--max-unavailable", "3", "--post-drain-wait", "0s", "--seed", "1", "--yes", "--kubeconfig", kubeconfig)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		return cmd
	})
	assertUpgraded(t, name, 3)
}

// TestFaultsAWS: the same faults on the API server's side of an AWS run
// (eks strategy, the default) against the local AWS endpoint.
func TestFaultsAWS(t *testing.T) {
	t.Parallel()
	const name = "faults-aws"
	g := setupAWSGroup(t, name, 6, faultApps()...)
	runThroughFaults(t, name, 2, func(kubeconfig string) *exec.Cmd {
		return g.cmd(kubeconfig, "run", name, "--ami", "ami-new", "--max-unavailable", "2", "--seed", "3", "--post-drain-wait", "0s", "--yes")
	})
	g.assertFinished(t)
}

// TestFaultsAWSBlueGreen: the same faults through a blue/green run that
// creates green, drains blue in batches and deletes it.
func TestFaultsAWSBlueGreen(t *testing.T) {
	t.Parallel()
	const name = "faults-bg"
	g := setupAWSGroup(t, name, 6, faultApps()...)
	runThroughFaults(t, name, 3, func(kubeconfig string) *exec.Cmd {
		return g.cmd(kubeconfig, "run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "2",
			"--batch-soak", "1s", "--node-pool-soak", "1s", "--post-drain-wait", "0s", "--yes")
	})
	g.assertGreenServes(t, name+"-v2")
}

// TestFaultFigures measures, with NODEUPGRADE_FAULT_FIGURES=N set, N runs
// of provider none (9 outdated and 3 current nodes, --max-unavailable 3)
// for each kind of fault at 5% and for a 10% mix of all, against runs
// without faults: runs finished of runs started, the median wall time,
// PDB violations and nodes left marked. It asserts nothing of the times.
func TestFaultFigures(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("NODEUPGRADE_FAULT_FIGURES"))
	if runs <= 0 {
		t.Skip("set NODEUPGRADE_FAULT_FIGURES=N to measure N runs of each")
	}
	rounds := []struct {
		name  string
		rates map[faultproxy.Kind]float64
	}{{"none", nil}}
	for _, k := range faultproxy.Kinds {
		rounds = append(rounds, struct {
			name  string
			rates map[faultproxy.Kind]float64
		}{"5% " + string(k), map[faultproxy.Kind]float64{k: 0.05}})
	}
	rounds = append(rounds, struct {
		name  string
		rates map[faultproxy.Kind]float64
	}{"10% mix", faultproxy.Mix(0.10)})
	var table []string
	var baseline time.Duration
	for i, round := range rounds {
		var times []time.Duration
		finished, violations, marked, faults := 0, 0, 0, 0
		for n := range runs {
			name := fmt.Sprintf("figures-%d-%d", i, n)
			fin, took, v, m, f := measureFaultRun(t, name, round.rates, uint64(100*i+n+1))
			times = append(times, took)
			violations, marked, faults = violations+v, marked+m, faults+f
			if fin {
				finished++
			}
		}
		median := medianOf(times)
		if i == 0 {
			baseline = median
		}
		table = append(table, fmt.Sprintf("| %s | %d of %d | %s (%.2fx) | %d | %d | %d |", round.name, finished, runs, median.Round(100*time.Millisecond), float64(median)/float64(baseline), violations, marked, faults))
		t.Log(table[len(table)-1]) // as it comes: the whole takes minutes
	}
	t.Logf("\n| faults on the plugin's requests | runs finished | median wall time (vs none) | PDB violations | nodes left marked | faults made |\n|---|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// measureFaultRun runs one upgrade of a new group through a proxy failing
// at rates and says whether it finished, in what time, with how many PDB
// violations, how many nodes left tainted or cordoned, and how many faults.
func measureFaultRun(t *testing.T, name string, rates map[faultproxy.Kind]float64, seed uint64) (bool, time.Duration, int, int, int) {
	t.Helper()
	setupGroup(t, name, 9, 3, faultApps()...)
	kubeconfig, proxy := faultyKubeconfig(t, rates, seed)
	ctx := testContext(t, 10*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := pluginAs(t, kubeconfig, "run", name, "--target-label", target, "--max-unavailable", "3", "--post-drain-wait", "0s", "--seed", "1", "--yes")
	took := time.Since(start)
	violations := watcher.Stop()
	marked := 0
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == groupKey }) {
			marked++
		}
	}
	_, faults := proxy.Counts()
	total := 0
	for _, f := range faults {
		total += f
	}
	if r.code != nodeupgrade.ExitOK {
		t.Logf("%s: %s", name, r)
	}
	return r.code == nodeupgrade.ExitOK, took, len(violations), marked, total
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
