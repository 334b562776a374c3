package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// killStrategy is how a strategy's run is started on a group of three
// nodes, and how its end is checked.
type killStrategy struct {
	name string
	args []string
	// blueGreen: the group ends as its green, name-v2, and blue is gone.
	blueGreen bool
	// autoscaler: green grows by the cluster autoscaler.
	autoscaler bool
}

var killStrategies = map[string]killStrategy{
	"eks":   {name: "eks", args: []string{"--max-unavailable", "1"}},
	"surge": {name: "surge", args: []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0"}},
	"blue-green": {name: "blue-green", blueGreen: true,
		args: []string{"--strategy", "blue-green", "--batch-node-count", "1", "--batch-soak", "1s", "--node-pool-soak", "1s"}},
	"autoscaled-blue-green": {name: "autoscaled-blue-green", blueGreen: true, autoscaler: true,
		args: []string{"--strategy", "autoscaled-blue-green", "--wait-period", "3s"}},
}

// The ways back after a kill.
const (
	recoverByRun   = "run"   // the same command again
	recoverByAbort = "abort" // abort, then a fresh run at once
)

// TestKilledRunOfEveryStrategy kills a run with SIGKILL, at a point of its
// output or at a random moment (seeded, logged), puts it right by running
// the same command again or by abort followed at once by a fresh run, and
// then starts the finished run once more, which has nothing to do: every
// time 0 PDB violations, no taint, cordon or annotation left, the sizes,
// the groups and the launch template versions as an uninterrupted run
// leaves them (issue 32).
func TestKilledRunOfEveryStrategy(t *testing.T) {
	t.Parallel()
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 32))
	random := func() killPoint {
		return killPoint{after: time.Second + time.Duration(rng.Int64N(int64(15*time.Second)))}
	}
	cases := []struct {
		strategy, recovery string
		kp                 killPoint
		// asBefore: abort leaves the group as before the run, the run's
		// new nodes gone, the old ones only, launching the old version.
		asBefore bool
		// blueGone: the recovery waits for the autoscaler to remove every
		// blue node, so that the run after has none left to drain.
		blueGone bool
	}{
		// Killed with every node on the new version: abort must not point
		// the group back at the old one, or the fresh run finds nothing to
		// do and the group launches the old image.
		{strategy: "eks", recovery: recoverByAbort, kp: killPoint{name: "scale-down", marker: "scale-down: removing node"}},
		{strategy: "eks", recovery: recoverByAbort, kp: random()},
		// Killed right after the scale-up (the new machines launching) or
		// with its nodes Ready, none drained yet: abort's scale-down
		// removes the run's new nodes, not the old ones, and the group is
		// back as it was, launching the old version again.
		{strategy: "eks", recovery: recoverByAbort, kp: killPoint{name: "scaled-up", marker: "for the new nodes of"}, asBefore: true},
		{strategy: "eks", recovery: recoverByAbort, kp: killPoint{name: "new-nodes-ready", marker: "new nodes Ready in"}, asBefore: true},
		{strategy: "surge", recovery: recoverByRun, kp: random()},
		{strategy: "surge", recovery: recoverByAbort, kp: random()},
		{strategy: "surge", recovery: recoverByAbort, kp: killPoint{name: "scaled-up", marker: "for the new nodes of"}, asBefore: true},
		{strategy: "surge", recovery: recoverByAbort, kp: killPoint{name: "second-batch", marker: "batch 2/"}},
		{strategy: "blue-green", recovery: recoverByRun, kp: random()},
		{strategy: "blue-green", recovery: recoverByAbort, kp: random()},
		{strategy: "autoscaled-blue-green", recovery: recoverByRun, kp: random()},
		// Killed with blue drained, and blue's nodes gone before the run
		// after: that run has nothing to drain but blue to delete.
		{strategy: "autoscaled-blue-green", recovery: recoverByRun, kp: killPoint{name: "blue-drained", marker: "workloads to be Ready again"}, blueGone: true},
		// Killed mid-drain: the fresh run right after abort must not find
		// the evicted workloads still recovering.
		{strategy: "autoscaled-blue-green", recovery: recoverByAbort, kp: killPoint{name: "drain", marker: "draining"}},
	}
	for i := range cases {
		if cases[i].kp.name == "" {
			cases[i].kp.name = fmt.Sprintf("random-%s", cases[i].kp.after.Round(100*time.Millisecond))
		}
	}
	t.Logf("random kill points from seed %d", seed)
	for i, tc := range cases {
		st := killStrategies[tc.strategy]
		t.Run(fmt.Sprintf("%s/%s/%s", tc.strategy, tc.kp.name, tc.recovery), func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("kill-%d", i)
			g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
			ctx := testContext(t, 10*time.Minute)
			if st.autoscaler {
				go func() {
					_ = g.srv.RunAutoscaler(ctx, client, awsfake.AutoscalerOptions{
						ScaleUpGroups: []string{name + "-v2"}, ScaleDownGroups: []string{name}, ScaleDownDelay: 2 * time.Second, Namespaces: []string{name},
					})
				}()
			}
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			args := append(append([]string{"run", name, "--ami", "ami-new", "--post-drain-wait", "0s"}, st.args...), "--yes")
			killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, args...), tc.kp)
			t.Logf("killed=%v at %s; output up to the kill:\n%s", killed, tc.kp.name, out)
			if tc.kp.marker != "" && !killed {
				t.Fatalf("the run ended before the kill point")
			}
			if tc.blueGone {
				g.waitBlueGone(t)
			}
			if tc.recovery == recoverByAbort {
				g.abortKilled(t)
			}
			if tc.asBefore {
				g.assertAsBefore(t)
			}
			r := g.run(t, args...)
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("%s after the kill: %s", tc.recovery, r)
			}
			t.Logf("the run after the kill:\n%s", r.stdout)
			g.assertKillRecovered(t, st)
			// The finished run started again has nothing to do.
			again := g.run(t, args...)
			if again.code != nodeupgrade.ExitOK || !strings.Contains(again.stdout, "Nothing to do") {
				t.Errorf("the finished run started again: %s", again)
			}
			g.assertKillRecovered(t, st)
			assertNoViolations(t, watcher.Stop())
		})
	}
}

// killSeed is the seed of the random kill points: KILL_SEED when set, so
// that a failure logged with its seed can be run again, else the clock.
func killSeed(t *testing.T) int64 {
	s := os.Getenv("KILL_SEED")
	if s == "" {
		return time.Now().UnixNano()
	}
	seed, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("KILL_SEED=%q: %v", s, err)
	}
	return seed
}

// waitBlueGone waits for the autoscaler to remove every instance of blue,
// and their nodes to leave.
func (g *awsGroup) waitBlueGone(t *testing.T) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	err := g.srv.WaitFor(ctx, g.name, func(gr awsfake.Group) bool { return len(gr.Instances) == 0 })
	if err != nil {
		t.Fatalf("blue %q never lost its last instance: %v", g.name, err)
	}
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		for _, n := range groupNodes(t, ctx, groupKey, g.name) {
			if n.Labels["eks.amazonaws.com/nodegroup-image"] == "ami-old" {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("blue's nodes never left: %v", err)
	}
}

// abortKilled aborts the killed run. A run killed while it deleted blue
// cannot be aborted: the run after finishes it.
func (g *awsGroup) abortKilled(t *testing.T) {
	t.Helper()
	r := g.run(t, "abort", g.name)
	switch {
	case r.code == nodeupgrade.ExitUsage && strings.Contains(r.stderr, "deleting blue"):
		t.Logf("killed while deleting blue; abort refused: %s", r.stderr)
	case r.code != nodeupgrade.ExitOK:
		t.Fatalf("abort: %s", r)
	default:
		t.Logf("abort:\n%s", r.stdout)
		assertUntouched(t, testContext(t, time.Minute), groupKey, g.name)
	}
}

// assertAsBefore checks the group is as before the run: its sizes, the
// old default, and every instance on it (the run's new ones gone).
func (g *awsGroup) assertAsBefore(t *testing.T) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	gr := g.stableAtOriginalSizes(t, ctx)
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion != "1" {
			t.Errorf("after abort: instance %s runs version %s, want 1 (the run's new instances gone, the old ones kept)", in.ID, in.LaunchTemplateVersion)
		}
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); lt.DefaultVersion != 1 {
		t.Errorf("after abort: launch template default %d, want 1 (as before the run)", lt.DefaultVersion)
	}
	if nodes := groupNodes(t, ctx, groupKey, g.name); len(nodes) != int(g.original.Desired) {
		t.Errorf("after abort: %d nodes, want %d", len(nodes), g.original.Desired)
	}
}

// assertKillRecovered checks the end of an upgrade to launch template
// version 2 by st: in place, as assertFinished; blue/green, green serving
// as the only group, and the template's default its version.
func (g *awsGroup) assertKillRecovered(t *testing.T, st killStrategy) {
	t.Helper()
	if !st.blueGreen {
		g.assertFinished(t)
		return
	}
	green := g.name + "-v2"
	if st.autoscaler {
		g.assertAutoscaledGreenServes(t, green)
	} else {
		g.assertGreenServes(t, green)
	}
	if groups := g.srv.Groups(); !slices.Equal(groups, []string{green}) {
		t.Errorf("Auto Scaling groups %v, want only green %q", groups, green)
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 2 || lt.DefaultVersion != 2 {
		t.Errorf("launch template has %d versions, default %d; want 2 (one made by the run, made the default)", len(lt.Versions), lt.DefaultVersion)
	}
	ctx := testContext(t, time.Minute)
	assertUntouched(t, ctx, groupKey, g.name)
	if err := scenario.WaitAppsReady(ctx, client, g.name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
}

// assertAutoscaledGreenServes is assertGreenServes for a green the
// autoscaler grew: as many nodes as its pods need, every one on version 2.
func (g *awsGroup) assertAutoscaledGreenServes(t *testing.T, green string) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	if err := g.srv.WaitStable(ctx, green); err != nil {
		t.Fatal(err)
	}
	gr, _ := g.srv.Group(green)
	nodes := groupNodes(t, ctx, groupKey, g.name)
	if len(nodes) == 0 || len(nodes) != len(gr.Instances) {
		t.Errorf("the node group has %d nodes, green %d instances", len(nodes), len(gr.Instances))
	}
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion != "2" {
			t.Errorf("green instance %s runs version %s, want 2", in.ID, in.LaunchTemplateVersion)
		}
	}
	for _, n := range nodes {
		if _, ok := n.Annotations[scaleDownDisabled]; ok {
			t.Errorf("node %q still has %s", n.Name, scaleDownDisabled)
		}
	}
}
