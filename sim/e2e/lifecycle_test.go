package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// A group with a terminating lifecycle hook (3 s heartbeat, CONTINUE when
// it times out; nobody completes it) and a warm pool of two stopped
// instances goes to a new AMI by surge: every instance the run terminates
// is held in Terminating:Wait, and the run waits for each to be gone,
// naming the hook, without completing it; the warm instances are neither
// terminated nor awaited as nodes. An outdated warm pool refuses the run;
// past the check, the instance a surge draws from it stops the run.
func TestAWSLifecycleHookAndWarmPool(t *testing.T) {
	t.Parallel()
	const name = "aws-lifecycle"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	if err := g.srv.PutLifecycleHook(awsfake.LifecycleHook{Group: name, Name: "drain-hook", Transition: awsfake.TransitionTerminating, HeartbeatTimeout: 3, DefaultResult: "CONTINUE"}); err != nil {
		t.Fatal(err)
	}
	if err := g.srv.PutWarmPool(name, 2, -1, "Stopped"); err != nil {
		t.Fatal(err)
	}
	warm := waitWarmPool(t, g.srv, name, "1")
	old, _ := g.srv.Group(name)

	args := []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--ami", "ami-new", "--seed", "3", "--terminate-timeout", "2m"}
	pl := g.run(t, append([]string{"plan", name}, args...)...)
	for _, want := range []string{`held by lifecycle hooks "drain-hook" (heartbeat 3 s)`, "has a warm pool of 2 instances (Stopped, min size 2)", "2 of them were launched from another launch template version",
		"outdated-warm-pool"} {
		if pl.code != nodeupgrade.ExitOK || !strings.Contains(pl.stdout, want) {
			t.Fatalf("plan does not say %q: %s", want, pl)
		}
	}
	// In AWS the surge node would come out of the warm pool, on the old
	// image: the run is refused before anything changes.
	if r := g.run(t, append(append([]string{"run", name}, args...), "--yes")...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "outdated-warm-pool") {
		t.Fatalf("run with an outdated warm pool: want exit %d naming outdated-warm-pool, got %s", nodeupgrade.ExitBlockers, r)
	}
	if gr, _ := g.srv.Group(name); gr.Desired != old.Desired || gr.Max != old.Max || gr.LaunchTemplateVersion != old.LaunchTemplateVersion {
		t.Fatalf("the refused run changed the group: %+v, was %+v", gr.GroupSpec, old.GroupSpec)
	}
	assertUntouched(t, ctx, groupKey, name)

	// Past the check, the surge takes a warm instance (Auto Scaling draws
	// a scale-out from the pool first) on the old image: the run stops
	// there, naming it, without waiting out --node-ready-timeout and with
	// nothing drained.
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	ignored := g.run(t, append(append([]string{"run", name}, args...), "--ignore-check", "outdated-warm-pool", "--node-ready-timeout", "2m", "--yes")...)
	if ignored.code != nodeupgrade.ExitNodeCreation || !strings.Contains(ignored.stderr, "launches no more") ||
		!slices.ContainsFunc(warm, func(w awsfake.Instance) bool { return strings.Contains(ignored.stderr, w.ID) }) {
		t.Fatalf("run past outdated-warm-pool: want exit %d, the group launching no more and the warm instance drawn named, got %s", nodeupgrade.ExitNodeCreation, ignored)
	}
	var drawn []string
	during, _ := g.srv.Group(name)
	for _, in := range during.Instances {
		if slices.ContainsFunc(warm, func(w awsfake.Instance) bool { return w.ID == in.ID }) {
			drawn = append(drawn, in.ID)
		}
	}
	if len(drawn) != 1 {
		t.Fatalf("group after the stopped run %+v: want one instance drawn from the warm pool %+v", during.Instances, warm)
	}
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if n.Spec.Unschedulable {
			t.Errorf("node %q is cordoned after a run that stopped before draining", n.Name)
		}
	}

	// The way out: a warm pool of the new version (deleted and put back,
	// it launches from the version the group now uses), and the run again.
	if err := g.srv.DeleteWarmPool(name); err != nil {
		t.Fatal(err)
	}
	if err := g.srv.PutWarmPool(name, 2, -1, "Stopped"); err != nil {
		t.Fatal(err)
	}
	waitWarmPool(t, g.srv, name, "2")
	r := g.run(t, append(append([]string{"run", name}, args...), "--post-drain-wait", "0s", "--yes")...)
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	assertNoViolations(t, violations)

	// Every old instance was held and let go by the hook's timeout, not
	// by the run; the run ended only once each was gone.
	held := map[string]bool{}
	for _, a := range g.srv.LifecycleActions() {
		if !a.TimedOut {
			t.Errorf("the hook's action on %s was completed (%s), not timed out: the run must not complete another system's hook", a.Instance, a.Result)
		}
		held[a.Instance] = true
	}
	for _, in := range append(old.Instances, awsfake.Instance{ID: drawn[0]}) {
		if !held[in.ID] {
			t.Errorf("old instance %s was never held by the hook", in.ID)
		}
		if !strings.Contains(r.stdout, "waiting for "+in.ID+` to terminate: held by lifecycle hook "drain-hook" (Terminating:Wait, heartbeat 3 s)`) {
			t.Errorf("run output does not name the hook holding %s:\n%s", in.ID, r.stdout)
		}
	}
	end, _ := g.srv.Group(name)
	for _, in := range end.Instances {
		if in.LaunchTemplateVersion == "1" {
			t.Errorf("old instance %s is still %s when the run ended: it did not wait for it", in.ID, in.Lifecycle)
		}
	}
	if end.Min != g.original.Min || end.Desired != g.original.Desired || end.Max != g.original.Max {
		t.Errorf("sizes after the run min %d, desired %d, max %d; want %d, %d, %d", end.Min, end.Desired, end.Max, g.original.Min, g.original.Desired, g.original.Max)
	}
	// The warm pool's own instances are never removed or awaited: those
	// still in it are on the new version, and no progress line names them.
	for _, w := range g.srv.WarmPool(name) {
		if w.LaunchTemplateVersion != "2" {
			t.Errorf("warm instance %+v after the run, want version 2", w)
		}
		for line := range strings.SplitSeq(r.stdout, "\n") {
			if strings.Contains(line, w.ID) {
				t.Errorf("run output names warm instance %s (awaited or removed?): %s", w.ID, line)
			}
		}
	}
}

// waitWarmPool waits until the group's warm pool holds its 2 instances,
// stopped and launched from version, and returns them.
func waitWarmPool(t *testing.T, srv *awsfake.Server, group, version string) []awsfake.Instance {
	t.Helper()
	var warm []awsfake.Instance
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		warm = srv.WarmPool(group)
		if len(warm) == 2 && !slices.ContainsFunc(warm, func(w awsfake.Instance) bool {
			return w.Lifecycle != awsfake.LifecycleWarmedStopped || w.LaunchTemplateVersion != version
		}) {
			return warm
		}
	}
	t.Fatalf("warm pool %+v, want 2 stopped instances of version %s", warm, version)
	return nil
}
