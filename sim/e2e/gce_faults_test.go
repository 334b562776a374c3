package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestFaultsGCE: the Compute endpoint refuses faultRate of the plugin's
// calls with the faults Google's APIs answer under load (Compute's 403
// rateLimitExceeded and userRateLimitExceeded, 429, 500, 502, 503, 504:
// sim/gcpfault), does faultRate of the calls that change something and
// answers them 504 as if the answer were lost, and the template copy's
// operation runs before it is done; a surge run, and a blue/green run that creates and deletes
// groups, of a regional group to a new image finish with no PDB violated,
// every node replaced and nothing left behind.
func TestFaultsGCE(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		strategy string
		args     []string
	}{
		{"surge", []string{"--max-surge", "1", "--max-unavailable", "0"}},
		{"blue-green", []string{"--batch-node-count", "2", "--node-pool-soak", "0s"}},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			name := "faults-gce-" + tc.strategy
			g := startFaultyGCE(t, name, gcefake.Options{Faults: faultRate, LateFaults: faultRate, FaultSeed: uint64(5 + i), SlowOperations: true})
			g.addMIG(t, gcefake.GroupSpec{Project: gceProject, Name: name, Region: "us-central1", Zones: gceZones, Template: name + "-v1", Size: 6})
			g.ready(t, gceApps())
			watcher, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			args := append([]string{"run", name, "--strategy", tc.strategy, "--image", "img-new", "--seed", "5", "--post-drain-wait", "0s", "--yes"}, tc.args...)
			r := g.run(t, args...)
			t.Logf("%s through %d Compute faults: %s", tc.strategy, g.srv.Faults(), time.Since(start).Round(time.Millisecond))
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run: %s", r)
			}
			assertNoViolations(t, watcher.Stop())
			if g.srv.Faults() == 0 {
				t.Error("no Compute call was refused: the run was not tested against faults")
			}
			g.assertFinished(t, 6)
		})
	}
}

// startFaultyGCE starts the endpoint with opts (faults, say) and the
// images and template NAME-v1, made through the test hooks, which never
// fail.
func startFaultyGCE(t *testing.T, name string, opts gcefake.Options) *gceGroup {
	t.Helper()
	opts.Project, opts.LaunchDelay = gceProject, 500*time.Millisecond
	srv, err := gcefake.StartWithKube(context.Background(), client, opts, gcefake.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.RegisterImage(gceProject, "img-old", "node")
	srv.RegisterImage(gceProject, "img-new", "node")
	if err := srv.CreateTemplate(gcefake.TemplateSpec{Project: gceProject, Name: name + "-v1", ImageProject: gceProject, Image: "img-old", KubeLabels: map[string]string{kopsKey: name}}); err != nil {
		t.Fatal(err)
	}
	return &gceGroup{name: name, srv: srv}
}

// TestGCETemplateInsertFails: the operation of the template copy fails
// (the project's INSTANCE_TEMPLATES quota); the run stops naming it
// before any node is touched, and abort puts the group back as it was
// (the run had held its updates off, recorded, before making the copy).
func TestGCETemplateInsertFails(t *testing.T) {
	t.Parallel()
	const name = "gce-tmpl-fail"
	g := setupGCEGroup(t, name, 3)
	g.srv.FailTemplateInserts("QUOTA_EXCEEDED", "Quota 'INSTANCE_TEMPLATES' exceeded.  Limit: 100.0 globally.")
	r := g.run(t, "run", name, "--image", "img-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--yes")
	if r.code != nodeupgrade.ExitFailure || !strings.Contains(r.stderr, "operation insert on "+g.newTemplate()+" failed: QUOTA_EXCEEDED") {
		t.Fatalf("want exit %d naming the operation's QUOTA_EXCEEDED: %s", nodeupgrade.ExitFailure, r)
	}
	assertUntouched(t, testContext(t, time.Minute), kopsKey, name)
	// A failed start leaves the group as it was: its updates PROACTIVE
	// again, without an abort.
	g.assertUnchanged(t, 3)
	if a := g.run(t, "abort", name); a.code != nodeupgrade.ExitOK {
		t.Fatalf("abort: %s", a)
	}
	g.assertUnchanged(t, 3)
}
