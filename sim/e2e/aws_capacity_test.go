package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsprovider "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestAWSLaunchRefusedStopsBeforeAnyDrain: EC2 runs out of the group's
// instance type in one zone after the plan (nothing the plan can read),
// so the scale-up's launches there fail (InsufficientInstanceCapacity in
// the group's scaling activities). The run stops at once with
// NodeCreationFailure, naming the cause and the zone that launched,
// records it, and leaves no node tainted or cordoned; abort puts the
// group back.
func TestAWSLaunchRefusedStopsBeforeAnyDrain(t *testing.T) {
	t.Parallel()
	const name = "aws-refused"
	g := setupAWSGroupSpec(t, awsfake.NodeGroupSpec{Name: name, Size: 2, Min: 1, Max: 3, ImageID: "ami-old",
		Subnets: []string{awsfake.Subnet("us-east-1a"), awsfake.Subnet("us-east-1b")}},
		awsfake.Options{}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	g.srv.SetNoCapacity("us-east-1a", "m5.large", true)
	start := time.Now()
	r := g.run(t, "run", name, "--ami", "ami-new", "--node-ready-timeout", "3m", "--post-drain-wait", "0s", "--yes")
	took := time.Since(start)
	if r.code != nodeupgrade.ExitNodeCreation || !oneLine(r.stderr) {
		t.Fatalf("want exit %d (NodeCreationFailure) in one line, got %s", nodeupgrade.ExitNodeCreation, r)
	}
	for _, want := range []string{`Auto Scaling group "aws-refused" cannot launch in zones "us-east-1a": InsufficientInstanceCapacity: We currently do not have sufficient m5.large capacity`,
		`it launched in zones "us-east-1b" since the scale-up`, "nothing was drained", "--reserve-surge", "kubectl nodeupgrade abort"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the failure does not say %q: %q", want, r.stderr)
		}
	}
	if took > 2*time.Minute {
		t.Errorf("the run took %s: it waited for the timeout rather than stop at the refusal", took)
	}
	ctx := testContext(t, 3*time.Minute)
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if n.Labels[awsprovider.TemplateVersionLabel] == "1" && (n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == groupKey })) {
			t.Errorf("old node %q was tainted or cordoned", n.Name)
		}
	}
	rec := g.record(t)
	if lf := rec.Cloud.LaunchFailure; lf == nil || lf.Code != "InsufficientInstanceCapacity" || !slices.Equal(lf.Zones, []string{"us-east-1a"}) || !slices.Equal(lf.Launched, []string{"us-east-1b"}) {
		t.Errorf("record's launch failure %+v: want InsufficientInstanceCapacity in us-east-1a, launched in us-east-1b", rec.Cloud.LaunchFailure)
	}
	if a := g.run(t, "abort", name); a.code != nodeupgrade.ExitOK || !strings.Contains(a.stdout, "is back in service") {
		t.Fatalf("abort: %s", a)
	}
	g.stableAtOriginalSizes(t, ctx)
	if n := len(groupNodes(t, ctx, groupKey, name)); n != int(g.original.Desired) {
		t.Errorf("group has %d nodes, want %d", n, g.original.Desired)
	}
	assertUntouched(t, ctx, groupKey, name)
}

// TestAWSReserveSurge: --reserve-surge reserves the scale-up before the
// run changes the group, the scale-up's launches run in the reservations,
// and nothing stays reserved: at the end, after a kill and a re-run (the
// reservation found by its token, none made twice), after abort; a zone
// without the capacity refuses the run before anything changes.
func TestAWSReserveSurge(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		name string
		// noCapacity takes EC2's capacity of m5.large away in us-east-1a.
		noCapacity bool
		// kill kills the first run once it reserved; then is what
		// follows: "rerun" or "abort".
		kill, then string
	}{
		{name: "reserved, consumed, released"},
		{name: "no capacity: refused up front", noCapacity: true},
		{name: "killed once reserved, run again", kill: "reserved ", then: "rerun"},
		{name: "killed once reserved, aborted", kill: "reserved ", then: "abort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "aws-reserve-" + string(rune('a'+i))
			g := setupAWSGroup(t, name, 2, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
			g.srv.SetNoCapacity("us-east-1a", "m5.large", tc.noCapacity)
			args := []string{"run", name, "--ami", "ami-new", "--reserve-surge", "--post-drain-wait", "0s", "--yes"}
			switch {
			case tc.noCapacity:
				r := g.run(t, args...)
				if r.code != nodeupgrade.ExitFailure || !oneLine(r.stderr) || !strings.Contains(r.stderr, `cannot reserve 1 m5.large in zone "us-east-1a" for the scale-up (--reserve-surge): InsufficientInstanceCapacity`) ||
					!strings.Contains(r.stderr, "the group was not raised") {
					t.Fatalf("want exit %d naming the zone without capacity, got %s", nodeupgrade.ExitFailure, r)
				}
				g.assertAsBefore(t)
			case tc.kill != "":
				if killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, args...), killPoint{name: tc.name, marker: tc.kill}); !killed {
					t.Fatalf("the run ended before it reserved:\n%s", out)
				}
				if tc.then == "abort" {
					if a := g.run(t, "abort", name); a.code != nodeupgrade.ExitOK || !strings.Contains(a.stdout, "is back in service") {
						t.Fatalf("abort: %s", a)
					}
					g.assertAsBefore(t)
					break
				}
				fallthrough
			default:
				planned := ""
				if tc.then == "" {
					planned = g.run(t, "plan", name, "--ami", "ami-new", "--reserve-surge").stdout
					if rs := g.srv.Reservations(); len(rs) > 0 {
						t.Fatalf("plan reserved %+v", rs)
					}
				}
				if r := g.run(t, args...); r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "released capacity reservation") {
					t.Fatalf("run: %s", r)
				}
				g.assertFinished(t)
				assertPlannedReservations(t, g, planned)
			}
			assertNothingReserved(t, g, tc.noCapacity || tc.then == "abort")
		})
	}
}

// assertPlannedReservations checks the plan listed each reservation the
// run made, by zone, type and count ("" for no plan).
func assertPlannedReservations(t *testing.T, g *awsGroup, planned string) {
	t.Helper()
	if planned == "" {
		return
	}
	if !strings.Contains(planned, "--reserve-surge reserves ") {
		t.Errorf("the plan does not list the reservations:\n%s", planned)
	}
	for _, r := range g.srv.Reservations() {
		if want := fmt.Sprintf("%d %s in zone %s", r.Total, r.InstanceType, r.Zone); !strings.Contains(planned, want) {
			t.Errorf("the plan does not list %q:\n%s", want, planned)
		}
	}
}

// assertNothingReserved checks every reservation is cancelled, one per
// zone at most (none made twice), and, unless the run never launched,
// each used by as many of the scale-up's launches as it held.
func assertNothingReserved(t *testing.T, g *awsGroup, unused bool) {
	t.Helper()
	zones := map[string]bool{}
	for _, r := range g.srv.Reservations() {
		if r.State != "cancelled" || zones[r.Zone] || r.Match != "open" {
			t.Errorf("reservation %+v: want one open reservation a zone, cancelled", r)
		}
		zones[r.Zone] = true
		if !unused && r.Launched != r.Total {
			t.Errorf("reservation %+v: %d of its %d places used by the scale-up", r, r.Launched, r.Total)
		}
	}
	if len(zones) == 0 && !unused {
		t.Errorf("nothing was reserved")
	}
}
