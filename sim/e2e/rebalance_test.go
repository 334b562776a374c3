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

// A surge run on three nodes in three zones would leave the group
// unbalanced: a batch's surge node goes to the emptiest zone (ties to the
// first) and its old node leaves its own zone with the desired size
// lowered (2/1/0). AZRebalance would then launch in the empty zone and
// terminate an instance nobody drained. The run keeps it suspended until
// its end, evens the zones out itself (one node more, one drained off the
// fullest zone) before it resumes it, and leaves alone a suspension that
// was there before it.
func TestAWSAZRebalanceSuspendedForTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		suspendedBefore bool
		wantPlan        string
	}{
		{name: "aws-rebalance", wantPlan: "AZRebalance suspended from the first termination"},
		{name: "aws-rebalance-held", suspendedBefore: true, wantPlan: "AZRebalance suspended before the run: left suspended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := tc.name
			g := setupAWSGroupWith(t, name, 3, awsfake.Options{AZRebalance: true},
				scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)},
			)
			ctx := testContext(t, 5*time.Minute)
			if tc.suspendedBefore {
				if err := g.srv.Suspend(name, awsfake.AZRebalance); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--ami", "ami-new", "--seed", "5"}
			pl := g.run(t, append([]string{"plan", name}, args...)...)
			if pl.code != nodeupgrade.ExitOK || !strings.Contains(pl.stdout, "Rebalancing:") || !strings.Contains(pl.stdout, tc.wantPlan) {
				t.Fatalf("plan does not say %q: %s", tc.wantPlan, pl)
			}
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			r := g.run(t, append(append([]string{"run", name}, args...), "--post-drain-wait", "0s", "--yes")...)
			violations := watcher.Stop()
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run failed: %s", r)
			}
			assertNoViolations(t, violations)
			// The run suspends AZRebalance once and resumes it at its
			// end; every round of it comes after that.
			var changes []bool
			var resumed time.Time
			for _, c := range g.srv.ProcessChanges() {
				if c.Group == name && c.Process == awsfake.AZRebalance {
					changes = append(changes, c.Suspended)
					if !c.Suspended {
						resumed = c.At
					}
				}
			}
			wantChanges := []bool{true, false}
			if tc.suspendedBefore {
				wantChanges = []bool{true} // the test's own suspension
			}
			if !slices.Equal(changes, wantChanges) {
				t.Errorf("AZRebalance suspended (true) and resumed (false) as %v, want %v\n%s", changes, wantChanges, r.stdout)
			}
			for _, round := range g.srv.Rebalances() {
				if resumed.IsZero() || round.At.Before(resumed) {
					t.Errorf("AZRebalance terminated instance %s, which nobody drained, during the run (resumed at %s): %+v\n%s", round.Terminated, resumed, round, r.stdout)
				}
			}
			suspended := slices.Contains(g.srv.Suspended(name), awsfake.AZRebalance)
			if suspended != tc.suspendedBefore {
				t.Errorf("AZRebalance suspended after the run: %v, want %v", suspended, tc.suspendedBefore)
			}
			if tc.suspendedBefore {
				if strings.Contains(r.stdout, "resumed AZRebalance") {
					t.Errorf("the run resumed a process suspended before it:\n%s", r.stdout)
				}
				return
			}
			if !strings.Contains(r.stdout, "suspended AZRebalance") || !strings.Contains(r.stdout, "resumed AZRebalance") {
				t.Errorf("run output does not say it suspended and resumed AZRebalance:\n%s", r.stdout)
			}
			// Resumed on even zones, the process has nothing to do: no
			// instance nobody drained is terminated after the run either.
			if !strings.Contains(r.stdout, "zones of Auto Scaling group") {
				t.Errorf("run output does not say it evened the zones out (did the surge leave them even?):\n%s", r.stdout)
			}
			grp, _ := g.srv.Group(name)
			perZone := map[string]int{}
			for _, in := range grp.Instances {
				if in.Lifecycle == awsfake.LifecycleInService || in.Lifecycle == awsfake.LifecyclePending {
					perZone[in.Zone]++
				}
			}
			lo, hi := len(grp.Instances), 0
			for _, z := range grp.Zones {
				lo, hi = min(lo, perZone[z]), max(hi, perZone[z])
			}
			if hi-lo > 1 {
				t.Errorf("the run left zones uneven (%v over %v): AZRebalance, resumed, terminates an instance nobody drained\n%s", perZone, grp.Zones, r.stdout)
			}
			if rounds := g.srv.Rebalances(); len(rounds) > 0 {
				t.Errorf("AZRebalance terminated instances nobody drained: %+v", rounds)
			}
		})
	}
}
