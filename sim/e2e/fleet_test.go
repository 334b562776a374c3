package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// fleetCluster is one cluster of a fleet test: its context in the
// fleet's kubeconfig and its client.
type fleetCluster struct {
	context    string
	kubeconfig string
	client     kubernetes.Interface
}

// startEdgeClusters starts n simulated clusters beside the shared one,
// at once: a fleet spans clusters, and each keeps its own records.
func startEdgeClusters(t *testing.T, names ...string) []fleetCluster {
	t.Helper()
	out := make([]fleetCluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(t.TempDir(), name), PodReadyDelay: time.Second})
			if err != nil {
				errs[i] = fmt.Errorf("starting cluster %q: %w", name, err)
				return
			}
			t.Cleanup(func() { _ = c.Stop() })
			out[i] = fleetCluster{context: name, kubeconfig: c.Kubeconfig, client: c.Client}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
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

// setupNoneGroupIn makes a --provider none group in c: 2 outdated nodes
// and 1 current one, with a PDB'd app pinned to it.
func setupNoneGroupIn(t *testing.T, c fleetCluster, name string) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	if _, _, err := scenario.CreateNodeGroup(ctx, c.client, scenario.NodeGroup{
		LabelKey: groupKey, Name: name, Zones: []string{"sim-a", "sim-b"}, Outdated: 2, Current: 1,
		OldLabels: map[string]string{imageKey: "ami-old"}, TargetLabels: map[string]string{imageKey: "ami-new"},
	}); err != nil {
		t.Fatal(err)
	}
	app := scenario.App{Name: "web", Namespace: name, Replicas: 2, MaxUnavailable: num(1), NodeSelector: map[string]string{groupKey: name}}
	if err := scenario.CreateApp(ctx, c.client, app); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitAppsReady(ctx, c.client, name); err != nil {
		t.Fatal(err)
	}
}

const fleetFile = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: e2e-fleet}
defaults:
  run: {post-drain-wait: 0s, max-unavailable: 1}
stages:
- name: canary
  targets:
  - {context: canary, nodeGroup: fleet-canary, run: {provider: none, target-label: "eks.amazonaws.com/nodegroup-image=ami-new"}}
  afterStage: {gates: ["exec:test -e healthy"]}
- name: aws
  targets:
  - {context: sim, nodeGroup: fleet-aws, run: {ami: ami-new}}
  afterStage: {approval: true}
- name: edge
  targets:
  - {context: edge, nodeGroup: fleet-edge, run: {provider: none, target-label: "eks.amazonaws.com/nodegroup-image=ami-new"}}
`

// TestFleetOverThreeClusters: a fleet of three stages over three
// clusters (a --provider none canary, an Auto Scaling group, a --provider
// none edge cluster). The canary's gate fails: the fleet stops with exit
// 8 naming it; once healthy, "fleet resume" from another directory goes
// on; the approval holds the last stage, whose targets "fleet status"
// shows not started, until "fleet approve". No PDB is violated anywhere.
func TestFleetOverThreeClusters(t *testing.T) {
	t.Parallel()
	edges := startEdgeClusters(t, "canary", "edge")
	shared := fleetCluster{context: "sim", kubeconfig: sim.Kubeconfig, client: client}
	clusters := []fleetCluster{edges[0], shared, edges[1]}
	kc := fleetKubeconfig(t, clusters)
	setupNoneGroupIn(t, edges[0], "fleet-canary")
	setupNoneGroupIn(t, edges[1], "fleet-edge")
	g := setupAWSGroup(t, "fleet-aws", 2, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	ctx := testContext(t, 10*time.Minute)
	var watchers []*scenario.PDBWatcher
	for ns, c := range map[string]kubernetes.Interface{"fleet-canary": edges[0].client, "fleet-aws": client, "fleet-edge": edges[1].client} {
		w, err := scenario.WatchPDBs(ctx, c, ns)
		if err != nil {
			t.Fatal(err)
		}
		watchers = append(watchers, w)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(file, []byte(fleetFile), 0o600); err != nil {
		t.Fatal(err)
	}
	fleetCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command(binary, append(append([]string{"fleet"}, args...), "--kubeconfig", kc)...)
		cmd.Env, cmd.Dir = g.env(), t.TempDir()
		return cmd
	}

	r := runCmd(t, fleetCmd("plan", "-f", file))
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, `Fleet "e2e-fleet"`) || !strings.Contains(r.stdout, "2/3") {
		t.Fatalf("fleet plan: %s", r)
	}

	// the canary's gate fails: the fleet stops before stage 2, exit 8
	r = runCmd(t, fleetCmd("run", "-f", file, "--yes"))
	if r.code != nodeupgrade.ExitPaused || !strings.Contains(r.stderr, "exec:test -e healthy") || !strings.Contains(r.stderr, "exit status 1") {
		t.Fatalf("fleet run with a failing gate: want exit %d naming the gate and its value: %s", nodeupgrade.ExitPaused, r)
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"canary/fleet-canary": "finished", "sim/fleet-aws": "not started", "edge/fleet-edge": "not started"})

	// healthy again: resume, from another directory, goes on to the approval
	if err := os.WriteFile(filepath.Join(dir, "healthy"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run := startBackground(t, fleetCmd("resume", "-f", file))
	if !run.waitFor("waiting for approval") {
		t.Fatalf("the fleet never waited for the approval of stage \"aws\":\n%s", run.output())
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"canary/fleet-canary": "finished", "sim/fleet-aws": "finished", "edge/fleet-edge": "not started"})
	if r := runCmd(t, fleetCmd("approve", "e2e-fleet", "aws")); r.code != nodeupgrade.ExitOK {
		t.Fatalf("fleet approve: %s", r)
	}
	if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitOK || !strings.Contains(out, `fleet "e2e-fleet" finished`) {
		t.Fatalf("the resumed fleet: exit %d, want %d:\n%s", code, nodeupgrade.ExitOK, out)
	}
	assertFleetRows(t, fleetCmd, file, map[string]string{"canary/fleet-canary": "finished", "sim/fleet-aws": "finished", "edge/fleet-edge": "finished"})
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
