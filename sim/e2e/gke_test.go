package e2e

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gkefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The versions of the GKE tests: the pool runs gkeOld, the control plane
// gkeNew; gkeAbove is offered but above the control plane.
const (
	gkeOld   = "1.30.5-gke.1000"
	gkeNew   = "1.31.2-gke.1000"
	gkeAbove = "1.32.1-gke.1000"
)

var gkeZones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// gkePool is a GKE node pool of a local GKE endpoint of its own, one node
// per zone in three zones, whose nodes are kwok nodes of the shared
// cluster.
type gkePool struct {
	name, cluster string
	srv           *gkefake.Server
	before        *container.NodePool
}

type gkePoolSpec struct {
	pdbTimeout time.Duration
	// launchDelay is how long a new instance takes, 300 ms unless set.
	launchDelay time.Duration
	autoscaling bool
	// master and version are the control plane's and the pool's, gkeNew
	// and gkeOld unless set; flexStart makes a flex-start pool.
	master, version string
	flexStart       bool
	// faults is the share of the GKE endpoint's API calls refused with
	// Google's faults under load, from seed (not Compute's: the fake's own
	// GKE reaches its instances through it).
	faults float64
	seed   uint64
	// podRange is the cluster's pod range, gkefake's default unless set.
	podRange string
}

// setupGKEPool makes the pool and the apps pinned to it.
func setupGKEPool(t *testing.T, name string, spec gkePoolSpec, apps ...scenario.App) *gkePool {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	srv, err := gkefake.Start(context.Background(), client, gkefake.Options{
		Compute:    gcefake.Options{LaunchDelay: cmp.Or(spec.launchDelay, 300*time.Millisecond), DeleteDelay: 100 * time.Millisecond, Logf: t.Logf},
		Logf:       t.Logf,
		EvictRetry: 300 * time.Millisecond, NodeReadyTimeout: time.Minute, DefaultPDBTimeout: spec.pdbTimeout,
		Faults: spec.faults, FaultSeed: spec.seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	g := &gkePool{name: name, cluster: name + "-c", srv: srv}
	version := cmp.Or(spec.version, gkeOld)
	srv.CreateCluster(gkefake.ClusterSpec{Name: g.cluster, Location: "us-central1", MasterVersion: cmp.Or(spec.master, gkeNew), ValidNodeVersions: []string{gkeOld, gkeAbove, version}, PodRange: spec.podRange})
	ps := gkefake.PoolSpec{Cluster: g.cluster, Location: "us-central1", Name: name, Zones: gkeZones, NodesPerZone: 1, Version: version,
		Upgrade: &container.UpgradeSettings{Strategy: "SURGE", MaxSurge: 1}, FlexStart: spec.flexStart}
	if spec.autoscaling {
		ps.Autoscaling = &container.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 3}
	}
	if err := srv.CreatePool(ctx, ps); err != nil {
		t.Fatal(err)
	}
	g.waitNodes(t, ctx, "v"+version, 3)
	g.before, _ = srv.Pool(g.cluster, "us-central1", name)
	for _, a := range apps {
		a.Namespace, a.NodeSelector = name, map[string]string{gkefake.NodePoolLabel: name}
		if err := scenario.CreateApp(ctx, client, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	return g
}

// waitNodes waits until the pool has n nodes, Ready, on version.
func (g *gkePool) waitNodes(t *testing.T, ctx context.Context, version string, n int) {
	t.Helper()
	for {
		nodes := groupNodes(t, ctx, gkefake.NodePoolLabel, g.name)
		if len(nodes) == n && !slices.ContainsFunc(nodes, func(x corev1.Node) bool { return x.Status.NodeInfo.KubeletVersion != version }) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pool %s: want %d nodes on %s, have %d", g.name, n, version, len(nodes))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (g *gkePool) env() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NODEUPGRADE_G") })
	return append(env, "NO_COLOR=1",
		"NODEUPGRADE_GKE_ENDPOINT="+g.srv.Endpoint, "NODEUPGRADE_GKE_NO_AUTH=true",
		"NODEUPGRADE_GCE_ENDPOINT="+g.srv.Compute.Endpoint, "NODEUPGRADE_GCE_NO_AUTH=true")
}

func (g *gkePool) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	cmd.Env = g.env()
	return cmd
}

func (g *gkePool) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, g.cmd(args...))
}

func (g *gkePool) pool() *container.NodePool {
	p, _ := g.srv.Pool(g.cluster, "us-central1", g.name)
	return p
}

// waitPool waits until the pool satisfies cond.
func (g *gkePool) waitPool(t *testing.T, what string, cond func(*container.NodePool) bool) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	for !cond(g.pool()) {
		select {
		case <-ctx.Done():
			t.Fatalf("pool %s never %s", g.name, what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// nodesOn counts the pool's nodes on a version.
func (g *gkePool) nodesOn(t *testing.T, version string) (on, all int) {
	t.Helper()
	nodes := groupNodes(t, testContext(t, time.Minute), gkefake.NodePoolLabel, g.name)
	for _, n := range nodes {
		if n.Status.NodeInfo.KubeletVersion == "v"+version {
			on++
		}
	}
	return on, len(nodes)
}

// assertUpgraded checks every node runs gkeNew, the pool too, its
// upgrade settings and drain config are as before the run, and no node
// is left cordoned.
func (g *gkePool) assertUpgraded(t *testing.T) {
	t.Helper()
	if p := g.pool(); p.Version != gkeNew {
		t.Errorf("pool at %s, want %s", p.Version, gkeNew)
	}
	g.assertSettingsBack(t)
	for _, n := range groupNodes(t, testContext(t, time.Minute), gkefake.NodePoolLabel, g.name) {
		if n.Status.NodeInfo.KubeletVersion != "v"+gkeNew || n.Spec.Unschedulable {
			t.Errorf("node %q: %s, cordoned %v; want %s, uncordoned", n.Name, n.Status.NodeInfo.KubeletVersion, n.Spec.Unschedulable, gkeNew)
		}
	}
}

// TestGKESurgeUpgrade: GKE's surge upgrade of a 3-zone pool, started once
// with the run's settings and followed to its end; Ctrl-C stops the
// following only, and the next run follows the same operation; the
// pool's settings are put back and no PDB is violated.
func TestGKESurgeUpgrade(t *testing.T) {
	t.Parallel()
	const name = "gke-surge"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--strategy", "surge", "--max-surge", "2", "--max-unavailable", "0", "--node-version", "1.31"}
	p := g.run(t, append([]string{"plan", name}, flags...)...)
	for _, want := range []string{"GKE node pool", "GKE version " + gkeNew, "maxSurge 2 for the run, then back to", "cancel, resume, rollback", "us-central1-a"} {
		if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, want) {
			t.Errorf("plan must show %q: %s", want, p)
		}
	}
	if calls := g.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("plan changed the pool: %v", calls)
	}
	first := startBackground(t, g.cmd(append([]string{"run", name, "--yes"}, flags...)...))
	if !first.waitFor("started towards") {
		t.Fatalf("the update never started:\n%s", first.output())
	}
	_ = first.cmd.Process.Signal(syscall.SIGINT)
	code, out := first.wait(t, time.Minute)
	if code == nodeupgrade.ExitOK || !strings.Contains(out, "stopped following") {
		t.Errorf("Ctrl-C must stop following and say so, exit %d:\n%s", code, out)
	}
	second := g.run(t, append([]string{"run", name, "--yes"}, flags...)...)
	if second.code != nodeupgrade.ExitOK || !strings.Contains(second.stdout, "following GKE node pool update") {
		t.Fatalf("the second run must follow the same update to its end: %s", second)
	}
	if n := g.srv.UpgradeCalls(); n != 1 {
		t.Errorf("%d nodePools.update calls with an upgrade, want exactly 1", n)
	}
	g.assertUpgraded(t)
	if v := watch.Stop(); len(v) != 0 {
		t.Errorf("PDB violations: %v", v)
	}
}

// TestGKEBlueGreenUpgrade: GKE's blue/green upgrade goes through its
// phases, the run showing them; complete ends the hour's soak at once.
func TestGKEBlueGreenUpgrade(t *testing.T) {
	t.Parallel()
	const name = "gke-bg"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	run := startBackground(t, g.cmd("run", name, "--yes", "--strategy", "blue-green", "--batch-node-count", "2",
		"--batch-soak", "1s", "--node-pool-soak", "1h", "--node-version", gkeNew))
	g.waitPool(t, "soaked", func(p *container.NodePool) bool {
		return p.UpdateInfo != nil && p.UpdateInfo.BlueGreenInfo.Phase == "NODE_POOL_SOAKING"
	})
	if on, all := g.nodesOn(t, gkeNew); on != 3 || all != 6 {
		t.Errorf("while soaking: %d of %d nodes on %s, want green's 3 beside blue's 3", on, all, gkeNew)
	}
	c := g.run(t, "complete", name)
	if c.code != nodeupgrade.ExitOK || !strings.Contains(c.stdout, "ended the soak") {
		t.Errorf("complete must end the soak: %s", c)
	}
	code, out := run.wait(t, 2*time.Minute)
	// The phases the run saw (it reads the pool every poll: a short one
	// may pass between two reads).
	shown := slices.ContainsFunc([]string{"CREATING_GREEN_POOL", "CORDONING_BLUE_POOL", "DRAINING_BLUE_POOL"}, func(p string) bool { return strings.Contains(out, p) })
	if code != nodeupgrade.ExitOK || !shown || !strings.Contains(out, "succeeded") {
		t.Fatalf("the run must follow the phases to the end, exit %d:\n%s", code, out)
	}
	g.assertUpgraded(t)
	if _, all := g.nodesOn(t, gkeNew); all != 3 {
		t.Errorf("%d nodes after the upgrade, want blue deleted and green's 3", all)
	}
	if v := watch.Stop(); len(v) != 0 {
		t.Errorf("PDB violations: %v", v)
	}
}

// TestGKEPDBForcedOut: a PDB that allows no disruption: the plan names it
// and the pod GKE would delete once its PDB timeout passes, as a blocker;
// with the checks ignored the run names pod and PDB and the time left
// before the timeout, and GKE deletes the pod.
func TestGKEPDBForcedOut(t *testing.T) {
	t.Parallel()
	const name = "gke-pdb"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "db", Replicas: 2, MinAvailable: num(2)})
	flags := []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--node-version", gkeNew, "--pdb-timeout", "20s"}
	p := g.run(t, append([]string{"plan", name}, flags...)...)
	for _, want := range []string{"forced-past-pdb", `"gke-pdb/db-`, "gke-pdb/db", "PDB timeout of 20s"} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("plan must name %q: %s", want, p)
		}
	}
	refused := g.run(t, append([]string{"run", name, "--yes", "--ignore-check", "pdb-zero-disruptions"}, flags...)...)
	if refused.code != nodeupgrade.ExitBlockers || !strings.Contains(refused.stderr, "forced-past-pdb") {
		t.Errorf("run must refuse the blocker with exit %d: %s", nodeupgrade.ExitBlockers, refused)
	}
	if calls := g.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("the refused run changed the pool: %v", calls)
	}
	forced := g.run(t, append([]string{"run", name, "--yes", "--ignore-check", "pdb-zero-disruptions", "--ignore-check", "forced-past-pdb"}, flags...)...)
	if forced.code != nodeupgrade.ExitOK {
		t.Fatalf("GKE deletes the pod at its PDB timeout and goes on: %s", forced)
	}
	for _, want := range []string{`pod "gke-pdb/db-`, "gke-pdb/db", "left before the GKE node pool's PDB timeout deletes it"} {
		if !strings.Contains(forced.stdout, want) {
			t.Errorf("the progress must name %q: %s", want, forced)
		}
	}
	g.assertUpgraded(t)
}

// TestGKECancelResume: cancel goes through operations.cancel (the run
// stops, paused); resume updates again and the run finishes.
func TestGKECancelResume(t *testing.T) {
	t.Parallel()
	const name = "gke-cancel"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	run := startBackground(t, g.cmd("run", name, "--yes", "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--node-version", gkeNew))
	if !run.waitFor("started towards") {
		t.Fatalf("the update never started:\n%s", run.output())
	}
	g.waitUpgradedNodes(t, 1)
	c := g.run(t, "cancel", name)
	if c.code != nodeupgrade.ExitOK || !strings.Contains(c.stdout, "cancelled") {
		t.Fatalf("cancel: %s", c)
	}
	code, out := run.wait(t, time.Minute)
	if code != nodeupgrade.ExitPaused {
		t.Fatalf("the cancelled run must end paused (exit %d), exit %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	if on, _ := g.nodesOn(t, gkeNew); on == 3 {
		t.Errorf("the cancel came after every node was upgraded: nothing was left to resume")
	}
	// The pods GKE evicted before the cancel come back first: until then
	// the PDB allows no disruption, and resume would rightly refuse.
	waitPDBAllows(t, name, "web", 1)
	r := g.run(t, "resume", name, "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume must finish the upgrade: %s", r)
	}
	g.assertUpgraded(t)
}

// waitUpgradedNodes waits until n nodes of the pool run gkeNew.
func (g *gkePool) waitUpgradedNodes(t *testing.T, n int) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	for {
		if on, _ := g.nodesOn(t, gkeNew); on >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d nodes never ran %s", n, gkeNew)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestGKERollback: a cancelled, partial surge upgrade rolled back with
// nodePools.rollback leaves every node on the old version.
func TestGKERollback(t *testing.T) {
	t.Parallel()
	const name = "gke-rollback"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	run := startBackground(t, g.cmd("run", name, "--yes", "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--node-version", gkeNew))
	if !run.waitFor("started towards") {
		t.Fatalf("the update never started:\n%s", run.output())
	}
	g.waitUpgradedNodes(t, 1)
	if c := g.run(t, "cancel", name); c.code != nodeupgrade.ExitOK {
		t.Fatalf("cancel: %s", c)
	}
	if code, out := run.wait(t, time.Minute); code != nodeupgrade.ExitPaused {
		t.Fatalf("exit %d, want %d:\n%s", code, nodeupgrade.ExitPaused, out)
	}
	r := g.run(t, "rollback", name, "--yes")
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "rolled back") {
		t.Fatalf("rollback: %s", r)
	}
	if on, all := g.nodesOn(t, gkeOld); on != all || all != 3 {
		t.Errorf("%d of %d nodes on %s after the rollback, want all 3", on, all, gkeOld)
	}
	if p := g.pool(); p.Version != gkeOld {
		t.Errorf("pool at %s after the rollback, want %s", p.Version, gkeOld)
	}
	if s := g.run(t, "status", name); !strings.Contains(s.stdout, "rolled back") {
		t.Logf("status after the rollback: %s", s)
	}
}

// TestGKEBadTargetsChangeNothing: what GKE would refuse is refused at plan
// time, exit 2; a pool changed since the plan (its etag) too; nothing is
// changed.
func TestGKEBadTargetsChangeNothing(t *testing.T) {
	t.Parallel()
	const name = "gke-bad"
	g := setupGKEPool(t, name, gkePoolSpec{})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"version above the control plane", []string{"--strategy", "surge", "--node-version", gkeAbove}, "above the control plane"},
		{"version not offered", []string{"--strategy", "surge", "--node-version", "1.29"}, "not offered"},
		{"malformed version", []string{"--strategy", "surge", "--node-version", "v1.31"}, "invalid --node-version"},
		{"unknown image type", []string{"--strategy", "surge", "--image-type", "FANCY_OS"}, "invalid --image-type"},
		{"too many in flight", []string{"--strategy", "surge", "--node-version", gkeNew, "--max-surge", "15", "--max-unavailable", "10"}, "above the limit of 20"},
		{"soaks above 7 days", []string{"--strategy", "blue-green", "--node-version", gkeNew, "--node-pool-soak", "8d"}, "above the limit of 7d"},
		{"autoscaled without autoscaling", []string{"--strategy", "autoscaled-blue-green", "--node-version", gkeNew}, "autoscaling enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.run(t, append([]string{"run", name, "--yes"}, tc.args...)...)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d and a one-line error with %q: %s", nodeupgrade.ExitUsage, tc.want, r)
			}
		})
	}
	t.Run("pool changed since the plan", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "plan.json")
		p := g.run(t, "plan", name, "--strategy", "surge", "--node-version", gkeNew, "-o", "json")
		if p.code != nodeupgrade.ExitOK {
			t.Fatalf("plan: %s", p)
		}
		if err := os.WriteFile(file, []byte(p.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		g.srv.TouchPool(g.cluster, "us-central1", name)
		r := g.run(t, "run", name, "--yes", "--strategy", "surge", "--node-version", gkeNew, "--plan-file", file)
		if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, "changed since the plan") {
			t.Errorf("want exit %d and a one-line error saying the pool changed: %s", nodeupgrade.ExitUsage, r)
		}
	})
	if calls := g.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("refused runs changed the pool: %v", calls)
	}
	if on, all := g.nodesOn(t, gkeOld); on != all || all != 3 {
		t.Errorf("%d of %d nodes on %s, want all 3 untouched", on, all, gkeOld)
	}
	assertUntouched(t, testContext(t, time.Minute), gkefake.NodePoolLabel, name)
}
