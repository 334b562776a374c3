package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestAWSKeepBlueRollbackAfterComplete: a blue/green run with --keep-blue
// 10m keeps blue's Auto Scaling group at 0 nodes after complete, and
// status says until when. rollback then scales that same group back up
// (no group made), drains green, and keeps green at 0 in its turn; killed
// mid-way, resume finishes it. Every node ends on launch template version
// 1 in blue's group, no PDB violated. Both durations are logged.
func TestAWSKeepBlueRollbackAfterComplete(t *testing.T) {
	t.Parallel()
	const name, green = "aws-keep-blue", "aws-keep-blue-v2"
	g := setupAWSGroup(t, name, 2, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
	ctx := testContext(t, 8*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run := startBackground(t, g.cmd(sim.Kubeconfig, "run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "1",
		"--node-pool-soak", "1h", "--keep-blue", "10m", "--post-drain-wait", "0s", "--yes"))
	if !run.waitFor("node pool soak: ") {
		t.Fatalf("the run never reached the soak:\n%s", run.output())
	}
	if c := g.run(t, "complete", name); c.code != nodeupgrade.ExitOK {
		t.Fatalf("complete: %s", c)
	}
	if code, out := run.wait(t, 3*time.Minute); code != nodeupgrade.ExitOK || !strings.Contains(out, "is kept at 0 nodes until") {
		t.Fatalf("run: exit %d, want %d keeping blue:\n%s", code, nodeupgrade.ExitOK, out)
	}
	upgrade := time.Since(start)
	if blue, ok := g.srv.Group(name); !ok || blue.Min != 0 || blue.Desired != 0 || blue.Max != 0 {
		t.Fatalf("blue after the run: %+v (exists %v), want kept at 0/0/0", blue.GroupSpec, ok)
	}
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "kept at 0 nodes, back up (--keep-blue)") {
		t.Errorf("status does not say blue is kept and until when: %s", st)
	}
	groups := g.srv.Groups()

	start = time.Now()
	killed, first := runAndKill(t, g.cmd(sim.Kubeconfig, "rollback", name, "--yes"), killPoint{marker: ": drained"})
	if !killed || !strings.Contains(first, "scaling the kept Auto Scaling group") {
		t.Fatalf("the rollback did not scale the kept blue up, or ended before its first drain:\n%s", first)
	}
	if r := g.run(t, "resume", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume of the killed rollback: %s", r)
	}
	back := time.Since(start)
	assertNoViolations(t, watcher.Stop())
	t.Logf("blue/green of 2 nodes until complete: %s; rollback to the kept blue (killed once, resumed): %s", upgrade.Round(time.Second), back.Round(time.Second))
	if now := g.srv.Groups(); !slices.Equal(now, groups) {
		t.Errorf("the rollback made or deleted groups: %v, were %v", now, groups)
	}
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	blue, _ := g.srv.Group(name)
	if blue.Desired != g.original.Desired || blue.Min != g.original.Min || blue.Max != g.original.Max {
		t.Errorf("blue after the rollback: %+v, want the original sizes %+v", blue.GroupSpec, g.original)
	}
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if v := n.Labels["eks.amazonaws.com/sourceLaunchTemplateVersion"]; v != "1" || n.Spec.Unschedulable {
			t.Errorf("node %q after the rollback: version %q, cordoned %v; want 1, schedulable", n.Name, v, n.Spec.Unschedulable)
		}
	}
	if gr, _ := g.srv.Group(green); gr.Desired != 0 || gr.Max != 0 {
		t.Errorf("green after the rollback: %+v, want kept at 0 (the rollback's own --keep-blue)", gr.GroupSpec)
	}
	if p := g.run(t, "plan", name, "--rollback"); p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, "(the blue a finished run kept at 0 nodes) scaled back up") {
		t.Errorf("plan --rollback of the rollback: want green %q scaled back up: %s", green, p)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads: %v", err)
	}
}

// TestAWSKeptBlueDeletedByTheNextRunPastItsTime: blue kept for 1s is past
// its time at the next run on the group: plan says the run deletes it,
// rollback is refused naming until when blue was kept (exit 2, nothing
// changed), and the next run deletes it before it starts, even one that
// finds nothing else to do (plan says so too; without --yes and no
// terminal, refused, blue still there).
func TestAWSKeptBlueDeletedByTheNextRunPastItsTime(t *testing.T) {
	t.Parallel()
	const name, green = "aws-kept-over", "aws-kept-over-v2"
	g := setupAWSGroup(t, name, 2, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
	if r := g.run(t, "run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "1", "--node-pool-soak", "0s", "--keep-blue", "1s", "--post-drain-wait", "0s", "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	if !slices.Contains(g.srv.Groups(), name) {
		t.Fatalf("blue %q not kept: %v", name, g.srv.Groups())
	}
	// Past blue's second, status offers no rollback any more.
	err := wait.PollUntilContextTimeout(testContext(t, time.Minute), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !strings.Contains(g.run(t, "status", name).stdout, "back up (--keep-blue)"), nil
	})
	if err != nil {
		t.Fatalf("status still offers the rollback to the kept blue: %v", err)
	}
	if r := g.run(t, "rollback", name, "--yes"); r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, "was kept until") {
		t.Errorf("rollback past --keep-blue: want exit %d in one line naming until when blue was kept: %s", nodeupgrade.ExitUsage, r)
	}
	args := []string{name, "--launch-template-version", "1", "--max-unavailable", "1", "--post-drain-wait", "0s"}
	if p := g.run(t, append([]string{"plan"}, args...)...); !strings.Contains(p.stdout, `blue "`+name+`", kept at 0 nodes`) || !slices.Contains(g.srv.Groups(), name) {
		t.Errorf("plan does not say the run deletes the kept blue, or deleted it: %s", p)
	}
	// The next run finds green on the target: nothing else to do.
	idle := []string{name, "--max-unavailable", "1", "--post-drain-wait", "0s"}
	if p := g.run(t, append([]string{"plan"}, idle...)...); !strings.Contains(p.stdout, "Nothing to do") || !strings.Contains(p.stdout, `blue "`+name+`", kept at 0 nodes`) {
		t.Errorf("plan with nothing to do does not say the run deletes the kept blue: %s", p)
	}
	if r := g.run(t, append([]string{"run"}, idle...)...); r.code != nodeupgrade.ExitUsage || !slices.Contains(g.srv.Groups(), name) {
		t.Errorf("run without --yes: want exit %d, blue kept: %s; groups %v", nodeupgrade.ExitUsage, r, g.srv.Groups())
	}
	if r := g.run(t, append(append([]string{"run"}, idle...), "--yes")...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("the next run: %s", r)
	}
	if groups := g.srv.Groups(); !slices.Equal(groups, []string{green}) {
		t.Errorf("groups after the next run: %v, want green %q alone", groups, green)
	}
}
