package e2e

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aks"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The AKS cluster of the blue/green tests: its control plane, the blue
// pool's version and node image, and the latest image AKS offers.
const (
	aksBGControl = "1.32.2"
	aksBGVersion = "1.31.5"
	aksBGOld     = "AKSUbuntu-2204gen2containerd-202501.01.0"
	aksBGLatest  = "AKSUbuntu-2204gen2containerd-202502.01.0"
)

// aksBluePool is an agent pool of its own local Azure endpoint, named
// as its namespace (AKS's names: at most 12 lowercase letters and digits).
type aksBluePool struct {
	name   string
	srv    *azurefake.Server
	before armcs.AgentPool
}

// setupAKSBlue is a pool of 3 nodes on 1.31 in a 1.32 cluster, labelled
// pool=NAME (a nodeLabel a green must keep), serving a Deployment whose
// PDB allows one disruption, watched for violations.
func setupAKSBlue(t *testing.T, name string) (*aksBluePool, *scenario.PDBWatcher) {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	srv, err := azurefake.Start(context.Background(), client, azurefake.Options{PollEvery: 100 * time.Millisecond, EvictRetry: 200 * time.Millisecond,
		MinuteIs: 200 * time.Millisecond, SettingsDuration: 100 * time.Millisecond, NodeReadyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.CreateCluster(azurefake.ClusterSpec{ResourceGroup: "rg", Name: "c1", Version: aksBGControl, Versions: []string{aksBGVersion, aksBGControl}})
	spec := azurefake.PoolSpec{ResourceGroup: "rg", Cluster: "c1", Name: name, Count: 3, Zones: []string{"1", "2", "3"},
		Version: aksBGVersion, Image: aksBGOld, LatestImage: aksBGLatest, Labels: map[string]string{"pool": name}}
	if err := srv.CreatePool(ctx, spec); err != nil {
		t.Fatal(err)
	}
	p := &aksBluePool{name: name, srv: srv}
	p.before, _ = srv.Pool("rg", "c1", name)
	app := scenario.App{Namespace: name, Name: "web", Replicas: 3, MinAvailable: num(2), NodeSelector: map[string]string{"pool": name}}
	if err := scenario.CreateApp(ctx, client, app); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	return p, watch
}

func (p *aksBluePool) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", aks.EndpointEnv+"="+p.srv.URL, aks.NoAuthEnv+"=true")
	return cmd
}

func (p *aksBluePool) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, p.cmd(args...))
}

// aksBlueGreenArgs are a blue/green run of the pool to Kubernetes 1.32,
// a node per batch.
func aksBlueGreenArgs(name, batchSoak string) []string {
	return []string{"run", name, "--strategy", "blue-green", "--orchestrator-version", "1.32", "--batch-node-count", "1",
		"--batch-soak", batchSoak, "--node-pool-soak", "0s", "--post-drain-wait", "0s", "--yes"}
}

// green is the one pool besides blue, "" for none.
func (p *aksBluePool) green() string {
	for _, n := range p.srv.Pools("rg", "c1") {
		if n != p.name {
			return n
		}
	}
	return ""
}

// assertGreenServes checks that blue's pool was deleted with nothing
// left on its nodes for AKS's delete to take down, and that green, the
// only pool left, serves on 1.32 with the latest image and blue's
// settings, count and node labels.
func (p *aksBluePool) assertGreenServes(t *testing.T) {
	t.Helper()
	green := p.green()
	if got := p.srv.Pools("rg", "c1"); len(got) != 1 || got[0] == p.name || len(green) > 12 || !strings.HasPrefix(green, p.name[:min(len(p.name), 8)]) {
		t.Fatalf("agent pools %v, want only a green named after %q in at most 12 characters", got, p.name)
	}
	forced, deleted := p.srv.DeleteForced("rg", "c1", p.name)
	if !deleted || len(forced) > 0 {
		t.Errorf("blue deleted %v, pods AKS's delete took down: %v; want deleted with none", deleted, forced)
	}
	g, _ := p.srv.Pool("rg", "c1", green)
	gp, bp := g.Properties, p.before.Properties
	if *gp.CurrentOrchestratorVersion != aksBGControl || *gp.NodeImageVersion != aksBGLatest || *gp.Count != *bp.Count || *gp.VMSize != *bp.VMSize ||
		!maps.EqualFunc(gp.NodeLabels, bp.NodeLabels, func(a, b *string) bool { return *a == *b }) || *gp.Tags[aks.TagBlue] != p.name {
		t.Errorf("green %s/%s, count %d, size %s, labels %v, tags %v; want %s/%s and blue's %d, %s, labels, tagged as %q's",
			*gp.CurrentOrchestratorVersion, *gp.NodeImageVersion, *gp.Count, *gp.VMSize, gp.NodeLabels, gp.Tags, aksBGControl, aksBGLatest, *bp.Count, *bp.VMSize, p.name)
	}
	ctx := testContext(t, 2*time.Minute)
	nodes := groupNodes(t, ctx, aks.AgentPoolLabel, green)
	if len(nodes) != int(*bp.Count) {
		t.Errorf("green has %d nodes, want %d", len(nodes), *bp.Count)
	}
	for _, n := range nodes {
		if n.Status.NodeInfo.KubeletVersion != "v"+aksBGControl || n.Labels["pool"] != p.name || n.Spec.Unschedulable || n.Annotations[scaleDownDisabled] != "" {
			t.Errorf("green node %q: kubelet %s, pool label %q, cordoned %v, annotations %v", n.Name, n.Status.NodeInfo.KubeletVersion, n.Labels["pool"], n.Spec.Unschedulable, n.Annotations)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, p.name); err != nil {
		t.Errorf("workloads not Ready on green: %v", err)
	}
}

// assertBlueServes checks that green is gone and blue serves as before:
// the only pool, its nodes schedulable, the workloads Ready, and the
// record aborted where abort ended the run.
func (p *aksBluePool) assertBlueServes(t *testing.T, aborted bool) {
	t.Helper()
	if got := p.srv.Pools("rg", "c1"); !slices.Equal(got, []string{p.name}) {
		t.Errorf("agent pools %v, want only blue %q", got, p.name)
	}
	assertUntouched(t, testContext(t, time.Minute), aks.AgentPoolLabel, p.name)
	assertBackInService(t, p.name, p.run, aborted)
}

// TestAKSBlueGreen: blue/green on an AKS agent pool, the product's way:
// green created from blue's settings, blue drained in batches honouring
// PDBs, then deleted with nothing left on it; the plan says so and names
// green before anything changes, and what AKS or the strategy refuses is
// refused with exit 2 and no write.
func TestAKSBlueGreen(t *testing.T) {
	t.Parallel()
	const name = "bgmain"
	p, watch := setupAKSBlue(t, name)
	for _, bad := range [][]string{{"--orchestrator-version", "1.33"}, {"--orchestrator-version", "1.32", "--aks-drain-timeout", "5m"}} {
		r := p.run(t, append([]string{"run", name, "--strategy", "blue-green", "--yes"}, bad...)...)
		if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) {
			t.Errorf("run %v: want exit %d with one line: %s", bad, nodeupgrade.ExitUsage, r)
		}
	}
	args := aksBlueGreenArgs(name, "1s")
	pl := p.run(t, append([]string{"plan"}, args[1:len(args)-1]...)...)
	if calls := p.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("plan and the refused runs changed the cloud: %v", calls)
	}
	r := p.run(t, args...)
	green := p.green()
	if r.code != nodeupgrade.ExitOK || green == "" || !strings.Contains(r.stdout, "the node group is \""+green+"\" from now on") {
		t.Fatalf("the run must finish and name green as the node group: %s", r)
	}
	// The plan named the green the run made, before anything changed.
	for _, want := range []string{"Kubernetes 1.32.2, node image " + aksBGLatest, aks.AgentPoolLabel + "=" + green, "rename it where infrastructure as code declares it"} {
		if pl.code != nodeupgrade.ExitOK || !strings.Contains(pl.stdout, want) {
			t.Errorf("plan must show %q: %s", want, pl)
		}
	}
	assertNoViolations(t, watch.Stop())
	p.assertGreenServes(t)
}

// TestAKSBlueGreenKilledThenRunAgain: a blue/green run killed mid-drain
// is finished by the same command, with the one green pool the first run
// created.
func TestAKSBlueGreenKilledThenRunAgain(t *testing.T) {
	t.Parallel()
	const name = "bgkill"
	p, watch := setupAKSBlue(t, name)
	args := aksBlueGreenArgs(name, "3s")
	killed, out := runAndKill(t, p.cmd(args...), killPoint{name: "mid-drain", marker: "batch 2/3"})
	if !killed {
		t.Fatalf("the run ended before the kill point:\n%s", out)
	}
	waitPDBAllows(t, name, "web", 1)
	if r := p.run(t, args...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("the re-run must finish the run: %s", r)
	}
	assertNoViolations(t, watch.Stop())
	p.assertGreenServes(t)
}

// TestAKSBlueGreenRollbackAndAbort: rollback during the drain, and abort
// of a run killed mid-drain, each leave blue serving and green deleted.
func TestAKSBlueGreenRollbackAndAbort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, undo string }{{"bgroll", "rollback"}, {"bgabort", "abort"}} {
		t.Run(tc.undo, func(t *testing.T) {
			t.Parallel()
			p, watch := setupAKSBlue(t, tc.name)
			run := startBackground(t, p.cmd(aksBlueGreenArgs(tc.name, "2m")...))
			if !run.waitFor("batch 1/3: soak") {
				t.Fatalf("the run never reached the first batch soak:\n%s", run.output())
			}
			if tc.undo == "rollback" {
				if r := p.run(t, "rollback", tc.name); r.code != nodeupgrade.ExitOK {
					t.Fatalf("rollback: %s", r)
				}
				if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitOK || !strings.Contains(out, "rolled back") {
					t.Fatalf("run exit %d, want %d having rolled back:\n%s", code, nodeupgrade.ExitOK, out)
				}
			} else {
				_ = run.cmd.Process.Kill()
				_, _ = run.wait(t, time.Minute)
				if r := p.run(t, "abort", tc.name); r.code != nodeupgrade.ExitOK {
					t.Fatalf("abort: %s", r)
				}
			}
			assertNoViolations(t, watch.Stop())
			p.assertBlueServes(t, tc.undo == "abort")
		})
	}
}

// TestAKSBlueGreenKilledAfterDeletingBlue kills a blue/green run in its
// last phase, then deletes blue's pool as the killed run's DELETE would
// have, until it is gone, or while AKS still deletes it: abort refuses
// (deleting blue cannot be undone), and the same run command finishes on
// green.
func TestAKSBlueGreenKilledAfterDeletingBlue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		waitGone bool
		want     string // what the run says of blue
	}{
		{"bggone", true, "is gone already"},
		{"bgdeleting", false, "deleting blue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, watch := setupAKSBlue(t, tc.name)
			args := aksBlueGreenArgs(tc.name, "0s")
			if killed, out := runAndKill(t, p.cmd(args...), killPoint{name: "delete-blue", marker: "deleting blue:"}); !killed {
				t.Fatalf("the run ended before it deleted blue:\n%s", out)
			}
			if err := p.srv.DeletePool("rg", "c1", tc.name); err != nil {
				t.Fatal(err)
			}
			if tc.waitGone {
				if err := p.srv.WaitPoolGone(testContext(t, 2*time.Minute), "rg", "c1", tc.name); err != nil {
					t.Fatal(err)
				}
			}
			if r := p.run(t, "abort", tc.name, "--yes"); r.code != nodeupgrade.ExitUsage || !strings.Contains(r.stderr, "deleting blue") {
				t.Errorf("abort after blue's delete: %s; want exit %d, deleting blue", r, nodeupgrade.ExitUsage)
			}
			r := p.run(t, args...)
			green := p.green()
			if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, tc.want) || !strings.Contains(r.stdout, "the node group is \""+green+"\" from now on") {
				t.Fatalf("the run after blue's delete must finish on green %q: %s", green, r)
			}
			assertNoViolations(t, watch.Stop())
			p.assertGreenServes(t)
		})
	}
}
