package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestGCERollbackAfterAFinishedRun: a finished run on a regional MIG made
// a template for img-new; rollback points the MIG back at the instance
// template the record says it ran before (the template by name, no new
// one made) and replaces every node with the run's own strategy, killed
// after its first drain and finished by resume, no PDB violated.
func TestGCERollbackAfterAFinishedRun(t *testing.T) {
	t.Parallel()
	const name = "gce-rollback"
	g := setupGCEGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 6*time.Minute)
	if r := g.run(t, "run", name, "--image", "img-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	if p := g.run(t, "plan", name, "--rollback"); p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, name+"-v1") {
		t.Fatalf("plan --rollback: want the MIG back on %s-v1: %s", name, p)
	}
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	killed, first := runAndKill(t, g.cmd("rollback", name, "--yes"), killPoint{marker: ": drained"})
	if !killed {
		t.Fatalf("the rollback ended before its first drain:\n%s", first)
	}
	if r := g.run(t, "resume", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume of the killed rollback: %s", r)
	}
	assertNoViolations(t, watcher.Stop())
	templates := g.srv.Templates(gceProject)
	if len(templates) != 2 {
		t.Errorf("templates %v, want %s-v1 and the run's only: the rollback makes none", templates, name)
	}
	for _, gr := range g.groups() {
		if err := g.srv.WaitStable(ctx, gr.Key); err != nil {
			t.Fatal(err)
		}
		gr, _ = g.srv.Group(gr.Key)
		if gr.Template != name+"-v1" || gr.TargetSize != 3 {
			t.Errorf("MIG %s after the rollback: template %s, size %d; want %s-v1, 3", gr.Name, gr.Template, gr.TargetSize, name)
		}
		for _, in := range gr.Instances {
			if in.Template != name+"-v1" || !strings.HasSuffix(in.Image, "/img-old") {
				t.Errorf("instance %s runs %s (%s) after the rollback, want %s-v1", in.Name, in.Template, in.Image, name)
			}
		}
	}
	if nodes := groupNodes(t, ctx, kopsKey, name); len(nodes) != 3 {
		t.Errorf("%d nodes after the rollback, want 3", len(nodes))
	}
	assertUntouched(t, ctx, kopsKey, name)
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads: %v", err)
	}
}
