package e2e

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/internal/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gkefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// eksNodegroupLabel carries a managed node group's name on its nodes.
const eksNodegroupLabel = "eks.amazonaws.com/nodegroup"

// slowReadyApp is a Deployment whose pods are Ready 5 s after they are
// scheduled, so that a kill lands while the service's own evictions hold
// the PDB at 0 disruptions: the re-run then meets what the service is
// doing, not a settled group (issue 41, items 2 and 3).
func slowReadyApp() scenario.App {
	return scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1),
		PodAnnotations: map[string]string{scenario.ReadyDelayAnnotation: "5s"}}
}

// TestKilledManagedRunIsFollowedByARerun kills, with SIGKILL at a random
// moment (seeded, logged), runs whose update a service carries out (EKS's
// in-place update of a managed node group, its blue/green run, GKE's surge
// and blue/green upgrades), then starts the same command at once: it
// follows what is under way to the end rather than deciding again, with
// exactly one update started, the settings put back, no PDB violated and
// nothing left marked.
func TestKilledManagedRunIsFollowedByARerun(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 41))
	t.Logf("random kill points from seed %d", seed)
	after := func() time.Duration { return 2*time.Second + time.Duration(rng.Int64N(int64(12*time.Second))) }
	for i, path := range []string{"eks", "eks-blue-green", "gke-surge", "gke-blue-green"} {
		kp := killPoint{after: after()}
		kp.name = fmt.Sprintf("random-%s", kp.after.Round(100*time.Millisecond))
		t.Run(path+"/"+kp.name, func(t *testing.T) {
			t.Parallel()
			killManagedThenRerun(t, fmt.Sprintf("kill-managed-%d", i), path, kp)
		})
	}
}

// killManagedThenRerun kills the run of path at kp, runs it again and
// checks the end.
func killManagedThenRerun(t *testing.T, name, path string, kp killPoint) {
	var rerun func(args ...string) (bool, string, result)
	var args []string
	var check func(*testing.T)
	switch path {
	case "eks", "eks-blue-green":
		m := setupManagedGroup(t, name, 3, time.Minute, slowReadyApp())
		rerun = func(args ...string) (bool, string, result) {
			killed, out := runAndKill(t, m.cmd(sim.Kubeconfig, args...), kp)
			return killed, out, m.run(t, args...)
		}
		args = []string{"run", name, "--kubernetes-version", "1.31", "--max-unavailable", "1", "--yes"}
		check = func(t *testing.T) {
			if n := m.versionUpdates(); n != 1 {
				t.Errorf("%d UpdateNodegroupVersion calls, want exactly 1", n)
			}
			m.assertUpdated(t)
			assertUntouched(t, testContext(t, time.Minute), eksNodegroupLabel, name)
		}
		if path == "eks-blue-green" {
			args = managedBlueGreenArgs(name, "1s")
			check = func(t *testing.T) {
				m.assertGreenServes(t)
				assertUntouched(t, testContext(t, time.Minute), eksNodegroupLabel, managedGreen(name))
			}
		}
	default:
		g := setupGKEPool(t, name, gkePoolSpec{}, slowReadyApp())
		rerun = func(args ...string) (bool, string, result) {
			killed, out := runAndKill(t, g.cmd(args...), kp)
			return killed, out, g.run(t, args...)
		}
		args = []string{"run", name, "--yes", "--node-version", gkeNew, "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0"}
		if path == "gke-blue-green" {
			args = []string{"run", name, "--yes", "--node-version", gkeNew, "--strategy", "blue-green", "--batch-node-count", "1", "--batch-soak", "1s", "--node-pool-soak", "0s"}
		}
		check = func(t *testing.T) {
			if n := g.srv.UpgradeCalls(); n != 1 {
				t.Errorf("%d nodePools.update calls with an upgrade, want exactly 1", n)
			}
			g.assertUpgraded(t) // every node uncordoned
			assertUntouched(t, testContext(t, time.Minute), gkefake.NodePoolLabel, name)
		}
	}
	w, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	killed, out, r := rerun(args...)
	t.Logf("killed=%v; output up to the kill:\n%s", killed, out)
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("the re-run at once: %s", r)
	}
	check(t)
	assertNoViolations(t, w.Stop())
}
