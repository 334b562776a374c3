package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestStatusWatchFollowsARunToItsEnd: status -w, from another terminal,
// prints the run's changes and exits as the run did.
func TestStatusWatchFollowsARunToItsEnd(t *testing.T) {
	t.Parallel()
	const name = "statuswatch"
	setupGroup(t, name, 3, 1, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	run := startBackground(t, pluginCmd("run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "2s", "--yes"))
	if !run.waitFor("draining") {
		t.Fatalf("the run ended before its first drain:\n%s", run.output())
	}
	follow := startBackground(t, pluginCmd("status", name, "-w"))
	code, out := follow.wait(t, 4*time.Minute)
	runCode, runOut := run.wait(t, time.Minute)
	assertNoViolations(t, watcher.Stop())
	if runCode != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", runCode, runOut)
	}
	if code != nodeupgrade.ExitOK {
		t.Fatalf("status -w exit %d, want %d as the run:\n%s", code, nodeupgrade.ExitOK, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], name+": running, phase ") {
		t.Errorf("status -w should print the running run's changes, one line each:\n%s", out)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, name+": finished, phase Done, 3 of 3 nodes done") {
		t.Errorf("status -w should end on the finished run, ended on %q:\n%s", last, out)
	}
	assertUpgraded(t, name, 1)
}
