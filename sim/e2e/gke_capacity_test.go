package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestGKESurgeRefusedStopsBeforeAnyDrain: Compute cannot create GKE's
// surge node (its zone out of capacity) and maxUnavailable is 0, so GKE
// fails the upgrade (RESOURCE_EXHAUSTED, naming the instance and
// Compute's last attempt error) before it drains anything. The run stops
// at once, long before the fake's one-minute node timeout, with
// NodeCreationFailure in one line naming the zone and Compute's code; no
// node is cordoned; abort names rollback, which, the capacity back, puts
// the pool back on its version.
func TestGKESurgeRefusedStopsBeforeAnyDrain(t *testing.T) {
	t.Parallel()
	const name = "gke-refused"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	g.srv.Compute.FailCreations("us-central1-a", gcefake.ZoneResourcePoolExhausted)
	before := g.nodeMarks(t)
	start := time.Now()
	r := g.run(t, "run", name, "--yes", "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--node-version", gkeNew)
	if r.code != nodeupgrade.ExitNodeCreation || !oneLine(r.stderr) {
		t.Fatalf("want exit %d (NodeCreationFailure) in one line: %s", nodeupgrade.ExitNodeCreation, r)
	}
	for _, want := range []string{"NodeCreationFailure", "zones/us-central1-a/instances/", "ZONE_RESOURCE_POOL_EXHAUSTED"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the failure does not say %q: %q", want, r.stderr)
		}
	}
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("the run took %s: it waited for GKE's node timeout rather than stop at the refusal", took)
	}
	if after := g.nodeMarks(t); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("nodes changed: %v, were %v", after, before)
	}
	if a := g.run(t, "abort", name); a.code != nodeupgrade.ExitUsage || !strings.Contains(a.stderr, "kubectl nodeupgrade rollback "+name) {
		t.Errorf("abort: want exit %d naming rollback: %s", nodeupgrade.ExitUsage, a)
	}
	g.srv.Compute.FailCreations("us-central1-a", "")
	if rb := g.run(t, "rollback", name, "--yes"); rb.code != nodeupgrade.ExitOK || !strings.Contains(rb.stdout, "rolled back") {
		t.Fatalf("rollback: %s", rb)
	}
	if on, all := g.nodesOn(t, gkeOld); on != all || all != 3 {
		t.Errorf("%d of %d nodes on %s after the rollback, want all 3", on, all, gkeOld)
	}
	if p := g.pool(); p.Version != gkeOld {
		t.Errorf("pool at %s after the rollback, want %s", p.Version, gkeOld)
	}
}
