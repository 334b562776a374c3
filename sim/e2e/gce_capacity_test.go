package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestGCESurgeOverQuota: a surge the region's CPUS quota cannot hold, or a
// zone of the group that does not offer its machine type, is refused by
// plan --detailed-exitcode and by run, naming the quota or zone, what is
// needed and free and the surge that fits, with nothing changed; the
// run with that surge finishes (the fake holds its creations to the
// quota too).
func TestGCESurgeOverQuota(t *testing.T) {
	t.Parallel()
	const name = "gce-surge-quota"
	g := setupGCEGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	// 3 e2-standard-4 run (4 vCPUs each): 12 of 16 used, room for 1 more.
	if err := g.srv.SetQuota(gceProject, "us-central1", "CPUS", 16); err != nil {
		t.Fatal(err)
	}
	over := []string{name, "--strategy", "surge", "--max-surge", "2", "--max-unavailable", "0", "--image", "img-new"}
	pl := g.run(t, append([]string{"plan", "--detailed-exitcode"}, over...)...)
	for _, want := range []string{"insufficient-quota", "quota CPUS of region us-central1", "need 8 vCPUs", "which has 4 free of its 16", "--max-surge 1 fits"} {
		if pl.code != nodeupgrade.ExitBlockers || !strings.Contains(pl.stdout+pl.stderr, want) {
			t.Fatalf("plan must exit %d naming %q: %s", nodeupgrade.ExitBlockers, want, pl)
		}
	}
	js := g.run(t, append([]string{"plan", "-o", "json"}, over...)...)
	var saved plan.Plan
	if err := json.Unmarshal([]byte(js.stdout), &saved); err != nil || saved.Capacity == nil || len(saved.Capacity.Quotas) == 0 ||
		saved.Capacity.Quotas[0].Scope != "gcp/"+gceProject+"/us-central1/CPUS" || saved.Capacity.InstanceType != "e2-standard-4" {
		t.Fatalf("plan -o json must carry the CPUS quota of e2-standard-4 (%v): %s", err, js)
	}
	if r := g.run(t, append([]string{"run", "--yes"}, over...)...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "insufficient-quota") {
		t.Fatalf("run must refuse the surge over quota with exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	g.assertUnchanged(t, 3)
	// A zone of the group that does not offer the machine type blocks too.
	g.srv.SetOffered(gceZones[2], "e2-standard-4", false)
	one := []string{name, "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--image", "img-new"}
	if pl := g.run(t, append([]string{"plan", "--detailed-exitcode"}, one...)...); pl.code != nodeupgrade.ExitBlockers ||
		!strings.Contains(pl.stdout+pl.stderr, "e2-standard-4 in zone "+gceZones[2]+", where Compute does not offer it") {
		t.Fatalf("plan must exit %d naming the zone that does not offer e2-standard-4: %s", nodeupgrade.ExitBlockers, pl)
	}
	if r := g.run(t, append([]string{"run", "--yes"}, one...)...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "insufficient-quota") {
		t.Fatalf("run must refuse a zone that does not offer the type with exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	g.assertUnchanged(t, 3)
	g.srv.SetOffered(gceZones[2], "e2-standard-4", true)
	fits := []string{"run", name, "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--image", "img-new", "--post-drain-wait", "0s", "--yes"}
	if r := g.run(t, fits...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run with the surge that fits: %s", r)
	}
	g.assertFinished(t, 3)
}

// TestGKEPodRangeTooSmall: a green pool the cluster's pod range cannot
// give blocks to (3 nodes of a /24 in a /22: one block free) is refused by
// plan --detailed-exitcode and by run before the pool is touched, naming
// the range, what is needed and free and the surge that fits; the run
// with that surge finishes.
func TestGKEPodRangeTooSmall(t *testing.T) {
	t.Parallel()
	const name = "gke-podrange"
	g := setupGKEPool(t, name, gkePoolSpec{podRange: "10.4.0.0/22"}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	over := []string{name, "--strategy", "blue-green", "--node-version", "1.31"}
	pl := g.run(t, append([]string{"plan", "--detailed-exitcode"}, over...)...)
	for _, want := range []string{"insufficient-ips", "pod range 10.4.0.0/22 of node pool " + name, "need 768 IPs", "which has 256 free of its 1024", "--strategy surge --max-surge 1 fits"} {
		if pl.code != nodeupgrade.ExitBlockers || !strings.Contains(pl.stdout+pl.stderr, want) {
			t.Fatalf("plan must exit %d naming %q: %s", nodeupgrade.ExitBlockers, want, pl)
		}
	}
	if r := g.run(t, append([]string{"run", "--yes"}, over...)...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "insufficient-ips") {
		t.Fatalf("run must refuse the green pool past the pod range with exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	if calls := g.srv.ChangingCalls(); len(calls) != 0 {
		t.Fatalf("a refused run changed the pool: %v", calls)
	}
	fits := []string{"run", name, "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--node-version", "1.31", "--yes"}
	if r := g.run(t, fits...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run with the surge that fits: %s", r)
	}
	g.assertUpgraded(t)
}
