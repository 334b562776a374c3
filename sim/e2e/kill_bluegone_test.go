package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestRunKilledAfterDeletingBlueFinishes kills a blue/green run in its
// last phase, then deletes blue's group as the killed run's delete call
// would have: the kill came after the delete and before its record. abort
// refuses (deleting blue cannot be undone), and resume, or the same run
// command, finishes on green (a CI run once found "auto scaling group not
// found" there).
func TestRunKilledAfterDeletingBlueFinishes(t *testing.T) {
	t.Parallel()
	for _, recovery := range []string{"resume", "run"} {
		t.Run(recovery, func(t *testing.T) {
			t.Parallel()
			name := "bluegone-" + recovery
			g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
			ctx := testContext(t, 10*time.Minute)
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			st := killStrategies["blue-green"]
			args := append(append([]string{"run", name, "--ami", "ami-new", "--post-drain-wait", "0s"}, st.args...), "--yes")
			if killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, args...), killPoint{name: "delete-blue", marker: "deleting blue:"}); !killed {
				t.Fatalf("the run ended before it deleted blue:\n%s", out)
			}
			if err := g.srv.DeleteGroup(name, true); err != nil {
				t.Fatal(err)
			}
			waitGroupGone(t, g, name)
			if r := g.run(t, "abort", name, "--yes"); r.code != nodeupgrade.ExitUsage || !strings.Contains(r.stderr, "deleting blue") {
				t.Errorf("abort after blue was deleted: %s; want exit %d, deleting blue", r, nodeupgrade.ExitUsage)
			}
			finish := args
			if recovery == "resume" {
				finish = []string{"resume", name, "--yes"}
			}
			r := g.run(t, finish...)
			if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "is gone already") {
				t.Fatalf("%s after blue was deleted: %s", recovery, r)
			}
			g.assertKillRecovered(t, st)
			if again := g.run(t, args...); again.code != nodeupgrade.ExitOK || !strings.Contains(again.stdout, "Nothing to do") {
				t.Errorf("the finished run started again: %s", again)
			}
			assertNoViolations(t, watcher.Stop())
		})
	}
}

// waitGroupGone waits until the fake has dropped the group (its instances
// terminated).
func waitGroupGone(t *testing.T, g *awsGroup, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for slices.Contains(g.srv.Groups(), name) {
		if time.Now().After(deadline) {
			t.Fatalf("group %q still there a minute after its delete", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
