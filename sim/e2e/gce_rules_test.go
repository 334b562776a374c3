package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// TestGCEQuotaEndsTheWaitAtOnce: Compute cannot create the surge
// instance (the project's CPUS quota); the run stops on the managed
// instance's lastAttempt error long before --node-ready-timeout, naming
// it, and abort puts the group back with the quota still short.
func TestGCEQuotaEndsTheWaitAtOnce(t *testing.T) {
	t.Parallel()
	const name = "gce-quota"
	g := setupGCEGroup(t, name, 6, gceApps()...)
	g.srv.FailCreations("", gcefake.QuotaExceeded)
	start := time.Now()
	r := g.run(t, "run", name, "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--image", "img-new", "--node-ready-timeout", "10m", "--yes")
	if r.code != nodeupgrade.ExitNodeCreation || !strings.Contains(r.stderr, "QUOTA_EXCEEDED") {
		t.Fatalf("want exit %d naming QUOTA_EXCEEDED: %s", nodeupgrade.ExitNodeCreation, r)
	}
	if took := time.Since(start); took > 3*time.Minute {
		t.Errorf("the run took %s to see the quota failure", took)
	}
	// The quota is still short: abort drops the machine that cannot come
	// rather than wait for its node.
	a := g.run(t, "abort", name)
	if a.code != nodeupgrade.ExitOK || !strings.Contains(a.stdout, "cannot be created") {
		t.Fatalf("abort: want exit %d dropping the machine that cannot be created: %s", nodeupgrade.ExitOK, a)
	}
	g.srv.FailCreations("", "")
	g.assertAborted(t)
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
