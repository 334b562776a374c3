package e2e

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gkefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestGKEAbortSaysWhatEachPhaseAllows: abort never stops or undoes GKE's
// upgrade behind its back: while blue soaks it refuses, exit 2, naming
// complete (and cancel, then rollback or resume); once cancelled, naming
// rollback and resume; neither refusal changes the pool, its nodes or
// the record; the rollback it names then ends the run.
func TestGKEAbortSaysWhatEachPhaseAllows(t *testing.T) {
	t.Parallel()
	const name = "gke-abort"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	run := startBackground(t, g.cmd("run", name, "--yes", "--strategy", "blue-green", "--batch-node-count", "3",
		"--batch-soak", "0s", "--node-pool-soak", "1h", "--node-version", gkeNew))
	g.waitPool(t, "soaked", func(p *container.NodePool) bool {
		return p.UpdateInfo != nil && p.UpdateInfo.BlueGreenInfo.Phase == "NODE_POOL_SOAKING"
	})
	_ = run.cmd.Process.Signal(syscall.SIGINT)
	if code, out := run.wait(t, time.Minute); !strings.Contains(out, "stopped following") {
		t.Fatalf("Ctrl-C must stop following, exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T)
		phase   string
		want    []string
	}{
		{"soaking", func(*testing.T) {}, "NODE_POOL_SOAKING",
			[]string{"phase NODE_POOL_SOAKING", "is soaking", "kubectl nodeupgrade complete " + name, "kubectl nodeupgrade cancel " + name, "rollback"}},
		{"cancelled while soaking", func(t *testing.T) {
			if c := g.run(t, "cancel", name); c.code != nodeupgrade.ExitOK {
				t.Fatalf("cancel: %s", c)
			}
			g.waitPool(t, "paused", func(p *container.NodePool) bool { return p.Status == "RUNNING" })
		}, "NODE_POOL_SOAKING", []string{"is paused (cancelled)", "kubectl nodeupgrade rollback " + name, "kubectl nodeupgrade resume " + name}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.prepare(t)
			calls, nodes := len(g.srv.ChangingCalls()), g.nodeMarks(t)
			r := g.run(t, "abort", name)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) {
				t.Fatalf("abort must refuse with exit %d and one line: %s", nodeupgrade.ExitUsage, r)
			}
			t.Logf("abort: %s", r.stderr)
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("abort must say %q: %s", w, r.stderr)
				}
			}
			if after := g.srv.ChangingCalls(); len(after) != calls {
				t.Errorf("the refused abort changed the pool: %v", after[calls:])
			}
			if p := g.pool(); p.UpdateInfo == nil || p.UpdateInfo.BlueGreenInfo.Phase != tc.phase {
				t.Errorf("pool left phase %s", tc.phase)
			}
			if after := g.nodeMarks(t); !slices.Equal(after, nodes) {
				t.Errorf("the refused abort changed the nodes: %v, were %v", after, nodes)
			}
			if s := g.run(t, "status", name); strings.Contains(s.stdout, "aborted") {
				t.Errorf("the refused abort marked the run aborted: %s", s)
			}
		})
	}
	rb := g.run(t, "rollback", name, "--yes")
	if rb.code != nodeupgrade.ExitOK {
		t.Fatalf("the rollback abort names must end the run: %s", rb)
	}
	if on, all := g.nodesOn(t, gkeOld); on != all || all != 3 {
		t.Errorf("%d of %d nodes on %s after the rollback, want blue's 3", on, all, gkeOld)
	}
	assertUntouched(t, testContext(t, time.Minute), gkefake.NodePoolLabel, name)
}

// nodeMarks are the pool's nodes with their cordon and taints, sorted.
func (g *gkePool) nodeMarks(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, n := range groupNodes(t, testContext(t, time.Minute), gkefake.NodePoolLabel, g.name) {
		out = append(out, fmt.Sprintf("%s cordoned=%v taints=%v", n.Name, n.Spec.Unschedulable, n.Spec.Taints))
	}
	slices.Sort(out)
	return out
}
