package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// assertBackInService checks what abort promises for the group: no node
// tainted, cordoned or annotated scale-down-disabled, every Deployment
// fully Ready, and the record marked aborted.
func assertBackInService(t *testing.T, name string, run func(t *testing.T, args ...string) result, wantRecord bool) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	assertUntouched(t, ctx, groupKey, name)
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if _, ok := n.Annotations[scaleDownDisabled]; ok {
			t.Errorf("node %q still has %s", n.Name, scaleDownDisabled)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
	if !wantRecord {
		return
	}
	st := run(t, "status", name, "-o", "json")
	var s nodeupgrade.RunStatus
	if err := json.Unmarshal([]byte(st.stdout), &s); st.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("status: %v %s", err, st)
	}
	if s.Status != nodeupgrade.StatusAborted || s.AbortedAt == nil || s.FinishedAt == nil || s.Alive {
		t.Errorf("status %q, record %+v: want aborted and finished, no run alive", s.Status, s.Record)
	}
}

// TestAbortAWS kills a run on an Auto Scaling group at each phase (or
// lets its scale-up fail) and aborts: the group is back at its recorded
// sizes and in service, and no PDB was violated throughout.
func TestAbortAWS(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		name     string
		marker   string // the output line the run is SIGKILLed at
		notReady bool   // the new nodes never get Ready: NodeCreationFailure
	}{
		{name: "ScaleUp", marker: "for the new nodes of launch template"},
		{name: "Taint", marker: "tainting"},
		{name: "mid-batch", marker: "cordoned"},
		{name: "ScaleDown", marker: "scale-down: removing node"},
		{name: "failed ScaleUp", notReady: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own endpoint, group and namespace
			name := fmt.Sprintf("abort-aws-%d", i)
			g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
			ctx := testContext(t, 10*time.Minute)
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "2s", "--yes"}
			if tc.notReady {
				g.notReady.Store(true)
				r := g.run(t, append(args, "--node-ready-timeout", "15s")...)
				if r.code != nodeupgrade.ExitNodeCreation || !strings.Contains(r.stderr, "kubectl nodeupgrade abort") {
					t.Fatalf("want exit %d naming abort, got %s", nodeupgrade.ExitNodeCreation, r)
				}
				g.notReady.Store(false)
			} else {
				killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, args...), killPoint{name: tc.name, marker: tc.marker})
				if !killed {
					t.Fatalf("the run ended before the kill point:\n%s", out)
				}
			}
			if gr, _ := g.srv.Group(name); gr.Desired == g.original.Desired {
				t.Fatalf("the first run left desired at %d: nothing for abort to restore", gr.Desired)
			}

			start := time.Now()
			r := g.run(t, "abort", name)
			t.Logf("abort after %s took %s:\n%s", tc.name, time.Since(start).Round(time.Millisecond), r.stdout)
			if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "is back in service") {
				t.Fatalf("abort: %s", r)
			}
			if err := g.srv.WaitStable(ctx, name); err != nil {
				t.Fatal(err)
			}
			gr, _ := g.srv.Group(name)
			if gr.Desired != g.original.Desired || gr.Max != g.original.Max || gr.Min != g.original.Min {
				t.Errorf("sizes min/desired/max %d/%d/%d, want the recorded %d/%d/%d", gr.Min, gr.Desired, gr.Max, g.original.Min, g.original.Desired, g.original.Max)
			}
			if n := len(groupNodes(t, ctx, groupKey, name)); n != int(g.original.Desired) {
				t.Errorf("group has %d nodes, want %d", n, g.original.Desired)
			}
			assertBackInService(t, name, g.run, true)
			assertNoViolations(t, watcher.Stop())
			// Aborted is over: a second abort finds nothing to do.
			if again := g.run(t, "abort", name); again.code != nodeupgrade.ExitOK || strings.Contains(again.stdout, "untainted") {
				t.Errorf("second abort: %s", again)
			}
		})
	}
}

// TestAbortLabelPath aborts a run with provider none killed in its first
// drain, and refuses, then stops, a live one.
func TestAbortLabelPath(t *testing.T) {
	t.Parallel()
	t.Run("after SIGKILL mid-drain", func(t *testing.T) {
		const name = "abort-label"
		setupGroup(t, name, 4, 2, scenario.App{Name: "web", Replicas: 6, MinAvailable: num(4)})
		ctx := testContext(t, 5*time.Minute)
		watcher, err := scenario.WatchPDBs(ctx, client, name)
		if err != nil {
			t.Fatal(err)
		}
		killed, out := runAndKill(t, pluginCmd("run", name, "--provider", "none", "--target-label", target, "--post-drain-wait", "30s", "--yes"),
			killPoint{name: "drain", marker: "draining"})
		if !killed {
			t.Fatalf("the run ended before the kill point:\n%s", out)
		}
		r := plugin(t, "abort", name)
		t.Logf("abort:\n%s", r.stdout)
		if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "untainted and uncordoned") {
			t.Fatalf("abort: %s", r)
		}
		assertBackInService(t, name, func(t *testing.T, args ...string) result { return plugin(t, args...) }, true)
		assertNoViolations(t, watcher.Stop())
	})

	t.Run("live run", func(t *testing.T) {
		const name = "abort-live"
		setupGroup(t, name, 3, 1, scenario.App{Name: "web", Replicas: 4, MinAvailable: num(3)})
		run := startBackground(t, pluginCmd("run", name, "--provider", "none", "--target-label", target, "--post-drain-wait", "10s", "--yes"))
		if !run.waitFor("cordoned") {
			t.Fatalf("the run ended before abort was tried:\n%s", run.output())
		}
		refused := plugin(t, "abort", name)
		if refused.code != nodeupgrade.ExitUsage || !oneLine(refused.stderr) || !strings.Contains(refused.stderr, "--wait") {
			t.Errorf("abort of a live run: want exit %d in one line naming --wait, got %s", nodeupgrade.ExitUsage, refused)
		}
		r := plugin(t, "abort", name, "--wait")
		t.Logf("abort --wait:\n%s", r.stdout)
		if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "asked the run") {
			t.Fatalf("abort --wait: %s", r)
		}
		if code, out := run.wait(t, time.Minute); code != nodeupgrade.ExitPaused {
			t.Errorf("the live run exit %d, want %d (paused):\n%s", code, nodeupgrade.ExitPaused, out)
		}
		assertBackInService(t, name, func(t *testing.T, args ...string) result { return plugin(t, args...) }, true)
	})
}

// TestAbortWithNoRecord is a first run killed before it wrote its record:
// the nodes carry its taint and cordon, and nothing says so but the taint.
func TestAbortWithNoRecord(t *testing.T) {
	t.Parallel()
	const name = "abort-norecord"
	oldNodes, _ := setupGroup(t, name, 3, 1, scenario.App{Name: "web", Replicas: 4, MinAvailable: num(3)})
	ctx := testContext(t, 2*time.Minute)
	taint := corev1.Taint{Key: groupKey, Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}
	for _, n := range oldNodes {
		node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Spec.Taints = append(node.Spec.Taints, taint)
		node.Spec.Unschedulable = n == oldNodes[0]
		if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := plugin(t, "abort", name)
	t.Logf("abort:\n%s", r.stdout)
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "no run was recorded") {
		t.Fatalf("abort: %s", r)
	}
	for _, n := range oldNodes {
		if !strings.Contains(r.stdout, fmt.Sprintf("%q", n)) {
			t.Errorf("abort does not name node %q it put back in service", n)
		}
	}
	assertBackInService(t, name, func(t *testing.T, args ...string) result { return plugin(t, args...) }, false)
	st := plugin(t, "status", name)
	if st.code != nodeupgrade.ExitUsage {
		t.Errorf("abort with no record wrote one: %s", st)
	}
}

// abortRefusals are bad uses of abort: exit 2, one line, nothing changed.
func TestAbortRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no node group", []string{"abort"}, "missing NODEGROUP"},
		{"node group and selector", []string{"abort", "x", "-l", "a=b"}, "both NODEGROUP"},
		{"bad taint", []string{"abort", "x", "--taint", "nonsense"}, "taint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := plugin(t, tc.args...)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d in one line with %q, got %s", nodeupgrade.ExitUsage, tc.want, r)
			}
		})
	}
}

// TestAbortBlueGreenInSoak aborts a blue/green run left soaking (--no-wait):
// blue, cordoned and drained, is back in service at its recorded sizes,
// green stays, and no PDB was violated throughout.
func TestAbortBlueGreenInSoak(t *testing.T) {
	t.Parallel()
	const name = "abort-soak"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	r := g.run(t, "run", name, "--ami", "ami-new", "--strategy", "blue-green", "--batch-node-count", "3", "--node-pool-soak", "1h",
		"--post-drain-wait", "0s", "--no-wait", "--yes")
	if r.code != nodeupgrade.ExitPaused || !strings.Contains(r.stderr, "soaking until") {
		t.Fatalf("--no-wait must stop at the soak with exit %d: %s", nodeupgrade.ExitPaused, r)
	}
	if blue := groupNodes(t, ctx, groupKey, name); !slices.ContainsFunc(blue, func(n corev1.Node) bool { return n.Spec.Unschedulable }) {
		t.Fatalf("no node is cordoned in the soak: nothing for abort to undo")
	}
	a := g.run(t, "abort", name)
	if a.code != nodeupgrade.ExitOK || !strings.Contains(a.stdout, "is back in service") {
		t.Fatalf("abort: %s", a)
	}
	if gr, _ := g.srv.Group(name); gr.Desired != g.original.Desired || gr.Min != g.original.Min || gr.Max != g.original.Max {
		t.Errorf("blue min/desired/max %d/%d/%d, want the recorded %d/%d/%d", gr.Min, gr.Desired, gr.Max, g.original.Min, g.original.Desired, g.original.Max)
	}
	assertBackInService(t, name, g.run, true)
	assertNoViolations(t, watcher.Stop())
}
