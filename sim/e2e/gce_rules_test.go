package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// TestGCELaunchRefusedStopsBeforeAnyDrain: Compute cannot create the
// scale-up's instances after the plan (nothing the plan can read): the
// project's CPUS quota in every zone, or one zone's capacity
// (lastAttempt.errors of the managed instances). The run stops at once
// with NodeCreationFailure naming the zones, Compute's code and words and
// the zones that launched, records it, and leaves no node tainted or
// cordoned; abort drops the instances that cannot come and puts the group
// back with the capacity still short.
func TestGCELaunchRefusedStopsBeforeAnyDrain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, zone, code string
		args             []string
		want             []string
		wantZones        []string
	}{
		{name: "quota", code: gcefake.QuotaExceeded, args: []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0"},
			want: []string{"QUOTA_EXCEEDED: Quota 'CPUS' exceeded", "raise the quota Compute names"}},
		{name: "zone", zone: "us-central1-a", code: gcefake.ZoneResourcePoolExhausted, args: []string{"--strategy", "eks"},
			want:      []string{`cannot launch in zones "us-central1-a": ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/`, `it launched in zones "us-central1-b", "us-central1-c" since the scale-up`},
			wantZones: []string{"us-central1-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "gce-refused-" + tc.name
			g := setupGCEGroup(t, name, 6, gceApps()...)
			g.srv.FailCreations(tc.zone, tc.code)
			start := time.Now()
			r := g.run(t, append([]string{"run", name, "--image", "img-new", "--node-ready-timeout", "10m", "--yes"}, tc.args...)...)
			if r.code != nodeupgrade.ExitNodeCreation || !oneLine(r.stderr) {
				t.Fatalf("want exit %d (NodeCreationFailure) in one line: %s", nodeupgrade.ExitNodeCreation, r)
			}
			for _, want := range append(tc.want, "nothing was drained", "kubectl nodeupgrade abort") {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("the failure does not say %q: %q", want, r.stderr)
				}
			}
			if took := time.Since(start); took > 3*time.Minute {
				t.Errorf("the run took %s to see the refusal", took)
			}
			assertUntouched(t, testContext(t, time.Minute), kopsKey, name)
			lf := statusRecord(t, g.run, name).Cloud.LaunchFailure
			if lf == nil || lf.Code != tc.code || (tc.wantZones != nil && !slices.Equal(lf.Zones, tc.wantZones)) {
				t.Errorf("record's launch failure %+v: want %s in %v", lf, tc.code, tc.wantZones)
			}
			a := g.run(t, "abort", name)
			if a.code != nodeupgrade.ExitOK || !strings.Contains(a.stdout, "cannot be created") {
				t.Fatalf("abort: want exit %d dropping the machines that cannot be created: %s", nodeupgrade.ExitOK, a)
			}
			g.srv.FailCreations(tc.zone, "")
			g.assertAborted(t)
		})
	}
}

// TestGCEBlueGreenRefusedBehindABackendService: blue/green would leave
// green out of the load balancer and could not delete blue; plan and run
// refuse it naming the backend service, with nothing changed.
func TestGCEBlueGreenRefusedBehindABackendService(t *testing.T) {
	t.Parallel()
	const name = "gce-lb"
	g := setupGCEGroup(t, name, 3)
	if err := g.srv.AddBackendService(gceProject, "", "web", g.keys[0]); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"plan", "run"} {
		r := g.run(t, cmd, name, "--strategy", "blue-green", "--image", "img-new", "--yes")
		if r.code != nodeupgrade.ExitUsage || !strings.Contains(r.stderr, `backend service "projects/sim-project/global/backendServices/web"`) {
			t.Fatalf("%s: want exit %d naming the backend service: %s", cmd, nodeupgrade.ExitUsage, r)
		}
	}
	g.assertUnchanged(t, 3)
}
