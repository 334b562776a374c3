package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

// TestAWSRollbackAfterAFinishedRun: the morning after, the image of a
// finished run is bad. rollback takes the group back to the launch
// template version the record says it ran before, with the run's own
// strategy and safeguards (plan first, --yes), killed mid-way and
// finished by resume, every node on it and no
// PDB violated; plan --rollback shows it first, in the run's maintenance
// windows unless given again.
func TestAWSRollbackAfterAFinishedRun(t *testing.T) {
	t.Parallel()
	const name = "aws-rollback-finished"
	g := setupAWSGroup(t, name, 2, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
	ctx := testContext(t, 5*time.Minute)
	if r := g.run(t, "run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--seed", "1", "--not-after", "2099-01-01", "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	// plan --rollback names every node, all on the version the run made,
	// and changes nothing.
	before, _ := g.srv.Group(name)
	if p := g.run(t, "plan", name, "--rollback", "-o", "name"); p.code != nodeupgrade.ExitOK || len(strings.Fields(p.stdout)) != int(g.original.Desired) {
		t.Fatalf("plan --rollback: want the %d nodes, got %s", g.original.Desired, p)
	}
	if after, _ := g.srv.Group(name); after.LaunchTemplateVersion != before.LaunchTemplateVersion || after.Desired != before.Desired {
		t.Fatalf("plan --rollback changed the group: %+v, was %+v", after, before)
	}
	// It plans in the run's maintenance windows, unless given again.
	if p := g.run(t, "plan", name, "--rollback"); !strings.Contains(p.stdout, "not after   2099-01-01T00:00:00Z") {
		t.Errorf("plan --rollback does not keep the run's --not-after: %s", p)
	}
	if p := g.run(t, "plan", name, "--rollback", "--not-after", "2098-06-01"); !strings.Contains(p.stdout, "not after   2098-06-01T00:00:00Z") || strings.Contains(p.stdout, "2099") {
		t.Errorf("plan --rollback --not-after does not replace the run's: %s", p)
	}
	// Without --yes and no terminal: refused before anything changes.
	if r := g.run(t, "rollback", name); r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) {
		t.Fatalf("rollback without --yes: want exit %d in one line, got %s", nodeupgrade.ExitUsage, r)
	}
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	// Killed once its first batch drained a node: resume finishes it.
	killed, first := runAndKill(t, g.cmd(sim.Kubeconfig, "rollback", name, "--yes"), killPoint{marker: ": drained"})
	if !killed || !strings.Contains(first, "back to launch template") {
		t.Fatalf("the rollback ended before its first drain:\n%s", first)
	}
	r := g.run(t, "resume", name, "--yes")
	assertNoViolations(t, watcher.Stop())
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume of the killed rollback: %s", r)
	}
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	gr, _ := g.srv.Group(name)
	if len(gr.Instances) != int(g.original.Desired) || gr.Desired != g.original.Desired {
		t.Errorf("group after the rollback: %d instances, desired %d; want %d", len(gr.Instances), gr.Desired, g.original.Desired)
	}
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion != "1" || in.Lifecycle != awsfake.LifecycleInService {
			t.Errorf("instance %s runs version %s (%s) after the rollback, want 1", in.ID, in.LaunchTemplateVersion, in.Lifecycle)
		}
	}
	assertUntouched(t, ctx, groupKey, name)
	// The rollback is a finished run too: status says until when it can
	// be undone, and its own rollback goes back to version 2.
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "kubectl nodeupgrade rollback "+name+"\" until ") || !strings.Contains(st.stdout, "--rollback-window") {
		t.Errorf("status does not state the rollback window: %s", st)
	}
	if p := g.run(t, "plan", name, "--rollback"); p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, "version 2") {
		t.Errorf("plan --rollback of the rollback: want version 2, got %s", p)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads: %v", err)
	}
}
