package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

const (
	groupKey = "eks.amazonaws.com/nodegroup"
	imageKey = "eks.amazonaws.com/nodegroup-image"
	target   = imageKey + "=ami-new"
)

// setupGroup creates a node group of outdated and current nodes over three
// zones; apps are pinned to it so tests sharing the cluster do not mix.
func setupGroup(t *testing.T, name string, outdated, current int, apps ...scenario.App) (oldNodes, newNodes []string) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	oldNodes, newNodes, err := scenario.CreateNodeGroup(ctx, client, scenario.NodeGroup{
		LabelKey:     groupKey,
		Name:         name,
		Zones:        []string{"sim-a", "sim-b", "sim-c"},
		Outdated:     outdated,
		Current:      current,
		OldLabels:    map[string]string{imageKey: "ami-old"},
		TargetLabels: map[string]string{imageKey: "ami-new"},
	})
	if err != nil {
		t.Fatal(err)
	}
	createPinnedApps(t, ctx, name, apps)
	return oldNodes, newNodes
}

// createPinnedApps creates apps in namespace name, pinned to the nodes of
// group name so tests sharing the cluster do not mix, and waits for them.
func createPinnedApps(t *testing.T, ctx context.Context, name string, apps []scenario.App) {
	t.Helper()
	createAppsPinnedBy(t, ctx, groupKey, name, apps)
}

// createAppsPinnedBy is createPinnedApps for a group of another label key.
func createAppsPinnedBy(t *testing.T, ctx context.Context, key, name string, apps []scenario.App) {
	t.Helper()
	for _, a := range apps {
		a.Namespace = name
		a.NodeSelector = map[string]string{key: name}
		if err := scenario.CreateApp(ctx, client, a); err != nil {
			t.Fatal(err)
		}
	}
	if len(apps) > 0 {
		if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
			t.Fatal(err)
		}
	}
}

// assertNoViolations fails for every moment a PDB had fewer Ready pods
// than it requires.
func assertNoViolations(t *testing.T, violations []scenario.Violation) {
	t.Helper()
	for _, v := range violations {
		t.Errorf("PDB %s had %d Ready pods, needs %d, at %s", v.PDB, v.Ready, v.Required, v.At.Format(time.RFC3339Nano))
	}
}

func pct(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
func num(i int) *intstr.IntOrString    { v := intstr.FromInt(i); return &v }

// assertUpgraded checks that no outdated node of the group is left and every
// Deployment is back to full Ready.
func assertUpgraded(t *testing.T, name string, wantNodes int) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	nodes := groupNodes(t, ctx, groupKey, name)
	for _, n := range nodes {
		if n.Labels[imageKey] != "ami-new" {
			t.Errorf("outdated node %q is still in the group", n.Name)
		}
	}
	if len(nodes) != wantNodes {
		t.Errorf("group has %d nodes, want %d", len(nodes), wantNodes)
	}
	assertUntouched(t, ctx, groupKey, name)
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
}

func TestHappyPath(t *testing.T) {
	t.Parallel()
	const name = "happy"
	setupGroup(t, name, 6, 3,
		scenario.App{Name: "web", Replicas: 24, MinAvailable: pct("75%")},
		scenario.App{Name: "api", Replicas: 18, MaxUnavailable: num(2)},
		scenario.App{Name: "worker", Replicas: 12, MinAvailable: num(10)},
		scenario.App{Name: "cache", Replicas: 6, MaxUnavailable: num(1)},
	)
	ctx := testContext(t, 10*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := plugin(t, "run", name, "--target-label", target, "--max-unavailable", "2", "--post-drain-wait", "1s", "--seed", "1", "--yes")
	t.Logf("happy path: 6 outdated nodes, 60 pods, max-unavailable 2: run took %s", time.Since(start).Round(time.Millisecond))
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	assertNoViolations(t, violations)
	if got := strings.Count(r.stdout, "draining"); got != 3 {
		t.Errorf("want 3 batches drained, saw %d:\n%s", got, r.stdout)
	}
	assertUpgraded(t, name, 3)
}

func TestPDBAllowingNoDisruptionFailsThenForce(t *testing.T) {
	t.Parallel()
	const name = "blocked"
	// The current node joins after the pod is placed: with both there, the
	// scheduler may put solo on the current node and leave nothing to block.
	oldNodes, _ := setupGroup(t, name, 1, 0, scenario.App{Name: "solo", Replicas: 1, MinAvailable: num(1)})
	if _, _, err := scenario.CreateNodeGroup(testContext(t, time.Minute), client, scenario.NodeGroup{
		LabelKey: groupKey, Name: name, Zones: []string{"sim-a"}, Current: 1,
		TargetLabels: map[string]string{imageKey: "ami-new"},
	}); err != nil {
		t.Fatal(err)
	}
	// The audit refuses the run before anything changes.
	r := plugin(t, "run", name, "--target-label", target, "--drain-timeout", "5s", "--post-drain-wait", "0s", "--yes")
	if r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "pdb-zero-disruptions") || !strings.Contains(r.stderr, "--ignore-check") {
		t.Fatalf("want exit %d naming the blocker, got %s", nodeupgrade.ExitBlockers, r)
	}
	assertUntouched(t, testContext(t, time.Minute), groupKey, name)

	r = plugin(t, "run", name, "--target-label", target, "--drain-timeout", "5s", "--post-drain-wait", "0s", "--yes",
		"--ignore-check", "pdb-zero-disruptions", "--ignore-check", "single-replica")
	if r.code != nodeupgrade.ExitPodEvictionError {
		t.Fatalf("want exit %d (PodEvictionFailure), got %s", nodeupgrade.ExitPodEvictionError, r)
	}
	for _, want := range []string{"PodEvictionFailure", `node "` + oldNodes[0] + `"`, `"blocked/solo-`, `PodDisruptionBudget "blocked/solo"`, "--force"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("error does not mention %s:\n%s", want, r.stderr)
		}
	}
	// The plan showed the blocker before anything ran.
	if !strings.Contains(r.stdout, "pdb-zero-disruptions") || !strings.Contains(r.stdout, `PodDisruptionBudget "blocked/solo"`) {
		t.Errorf("plan does not show the PDB blocker:\n%s", r.stdout)
	}
	ctx := testContext(t, 2*time.Minute)
	if _, err := client.CoreV1().Nodes().Get(ctx, oldNodes[0], metav1.GetOptions{}); err != nil {
		t.Fatalf("node %q was removed although its drain failed: %v", oldNodes[0], err)
	}

	r = plugin(t, "run", name, "--target-label", target, "--drain-timeout", "5s", "--post-drain-wait", "0s", "--force", "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run --force failed: %s", r)
	}
	if !strings.Contains(r.stdout, "deleted pod") {
		t.Errorf("--force did not delete the blocked pod:\n%s", r.stdout)
	}
	assertUpgraded(t, name, 1)
}

func TestRerunAfterKill(t *testing.T) {
	t.Parallel()
	const name = "rerun"
	setupGroup(t, name, 4, 2,
		scenario.App{Name: "web", Replicas: 8, MinAvailable: num(6)},
	)
	ctx := testContext(t, 10*time.Minute)
	// Record every change to the group's current nodes: a re-run must never taint or cordon them.
	w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: target + "," + groupKey + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	touched := make(chan string, 100)
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == groupKey }) {
				touched <- n.Name
			}
		}
	}()

	run := startBackground(t, pluginCmd("run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "30s", "--yes"))
	// Kill in the middle of the first batch: drained and cordoned, not removed.
	if !run.waitFor("cordoned") {
		t.Fatalf("the run ended before it could be killed mid-batch:\n%s", run.output())
	}
	// While it runs, a second run is refused by the lock.
	second := plugin(t, "run", name, "--target-label", target, "--yes")
	if second.code != nodeupgrade.ExitLocked || !strings.Contains(second.stderr, "is being upgraded by") {
		t.Errorf("a second concurrent run must exit %d naming the holder: %s", nodeupgrade.ExitLocked, second)
	}
	_ = run.cmd.Process.Signal(syscall.SIGKILL)
	run.wait(t, time.Minute)
	if n := len(groupNodes(t, ctx, groupKey, name)); n != 6 {
		t.Fatalf("after the kill the group has %d nodes, want all 6 (the first batch was not removed yet)", n)
	}

	// The record says where the killed run stopped.
	st := plugin(t, "status", name, "-o", "json")
	var rec state.Record
	if err := json.Unmarshal([]byte(st.stdout), &rec); st.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("status: %v %s", err, st)
	}
	if rec.FinishedAt != nil || rec.Phase != "Cordon" || len(rec.InFlight) != 1 || rec.Left() != 4 {
		t.Errorf("record after the kill: %+v, want phase Cordon with 1 node in flight and 4 left", rec)
	}

	r := plugin(t, "run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "1s", "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("re-run failed: %s", r)
	}
	st = plugin(t, "status", name, "-o", "json")
	rec = state.Record{}
	if err := json.Unmarshal([]byte(st.stdout), &rec); err != nil || rec.FinishedAt == nil || rec.Left() != 0 || rec.LastError != "" {
		t.Errorf("record after the re-run: %+v %v, want finished with nothing left", rec, err)
	}
	if !strings.Contains(r.stdout, "4 outdated") {
		t.Errorf("re-run should plan the 4 nodes still outdated:\n%s", r.stdout)
	}
	assertUpgraded(t, name, 2)
	select {
	case n := <-touched:
		t.Errorf("node %q carries the target labels but was tainted or cordoned", n)
	default:
	}
}

// TestRerunRightAfterAKillMidDrain: a run killed just after an eviction
// leaves the workload's PDB at 0 disruptions until the replacement is
// Ready, 10 s later. The same command run again at once plans that as a
// warning, not a blocker, since the record lists the workload as
// recovering; it evicts no more of its pods until it is back, and
// finishes with no PDB violation.
func TestRerunRightAfterAKillMidDrain(t *testing.T) {
	t.Parallel()
	const name = "rerun-middrain"
	setupGroup(t, name, 3, 1, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1),
		PodAnnotations: map[string]string{scenario.ReadyDelayAnnotation: "10s"}})
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "0s", "--yes"}
	killed, out := runAndKill(t, pluginCmd(args...), killPoint{marker: "evicted pod"})
	if !killed {
		t.Fatalf("the run ended before its first eviction:\n%s", out)
	}
	r := plugin(t, args...)
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("the re-run: %s", r)
	}
	for _, want := range []string{
		"while the pods an interrupted run evicted come back",
		`evicted before the run was interrupted, maybe not Ready again yet: ReplicaSet "` + name + `/web-`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the re-run does not say %q:\n%s", want, r.stdout)
		}
	}
	assertNoViolations(t, violations)
	assertUpgraded(t, name, 1)
}

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	const name = "badinput"
	setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.json")
	r := plugin(t, "plan", name, "--target-label", target, "--seed", "7", "-o", "json")
	if r.code != nodeupgrade.ExitOK {
		t.Fatal(r)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatal(err)
	}
	p.Batches[0].Nodes[0].Name = "node-that-is-gone"
	data, _ := json.Marshal(p)
	if err := os.WriteFile(stale, data, 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) []string {
		return append([]string{"run", name, "--target-label", target, "--yes", "--post-drain-wait", "0s"}, extra...)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown node group", []string{"run", "no-such-group", "--target-label", target, "--yes"}, `node group "no-such-group" not found`},
		{"max-unavailable 0", run("--max-unavailable", "0"), `--max-unavailable "0"`},
		{"max-unavailable 101", run("--max-unavailable", "101"), `--max-unavailable "101"`},
		{"max-unavailable -1", run("--max-unavailable", "-1"), `--max-unavailable "-1"`},
		{"max-unavailable abc", run("--max-unavailable", "abc"), `--max-unavailable "abc"`},
		{"max-unavailable 150%", run("--max-unavailable", "150%"), `--max-unavailable "150%"`},
		{"malformed target-label", []string{"run", name, "--target-label", "ami-new", "--yes"}, `--target-label "ami-new"`},
		{"no target", []string{"run", name, "--yes"}, "--target-label"},
		{"unreadable plan file", []string{"run", "--plan-file", filepath.Join(dir, "missing.json"), "--yes"}, "--plan-file"},
		{"plan file not a plan", []string{"run", "--plan-file", garbage, "--yes"}, "--plan-file"},
		{"stale plan file", []string{"run", "--plan-file", stale, "--yes"}, "stale"},
		{"no --yes without a terminal", []string{"run", name, "--target-label", target}, "--yes"},
		{"unknown flag", run("--max-unavailabel", "1"), "unknown flag"},
		{"bad output", []string{"plan", name, "--target-label", target, "-o", "xml"}, `--output "xml"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := plugin(t, tc.args...)
			if r.code != nodeupgrade.ExitUsage {
				t.Fatalf("want exit %d, got %s", nodeupgrade.ExitUsage, r)
			}
			if !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want a one-line error mentioning %s, got %q", tc.want, r.stderr)
			}
			assertUntouched(t, testContext(t, time.Minute), groupKey, name)
		})
	}
}

// ageColumn is a node's age in the plan table, with the padding after it:
// the column is as wide as its widest age, so the padding changes as a
// node's age gains a digit (8s, then 10s) between two prints.
var ageColumn = regexp.MustCompile(`   \d+[smhd](\d+[smh])? {3,}`)

var batchLine = regexp.MustCompile(`batch (\d+)/\d+: draining (.*)$`)

func TestSeedGivesSameBatchesInPlanAndRun(t *testing.T) {
	t.Parallel()
	const name = "seeded"
	setupGroup(t, name, 5, 2, scenario.App{Name: "web", Replicas: 6, MaxUnavailable: num(1)})
	args := []string{name, "--target-label", target, "--max-unavailable", "2", "--seed", "7"}
	first := plugin(t, append([]string{"plan", "-o", "json"}, args...)...)
	second := plugin(t, append([]string{"plan", "-o", "json"}, args...)...)
	if first.code != nodeupgrade.ExitOK || first.stdout != second.stdout {
		t.Fatalf("plan --seed 7 -o json differs between two runs:\n%s\n---\n%s", first, second)
	}
	dryJSON := plugin(t, append([]string{"run", "--dry-run", "-o", "json"}, args...)...)
	if dryJSON.code != nodeupgrade.ExitOK || dryJSON.stdout != first.stdout {
		t.Fatalf("run --dry-run -o json does not print what plan -o json prints:\n%s\n---\n%s", first, dryJSON)
	}
	// The tables match too, but for the AGE column, which moves with the clock.
	table := plugin(t, append([]string{"plan"}, args...)...)
	dry := plugin(t, append([]string{"run", "--dry-run"}, args...)...)
	if table.code != nodeupgrade.ExitOK || dry.code != nodeupgrade.ExitOK || ageColumn.ReplaceAllString(table.stdout, "   AGE   ") != ageColumn.ReplaceAllString(dry.stdout, "   AGE   ") {
		t.Fatalf("run --dry-run does not print what plan prints:\n%s\n---\n%s", table, dry)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(first.stdout), &p); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(first.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	r := plugin(t, "run", "--plan-file", planFile, "--post-drain-wait", "0s", "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run --plan-file failed: %s", r)
	}
	var drained [][]string
	for _, line := range strings.Split(r.stdout, "\n") {
		if m := batchLine.FindStringSubmatch(line); m != nil {
			var nodes []string
			for _, q := range strings.Split(m[2], ", ") {
				nodes = append(nodes, strings.Trim(q, `"`))
			}
			drained = append(drained, nodes)
		}
	}
	var planned [][]string
	for _, b := range p.Batches {
		var nodes []string
		for _, n := range b.Nodes {
			nodes = append(nodes, n.Name)
		}
		planned = append(planned, nodes)
	}
	if fmt.Sprint(drained) != fmt.Sprint(planned) {
		t.Errorf("run drained batches %v, the plan showed %v", drained, planned)
	}
	assertUpgraded(t, name, 2)
}

func TestDeleteNodeFalseLeavesNodesDone(t *testing.T) {
	t.Parallel()
	const name = "keepnodes"
	oldNodes, _ := setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	r := plugin(t, "run", name, "--target-label", target, "--max-unavailable", "2", "--post-drain-wait", "0s", "--delete-node=false", "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	ctx := testContext(t, time.Minute)
	for _, n := range oldNodes {
		node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Fatalf("node %q was deleted with --delete-node=false", n)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !node.Spec.Unschedulable || node.Labels[plan.StateLabel] != plan.StateDone {
			t.Errorf("node %q: unschedulable %v labels %v, want cordoned and labelled done", n, node.Spec.Unschedulable, node.Labels)
		}
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 0 {
			t.Errorf("node %q still runs %d pods", n, len(pods.Items))
		}
	}
	// A second run has nothing to do.
	r = plugin(t, "run", name, "--target-label", target, "--yes")
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "Nothing to do") {
		t.Errorf("second run should have nothing to do: %s", r)
	}
}
