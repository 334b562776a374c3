package e2e

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gkefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// gkeDemoExamples runs the examples of docs/providers/gke.md on the GKE
// demo (gkefake.StartDemo, as simcluster up --gke-demo starts it): the
// plans, a blue/green run ended by complete, then GKE's controls on a
// surge upgrade back to the old version: cancel, abort (which says what
// GKE allows, exit 2), resume; and a rollback. No PDB is violated.
func gkeDemoExamples(t *testing.T, ctx context.Context, ex *helpExamples) {
	srv, err := gkefake.StartDemo(ctx, client, gkefake.DemoOptions{LaunchDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	watcher, err := scenario.WatchPDBs(ctx, client, gkefake.DemoNamespace)
	if err != nil {
		t.Fatal(err)
	}
	env := gkeDemoEnv(srv)
	const pool = gkefake.DemoPool
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan default-pool --node-version 1.31 --strategy surge --max-surge 2")
	bg := ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan default-pool --node-version 1.31 --strategy blue-green --batch-node-count 1 --node-pool-soak 1h")
	// The pool is set to the blue/green the demo asks for: no settings
	// update is planned, and the drain's pace is the pods' own start.
	if !strings.Contains(bg.stdout, "(unchanged)") || strings.Contains(bg.stdout, "Configure") || !strings.Contains(bg.stdout, "(from the scheduling to Ready of") {
		t.Errorf("the blue/green plan on the pool's own settings must update none and take the pods' pace:\n%s", bg.stdout)
	}

	run := startBackground(t, ex.cmd(t, env, "kubectl nodeupgrade run default-pool --node-version 1.31 --strategy blue-green --batch-node-count 1 --node-pool-soak 1h --yes"))
	if !run.waitFor("NODE_POOL_SOAKING") {
		t.Fatalf("the blue/green run never soaked:\n%s", run.output())
	}
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade status default-pool")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade complete default-pool")
	if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitOK {
		t.Fatalf("the blue/green run after complete: want exit 0, got %d:\n%s", code, out)
	}
	assertGKEDemoVersion(t, ctx, gkefake.DemoNewVersion)

	// A surge back to the old version, cancelled once a node is done.
	back := startBackground(t, setupCmd(env, "run", pool, "--node-version", "1.30", "--strategy", "surge", "--max-surge", "1", "--yes"))
	waitGKEDemoNodes(t, ctx, gkefake.DemoOldVersion, 1)
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade cancel default-pool")
	if code, out := back.wait(t, 2*time.Minute); code != nodeupgrade.ExitPaused {
		t.Fatalf("the cancelled run: want exit %d, got %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	r := ex.run(t, env, nodeupgrade.ExitUsage, "kubectl nodeupgrade abort default-pool")
	if !strings.Contains(r.stderr, "rollback default-pool") || !strings.Contains(r.stderr, "resume default-pool") {
		t.Errorf("abort must name rollback and resume: %s", r)
	}
	// The pods GKE evicted before the cancel come back first: until then
	// the PDB allows no disruption, and resume would rightly refuse.
	waitPDBAllows(t, gkefake.DemoNamespace, "web", 1)
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade resume default-pool --yes")
	assertGKEDemoVersion(t, ctx, gkefake.DemoOldVersion)
	// That run updated the pool's settings and put them back: the next
	// plan that updates them takes its pace.
	if p := runCmd(t, setupCmd(env, "plan", pool, "--node-version", "1.31", "--strategy", "surge", "--max-surge", "1")); p.code != nodeupgrade.ExitOK ||
		!regexp.MustCompile(`a settings update in \d+s \(from the last run on this group\)`).MatchString(p.stdout) {
		t.Errorf("the plan after a run that updated the settings must take that run's pace: %s", p)
	}

	// Towards the new version again, cancelled, and rolled back.
	fwd := startBackground(t, setupCmd(env, "run", pool, "--node-version", "1.31", "--strategy", "surge", "--max-surge", "1", "--yes"))
	waitGKEDemoNodes(t, ctx, gkefake.DemoNewVersion, 1)
	if c := runCmd(t, setupCmd(env, "cancel", pool)); c.code != nodeupgrade.ExitOK {
		t.Fatalf("cancel: %s", c)
	}
	if code, out := fwd.wait(t, 2*time.Minute); code != nodeupgrade.ExitPaused {
		t.Fatalf("the cancelled run: want exit %d, got %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade rollback default-pool --yes")
	assertGKEDemoVersion(t, ctx, gkefake.DemoOldVersion)
	assertUntouched(t, ctx, gkefake.NodePoolLabel, pool)
	if err := scenario.WaitAppsReady(ctx, client, gkefake.DemoNamespace); err != nil {
		t.Fatal(err)
	}
	assertNoViolations(t, watcher.Stop())
}

// gkeDemoEnv is the environment hack/demo-gke.sh sets for the plugin.
func gkeDemoEnv(srv *gkefake.Server) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NODEUPGRADE_G") })
	return append(env, "NODEUPGRADE_GKE_ENDPOINT="+srv.Endpoint, "NODEUPGRADE_GKE_NO_AUTH=true",
		"NODEUPGRADE_GCE_ENDPOINT="+srv.Compute.Endpoint, "NODEUPGRADE_GCE_NO_AUTH=true")
}

// gkeDemoOn counts the demo pool's nodes on version, and all of them.
func gkeDemoOn(t *testing.T, ctx context.Context, version string) (on, all int) {
	t.Helper()
	nodes := groupNodes(t, ctx, gkefake.NodePoolLabel, gkefake.DemoPool)
	for _, n := range nodes {
		if n.Status.NodeInfo.KubeletVersion == "v"+version {
			on++
		}
	}
	return on, len(nodes)
}

func assertGKEDemoVersion(t *testing.T, ctx context.Context, version string) {
	t.Helper()
	if on, all := gkeDemoOn(t, ctx, version); on != all || all != len(gkefake.DemoZones) {
		t.Errorf("%d of %d demo nodes on %s, want all %d", on, all, version, len(gkefake.DemoZones))
	}
}

// waitGKEDemoNodes waits until n of the demo pool's nodes run version.
func waitGKEDemoNodes(t *testing.T, ctx context.Context, version string, n int) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if on, _ := gkeDemoOn(t, wctx, version); on >= n {
			return
		}
		select {
		case <-wctx.Done():
			t.Fatalf("%d demo nodes never ran %s", n, version)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
