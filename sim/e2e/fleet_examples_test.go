package e2e

import (
	"context"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// fleetExample is docs/fleet.md's script that writes the demo's fleet
// file and plans it (named by its first line).
const fleetExample = "# Write the demo's fleet: its sim-a nodes first, then sim-b"

// runFleetExamples runs the fleet's --help and docs/fleet.md examples on
// the label demo: the canary stage's approval holds the second stage
// until "fleet approve"; then every fleet command runs on the finished
// fleet, where each finds nothing left to do.
func runFleetExamples(t *testing.T, ctx context.Context, ex *helpExamples) {
	if err := scenario.DemoOfSize(ctx, client, 2, 2); err != nil {
		t.Fatal(err)
	}
	watcher, err := scenario.WatchPDBs(ctx, client, "demo")
	if err != nil {
		t.Fatal(err)
	}
	env := cleanAWSEnv()
	ex.run(t, env, nodeupgrade.ExitOK, fleetExample)
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet plan -f fleet.yaml")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet plan -f fleet.yaml -o json")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet plan -f fleet.yaml --detailed-exitcode")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet status -f fleet.yaml")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet export -f fleet.yaml --argo --image-ref ghcr.io/nodeupgrade/kubectl-nodeupgrade:v1.0.0 --kubeconfig-secret fleet-kubeconfig")

	run := startBackground(t, ex.cmd(t, env, "kubectl nodeupgrade fleet run -f fleet.yaml --yes"))
	if !run.waitFor("waiting for approval") {
		t.Fatalf("the fleet never waited for the canary's approval:\n%s", run.output())
	}
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet status -f fleet.yaml")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet approve rollout canary")
	if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitOK {
		t.Fatalf("fleet run: exit %d, want %d:\n%s", code, nodeupgrade.ExitOK, out)
	}
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet status -f fleet.yaml -w")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet resume -f fleet.yaml")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet cancel -f fleet.yaml")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade fleet abort -f fleet.yaml --stage canary --yes")
	assertDemoImages(t, ctx, map[string]int{"ami-new": 2})
	assertNoViolations(t, watcher.Stop())
}
