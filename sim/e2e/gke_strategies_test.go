package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gkefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The versions of the autoscaled blue/green test: GKE runs that strategy
// with a control plane of 1.34.0-gke.2201000 or later.
const (
	gkeAutoscaledOld = "1.33.5-gke.1000"
	gkeAutoscaledNew = "1.34.1-gke.1000"
)

// TestGKEAutoscaledBlueGreen: --wait-period becomes the pool's
// autoscaledRolloutPolicy.waitForDrainDuration for the run, and the plan
// says so; GKE starts green empty, cordons blue, waits, then drains blue
// (growing green), deletes it without a soak; the settings come back and
// no PDB is violated. short-lived on this standard pool is refused at
// plan time.
func TestGKEAutoscaledBlueGreen(t *testing.T) {
	t.Parallel()
	const name = "gke-autoscaled"
	g := setupGKEPool(t, name, gkePoolSpec{autoscaling: true, master: gkeAutoscaledNew, version: gkeAutoscaledOld},
		scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	refused := g.run(t, "plan", name, "--strategy", "short-lived", "--node-version", "1.34")
	if refused.code != nodeupgrade.ExitUsage || !oneLine(refused.stderr) || !strings.Contains(refused.stderr, "flex-start") {
		t.Errorf("short-lived on a standard pool: want exit %d and one line naming flex-start: %s", nodeupgrade.ExitUsage, refused)
	}
	flags := []string{"--strategy", "autoscaled-blue-green", "--wait-period", "8s", "--node-version", "1.34"}
	p := g.run(t, append([]string{"plan", name}, flags...)...)
	for _, want := range []string{"waitForDrainDuration 8s", "8s for the cluster autoscaler", "empty green", "cancel, resume"} {
		if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, want) {
			t.Errorf("plan must show %q: %s", want, p)
		}
	}
	run := startBackground(t, g.cmd(append([]string{"run", name, "--yes"}, flags...)...))
	if !run.waitFor("DRAINING_BLUE_POOL") {
		code, out := run.wait(t, time.Minute)
		t.Fatalf("the run never showed the drain phase, exit %d:\n%s", code, out)
	}
	if up := g.pool().UpgradeSettings; up.BlueGreenSettings == nil || up.BlueGreenSettings.AutoscaledRolloutPolicy == nil ||
		up.BlueGreenSettings.AutoscaledRolloutPolicy.WaitForDrainDuration != "8s" {
		t.Errorf("the run's settings: %+v, want an autoscaled rollout with waitForDrainDuration 8s", up.BlueGreenSettings)
	}
	// The wait: green starts empty, every blue node cordoned, none drained.
	nodes := groupNodes(t, testContext(t, time.Minute), gkefake.NodePoolLabel, name)
	for _, n := range nodes {
		if !n.Spec.Unschedulable {
			t.Errorf("during the wait: blue node %q not cordoned", n.Name)
		}
	}
	if on, all := g.nodesOn(t, gkeAutoscaledNew); on != 0 || all != 3 {
		t.Errorf("during the wait: %d of %d nodes on %s, want an empty green beside blue's 3", on, all, gkeAutoscaledNew)
	}
	code, out := run.wait(t, 3*time.Minute)
	if code != nodeupgrade.ExitOK || !strings.Contains(out, "succeeded") {
		t.Fatalf("the run must follow the upgrade to its end, exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "NODE_POOL_SOAKING") {
		t.Errorf("an autoscaled blue/green upgrade does not soak:\n%s", out)
	}
	if on, all := g.nodesOn(t, gkeAutoscaledNew); on != all || all != 3 {
		t.Errorf("%d of %d nodes on %s, want blue deleted and green grown to 3", on, all, gkeAutoscaledNew)
	}
	g.assertSettingsBack(t)
	assertUntouched(t, testContext(t, time.Minute), gkefake.NodePoolLabel, name)
	if v := watch.Stop(); len(v) != 0 {
		t.Errorf("PDB violations: %v", v)
	}
}

// TestGKEShortLived: a flex-start pool is upgraded short-lived, and only
// so: surge is refused at plan time; short-lived points the pool at the
// target, and nothing is drained: the running nodes stay, uncordoned.
func TestGKEShortLived(t *testing.T) {
	t.Parallel()
	const name = "gke-flex"
	g := setupGKEPool(t, name, gkePoolSpec{flexStart: true}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	refused := g.run(t, "plan", name, "--strategy", "surge", "--node-version", gkeNew)
	if refused.code != nodeupgrade.ExitUsage || !oneLine(refused.stderr) || !strings.Contains(refused.stderr, "--strategy short-lived") {
		t.Errorf("surge on a flex-start pool: want exit %d and one line naming --strategy short-lived: %s", nodeupgrade.ExitUsage, refused)
	}
	flags := []string{"--strategy", "short-lived", "--node-version", gkeNew}
	p := g.run(t, append([]string{"plan", name}, flags...)...)
	if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, "not drained") {
		t.Errorf("plan must say nothing is drained: %s", p)
	}
	if calls := g.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("plan and the refusal changed the pool: %v", calls)
	}
	r := g.run(t, append([]string{"run", name, "--yes"}, flags...)...)
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	if v := g.pool().Version; v != gkeNew {
		t.Errorf("pool at %s, want %s", v, gkeNew)
	}
	if on, all := g.nodesOn(t, gkeOld); on != all || all != 3 {
		t.Errorf("%d of %d nodes still on %s, want all 3 left running", on, all, gkeOld)
	}
	assertUntouched(t, testContext(t, time.Minute), gkefake.NodePoolLabel, name)
}

// assertSettingsBack checks the pool's upgrade settings and drain config
// are as before the run.
func (g *gkePool) assertSettingsBack(t *testing.T) {
	t.Helper()
	p := g.pool()
	got, _ := p.UpgradeSettings.MarshalJSON()
	want, _ := g.before.UpgradeSettings.MarshalJSON()
	gotDrain, _ := p.NodeDrainConfig.MarshalJSON()
	wantDrain, _ := g.before.NodeDrainConfig.MarshalJSON()
	if string(got) != string(want) || string(gotDrain) != string(wantDrain) {
		t.Errorf("settings %s %s, want them restored to %s %s", got, gotDrain, want, wantDrain)
	}
}
