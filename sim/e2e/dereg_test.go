package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// A group attached to a target group and a Classic Load Balancer keeps
// its instances there, cordoned or not, until they are deregistered: the
// run deregisters each drained node and terminates its instance only once
// neither holds it (the target group's deregistration delay, the classic
// one's connection draining, have passed). When that takes longer than
// --deregistration-timeout the run stops with nothing terminated, and
// running it again finishes.
func TestAWSLoadBalancersLetGoBeforeTermination(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		size    int32
		tgDelay time.Duration
		timeout string // --deregistration-timeout of the first run
	}{
		{name: "aws-dereg", size: 3, tgDelay: 3 * time.Second},
		{name: "aws-dereg-timeout", size: 2, tgDelay: 8 * time.Second, timeout: "1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := tc.name
			g := setupAWSGroup(t, name, tc.size, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
			ctx := testContext(t, 4*time.Minute)
			tg := g.srv.CreateTargetGroup(name+"-tg", 30080, tc.tgDelay)
			g.srv.CreateClassicLoadBalancer(name+"-clb", 2*time.Second)
			if err := g.srv.AttachTargetGroups(name, tg); err != nil {
				t.Fatal(err)
			}
			if err := g.srv.AttachLoadBalancers(name, name+"-clb"); err != nil {
				t.Fatal(err)
			}
			args := []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--ami", "ami-new", "--seed", "3", "--post-drain-wait", "0s"}
			pl := g.run(t, append([]string{"plan", name}, args...)...)
			wantPlan := []string{"Load balancers:", "target group " + name + "-tg (delay " + tc.tgDelay.String() + ")", "classic load balancer " + name + "-clb (delay 2s)"}
			for _, want := range wantPlan {
				if pl.code != nodeupgrade.ExitOK || !strings.Contains(pl.stdout, want) {
					t.Fatalf("plan does not say %q: %s", want, pl)
				}
			}
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			run := append(append([]string{"run", name}, args...), "--yes")
			if tc.timeout != "" {
				r := g.run(t, append(run, "--deregistration-timeout", tc.timeout)...)
				if r.code != nodeupgrade.ExitFailure || !strings.Contains(r.stderr, "--deregistration-timeout") || !strings.Contains(r.stderr, `target group "`+name+`-tg" still holds it`) {
					t.Fatalf("want exit %d naming the target group and --deregistration-timeout: %s", nodeupgrade.ExitFailure, r)
				}
				t.Logf("first run stopped: %s", strings.TrimSpace(r.stderr))
				if n := len(terminated(g.srv, name)); n != 0 {
					t.Fatalf("the stopped run terminated %d instances", n)
				}
			}
			r := g.run(t, run...)
			violations := watcher.Stop()
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run failed: %s", r)
			}
			assertNoViolations(t, violations)
			waits := 0
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.Contains(l, "waiting for target group") || strings.Contains(l, "waiting for classic load balancer") {
					waits++
					if waits == 1 {
						t.Logf("%s", l)
					}
				}
			}
			if waits == 0 {
				t.Errorf("the run does not say it waits for the load balancers:\n%s", r.stdout)
			}
			ts := terminated(g.srv, name)
			if len(ts) < int(tc.size) {
				t.Errorf("%d instances terminated, want at least %d (the old ones)", len(ts), tc.size)
			}
			for _, term := range ts {
				if len(term.Held) > 0 {
					t.Errorf("instance %s terminated at %s while %s still held it\n%s", term.Instance, term.At.Format("15:04:05.000"), strings.Join(term.Held, ", "), r.stdout)
				}
			}
			gr, _ := g.srv.Group(name)
			if gr.Desired != g.original.Desired || gr.Max != g.original.Max || gr.Min != g.original.Min {
				t.Errorf("sizes after the run: min %d desired %d max %d, want %d %d %d", gr.Min, gr.Desired, gr.Max, g.original.Min, g.original.Desired, g.original.Max)
			}
		})
	}
}

// terminated are the terminations of the group's instances.
func terminated(srv *awsfake.Server, group string) []awsfake.Termination {
	var out []awsfake.Termination
	for _, t := range srv.Terminations() {
		if t.Group == group {
			out = append(out, t)
		}
	}
	return out
}
