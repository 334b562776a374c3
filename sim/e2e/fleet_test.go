package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// fleetCluster is one cluster of a fleet test: its context in the
// fleet's kubeconfig and its client.
type fleetCluster struct {
	context    string
	kubeconfig string
	client     kubernetes.Interface
}

var simclusterBin struct {
	once sync.Once
	path string
	err  error
}

// simclusterBinary builds cmd/simcluster once: a cluster beside the
// shared one runs in a process of its own (one per process).
func simclusterBinary(t *testing.T) string {
	t.Helper()
	simclusterBin.once.Do(func() {
		simclusterBin.path = filepath.Join(filepath.Dir(binary), "simcluster")
		build := exec.Command("go", "build", "-o", simclusterBin.path, "./cmd/simcluster")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			simclusterBin.err = fmt.Errorf("building simcluster: %v\n%s", err, out)
		}
	})
	if simclusterBin.err != nil {
		t.Fatal(simclusterBin.err)
	}
	return simclusterBin.path
}

// startSimcluster starts "simcluster up" with flags (a demo) and returns
// the cluster, named context, and the words of its ready line
// (kubeconfig=, gke-endpoint=, ...). The test's cleanup stops it.
func startSimcluster(t *testing.T, context string, flags ...string) (fleetCluster, map[string]string) {
	t.Helper()
	cmd := exec.Command(simclusterBinary(t), append([]string{"up", "--dir", filepath.Join(t.TempDir(), context)}, flags...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	ready := map[string]string{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if words, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
			for _, w := range strings.Fields(words) {
				k, v, _ := strings.Cut(w, "=")
				ready[k] = v
			}
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if ready["kubeconfig"] == "" {
		t.Fatalf("simcluster %s never got ready:\n%s", context, logs.String())
	}
	rc, err := clientcmd.BuildConfigFromFlags("", ready["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return fleetCluster{context: context, kubeconfig: ready["kubeconfig"], client: c}, ready
}

// fleetKubeconfig writes one kubeconfig with a context per cluster, named
// as the cluster is; each cluster's own kubeconfig has one context.
func fleetKubeconfig(t *testing.T, clusters []fleetCluster) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for _, c := range clusters {
		cfg, err := clientcmd.LoadFromFile(c.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		ctx := cfg.Contexts[cfg.CurrentContext]
		merged.Clusters[c.context] = cfg.Clusters[ctx.Cluster]
		merged.AuthInfos[c.context] = cfg.AuthInfos[ctx.AuthInfo]
		merged.Contexts[c.context] = &clientcmdapi.Context{Cluster: c.context, AuthInfo: c.context}
	}
	merged.CurrentContext = clusters[0].context
	path := filepath.Join(t.TempDir(), "fleet-kubeconfig")
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

const fleetFile = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: e2e-fleet}
stages:
- name: canary
  targets:
  - {context: canary, nodeGroup: demo, run: {provider: none, target-label: "eks.amazonaws.com/nodegroup-image=ami-new", max-unavailable: 3, post-drain-wait: 0s}}
  afterStage: {gates: ["exec:test -e healthy"]}
- name: aws
  targets:
  - {context: sim, nodeGroup: fleet-aws, run: {ami: ami-new, max-unavailable: 1, post-drain-wait: 0s}}
  afterStage: {approval: true}
- name: gke
  targets:
  - {context: gke, nodeGroup: default-pool, run: {node-version: "1.31", strategy: surge, max-surge: 1}}
`

// TestFleetOverThreeClusters: a fleet of three stages over three
// clusters of three providers: the none demo (the canary), an Auto
// Scaling group in the shared cluster, and the GKE demo, each cluster
// its own process. The canary's gate fails: the fleet stops with exit 8
// naming it; once healthy, "fleet resume" from another directory goes
// on; the approval holds the last stage, which "fleet status" shows not
// started, until "fleet approve". Every target's record is stamped with
// the fleet, and no PDB is violated in any cluster.
func TestFleetOverThreeClusters(t *testing.T) {
	t.Parallel()
	var canary, gke fleetCluster
	var gkeReady map[string]string
	var wg sync.WaitGroup
	wg.Go(func() { canary, _ = startSimcluster(t, "canary", "--none-demo") })
	wg.Go(func() { gke, gkeReady = startSimcluster(t, "gke", "--gke-demo") })
	g := setupAWSGroup(t, "fleet-aws", 2, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	wg.Wait()
	if canary.client == nil || gke.client == nil {
		t.FailNow() // startSimcluster said why
	}
	kc := fleetKubeconfig(t, []fleetCluster{canary, {context: "sim", kubeconfig: sim.Kubeconfig, client: client}, gke})
	ctx := testContext(t, 10*time.Minute)
	var watchers []*scenario.PDBWatcher
	for _, w := range []struct {
		c  kubernetes.Interface
		ns string
	}{{canary.client, "demo"}, {client, "fleet-aws"}, {gke.client, "demo"}} {
		pw, err := scenario.WatchPDBs(ctx, w.c, w.ns)
		if err != nil {
			t.Fatal(err)
		}
		watchers = append(watchers, pw)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(file, []byte(fleetFile), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(g.env(), "NODEUPGRADE_GKE_ENDPOINT="+gkeReady["gke-endpoint"], "NODEUPGRADE_GKE_NO_AUTH=true",
		"NODEUPGRADE_GCE_ENDPOINT="+gkeReady["compute-endpoint"], "NODEUPGRADE_GCE_NO_AUTH=true")
	fleetCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command(binary, append(append([]string{"fleet"}, args...), "--kubeconfig", kc)...)
		cmd.Env, cmd.Dir = env, t.TempDir()
		return cmd
	}

	r := runCmd(t, fleetCmd("plan", "-f", file))
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, `Fleet "e2e-fleet"`) || !strings.Contains(r.stdout, "6/9") {
		t.Fatalf("fleet plan: %s", r)
	}

	// the canary's gate fails: the fleet stops before stage 2, exit 8
	r = runCmd(t, fleetCmd("run", "-f", file, "--yes"))
	if r.code != nodeupgrade.ExitPaused || !strings.Contains(r.stderr, "exec:test -e healthy") || !strings.Contains(r.stderr, "exit status 1") {
		t.Fatalf("fleet run with a failing gate: want exit %d naming the gate and its value: %s", nodeupgrade.ExitPaused, r)
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"canary/demo": "finished", "sim/fleet-aws": "not started", "gke/default-pool": "not started"})

	// healthy again: resume, from another directory, goes on to the approval
	if err := os.WriteFile(filepath.Join(dir, "healthy"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run := startBackground(t, fleetCmd("resume", "-f", file))
	if !run.waitFor("waiting for approval") {
		t.Fatalf("the fleet never waited for the approval of stage \"aws\":\n%s", run.output())
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"canary/demo": "finished", "sim/fleet-aws": "finished", "gke/default-pool": "not started"})
	if r := runCmd(t, fleetCmd("approve", "e2e-fleet", "aws")); r.code != nodeupgrade.ExitOK {
		t.Fatalf("fleet approve: %s", r)
	}
	if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitOK || !strings.Contains(out, `fleet "e2e-fleet" finished`) {
		t.Fatalf("the resumed fleet: exit %d, want %d:\n%s", code, nodeupgrade.ExitOK, out)
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"canary/demo": "finished", "sim/fleet-aws": "finished", "gke/default-pool": "finished"})
	g.assertFinished(t)
	st := runCmd(t, g.cmd(sim.Kubeconfig, "status", "fleet-aws", "-o", "json"))
	var rs nodeupgrade.RunStatus
	if err := json.Unmarshal([]byte(st.stdout), &rs); err != nil || rs.Record == nil || !strings.HasPrefix(rs.Fleet, "e2e-fleet@") {
		t.Errorf("the target's record is not stamped with the fleet (%v): %s", err, st)
	}
	for _, w := range watchers {
		assertNoViolations(t, w.Stop())
	}
}

// assertFleetRows checks "fleet status -o json": each target's status
// word, read from its own cluster.
func assertFleetRows(t *testing.T, fleetCmd func(...string) *exec.Cmd, file string, want map[string]string) {
	t.Helper()
	r := runCmd(t, fleetCmd("status", "-f", file, "-o", "json"))
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("fleet status: %s", r)
	}
	var st nodeupgrade.FleetStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("fleet status -o json: %v\n%s", err, r.stdout)
	}
	for _, row := range st.Targets {
		if w, ok := want[row.Cluster+"/"+row.Group]; ok && row.Status != w {
			t.Errorf("fleet status: target %s/%s is %q, want %q", row.Cluster, row.Group, row.Status, w)
		}
	}
	if len(st.Targets) != len(want) {
		t.Errorf("fleet status: %d targets, want %d:\n%s", len(st.Targets), len(want), r.stdout)
	}
}

const failingFleetFile = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: e2e-failing}
defaults:
  run: {provider: none, target-label: "eks.amazonaws.com/nodegroup-image=ami-new", max-unavailable: 1}
stages:
- name: all
  maxConcurrency: 2
  targets:
  - {context: sim, nodeGroup: fleet-slow, run: {post-drain-wait: 3s}}
  - {context: sim, nodeGroup: fleet-bad, run: {post-drain-wait: 0s, pre-drain-hook: "exit 3"}}
  - {context: sim, nodeGroup: fleet-later, run: {post-drain-wait: 0s}}
`

// TestFleetStopsAtAFailedTarget: two targets run at once; one fails (its
// pre-drain hook, exit 10): the third never starts, the one in flight
// runs to its end, and the fleet exits as the failed one did. "fleet
// abort" then puts the failed target back in service and forgets the
// fleet, whose targets are untouched but the finished one.
func TestFleetStopsAtAFailedTarget(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"fleet-slow", "fleet-bad", "fleet-later"} {
		setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	}
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(failingFleetFile), 0o600); err != nil {
		t.Fatal(err)
	}
	fleetCmd := func(args ...string) *exec.Cmd { return pluginCmd(append([]string{"fleet"}, args...)...) }

	r := runCmd(t, fleetCmd("run", "-f", file, "--yes"))
	if r.code != nodeupgrade.ExitHookFailed || !strings.Contains(r.stderr, `"sim/fleet-bad"`) {
		t.Fatalf("fleet run: want exit %d naming the failed target: %s", nodeupgrade.ExitHookFailed, r)
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"sim/fleet-slow": "finished", "sim/fleet-bad": "failed", "sim/fleet-later": "not started"})
	ctx := testContext(t, 2*time.Minute)
	assertUntouched(t, ctx, groupKey, "fleet-later")

	r = runCmd(t, fleetCmd("abort", "-f", file, "--yes"))
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "record is deleted") {
		t.Fatalf("fleet abort: %s", r)
	}
	assertUntouched(t, ctx, groupKey, "fleet-bad")
	assertFleetRows(t, fleetCmd, file, map[string]string{"sim/fleet-slow": "finished", "sim/fleet-bad": "aborted", "sim/fleet-later": "not started"})
}

const killedFleetFile = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: e2e-killed}
stages:
- name: only
  targets:
  - {context: sim, nodeGroup: fleet-killed, run: {provider: none, target-label: "eks.amazonaws.com/nodegroup-image=ami-new", max-unavailable: 1, post-drain-wait: 8s}}
`

// TestFleetCoordinatorKilledMidTarget: the coordinator is SIGKILLed while
// its target drains; the target's run goes on without it, and the fleet
// run again from another directory follows that run to its end rather
// than start it twice (which its lock would refuse), then finishes. The
// fleet aborted and started again reports its target skipped.
func TestFleetCoordinatorKilledMidTarget(t *testing.T) {
	t.Parallel()
	const name = "fleet-killed"
	setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(killedFleetFile), 0o600); err != nil {
		t.Fatal(err)
	}
	fleetCmd := func(args ...string) *exec.Cmd {
		cmd := pluginCmd(append([]string{"fleet"}, args...)...)
		cmd.Dir = t.TempDir()
		return cmd
	}
	first := startBackground(t, fleetCmd("run", "-f", file, "--yes"))
	if !first.waitFor("batch 1/2") {
		t.Fatalf("the target never reached its first batch:\n%s", first.output())
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.wait(t, time.Minute)
	r := runCmd(t, fleetCmd("run", "-f", file, "--yes"))
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, `fleet "e2e-killed" finished`) {
		t.Fatalf("the fleet run again after its coordinator was killed: %s", r)
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"sim/" + name: "finished"})
	assertUpgraded(t, name, 1)
	assertNoViolations(t, watcher.Stop())

	// Started again once forgotten, the fleet finds its target at its
	// target: skipped, not done, in the summary and in fleet status.
	if r := runCmd(t, fleetCmd("abort", "-f", file, "--yes")); r.code != nodeupgrade.ExitOK {
		t.Fatalf("fleet abort of the finished fleet: %s", r)
	}
	r = runCmd(t, fleetCmd("run", "-f", file, "--yes"))
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, `fleet "e2e-killed" finished: 0 done, 1 skipped`) {
		t.Fatalf("the fleet started again over its upgraded target: %s", r)
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"sim/" + name: "skipped"})
}
