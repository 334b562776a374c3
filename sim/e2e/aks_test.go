package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The versions and node images of the AKS tests: the pool runs aksOld and
// aksOldImage, the control plane aksNew; AKS offers aksAbove too (above
// the control plane: no pool may run it yet) and aksNewImage as the
// latest node image.
const (
	aksOld      = "1.31.5"
	aksNew      = "1.32.2"
	aksAbove    = "1.33.1"
	aksOldImage = "AKSUbuntu-2204gen2containerd-202501.01.0"
	aksNewImage = "AKSUbuntu-2204gen2containerd-202502.01.0"
)

// aksPool is an AKS agent pool of a local Azure endpoint of its own
// (cluster NAME-c in resource group NAME-rg), whose nodes are kwok nodes
// of the shared cluster, and the apps pinned to it in namespace NAME.
type aksPool struct {
	name, group, cluster string
	srv                  *azurefake.Server
}

type aksPoolSpec struct {
	// count is the pool's nodes, 3 unless set; maxSurge its own setting
	// (AKS's 10% unless set).
	count    int
	maxSurge string
	// maxUnavailable and undrainable are the pool's maxUnavailable and
	// undrainableNodeBehavior (API 2025-05-01), unset unless given.
	maxUnavailable, undrainable string
	// faults is the share of ARM requests answered with a fault, from
	// seed.
	faults float64
	seed   uint64
}

// setupAKSPool makes the pool (over zones 1-3) and the apps pinned to it.
// One of AKS's minutes (drain timeout, soak, a reimage) lasts a second.
func setupAKSPool(t *testing.T, name string, spec aksPoolSpec, apps ...scenario.App) *aksPool {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	srv, err := azurefake.Start(context.Background(), client, azurefake.Options{PollEvery: 100 * time.Millisecond, EvictRetry: 300 * time.Millisecond,
		MinuteIs: time.Second, NodeReadyTimeout: time.Minute, SettingsDuration: 200 * time.Millisecond,
		Faults: spec.faults, FaultSeed: spec.seed, RetryAfter: time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	a := &aksPool{name: name, group: name + "-rg", cluster: name + "-c", srv: srv}
	srv.CreateCluster(azurefake.ClusterSpec{ResourceGroup: a.group, Name: a.cluster, Version: aksNew, Versions: []string{aksOld, aksNew, aksAbove}})
	ps := azurefake.PoolSpec{ResourceGroup: a.group, Cluster: a.cluster, Name: name, Count: cmp.Or(spec.count, 3), Zones: []string{"1", "2", "3"},
		Version: aksOld, Image: aksOldImage, LatestImage: aksNewImage, MaxUnavailable: spec.maxUnavailable, Undrainable: spec.undrainable}
	if spec.maxSurge != "" {
		ps.Upgrade = &armcs.AgentPoolUpgradeSettings{MaxSurge: &spec.maxSurge}
	}
	if err := srv.CreatePool(ctx, ps); err != nil {
		t.Fatal(err)
	}
	for _, app := range apps {
		app.Namespace, app.NodeSelector = name, map[string]string{azurefake.AgentPoolLabel: name}
		if err := scenario.CreateApp(ctx, client, app); err != nil {
			t.Fatal(err)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *aksPool) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NODEUPGRADE_AKS") || strings.HasPrefix(kv, "AZURE_")
	})
	cmd.Env = append(env, "NO_COLOR=1", "NODEUPGRADE_AKS_ENDPOINT="+a.srv.URL, "NODEUPGRADE_AKS_NO_AUTH=true")
	return cmd
}

func (a *aksPool) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, a.cmd(args...))
}

func (a *aksPool) pool(t *testing.T) armcs.AgentPool {
	t.Helper()
	p, ok := a.srv.Pool(a.group, a.cluster, a.name)
	if !ok {
		t.Fatalf("agent pool %s is gone", a.name)
	}
	return p
}

func (a *aksPool) state(t *testing.T) string {
	t.Helper()
	return *a.pool(t).Properties.ProvisioningState
}

// waitState waits until the pool's provisioning state is want.
func (a *aksPool) waitState(t *testing.T, want string) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	for a.state(t) != want {
		select {
		case <-ctx.Done():
			t.Fatalf("agent pool %s never %s (it is %s)", a.name, want, a.state(t))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// nodesOn counts the pool's nodes on version and image.
func (a *aksPool) nodesOn(t *testing.T, version, image string) (on, all int) {
	t.Helper()
	nodes := groupNodes(t, testContext(t, time.Minute), azurefake.AgentPoolLabel, a.name)
	for _, n := range nodes {
		if n.Status.NodeInfo.KubeletVersion == "v"+version && n.Labels[azurefake.NodeImageLabel] == image {
			on++
		}
	}
	return on, len(nodes)
}

// assertUpgraded checks that AKS finished: the pool Succeeded on version
// and the new image, its count nodes all on them and uncordoned (the
// surge nodes gone), and its upgrade settings those of before the run.
func (a *aksPool) assertUpgraded(t *testing.T, version string, count int, surge *string) {
	t.Helper()
	p := a.pool(t).Properties
	if *p.ProvisioningState != "Succeeded" || *p.CurrentOrchestratorVersion != version || *p.NodeImageVersion != aksNewImage {
		t.Errorf("pool %s on %s/%s, want Succeeded on %s/%s", *p.ProvisioningState, *p.CurrentOrchestratorVersion, *p.NodeImageVersion, version, aksNewImage)
	}
	// As AKS applies them: AKS keeps a setting a PUT leaves out, so one
	// the run set and put back reads as AKS's default, not unset.
	want := &armcs.AgentPoolUpgradeSettings{MaxSurge: surge}
	if got := p.UpgradeSettings; appliedSettings(got) != appliedSettings(want) {
		t.Errorf("upgrade settings %s, want maxSurge %v as before the run and nothing else (unset or AKS's default alike)", settingsText(got), surgeText(surge))
	}
	if on, all := a.nodesOn(t, version, aksNewImage); on != count || all != count {
		t.Errorf("%d of %d nodes on %s/%s, want all of %d", on, all, version, aksNewImage, count)
	}
	assertUntouched(t, testContext(t, time.Minute), azurefake.AgentPoolLabel, a.name)
}

// appliedSettings are u as AKS applies them, an unset field its default
// (AgentPoolUpgradeSettings: maxSurge 10%, drainTimeoutInMinutes 30,
// nodeSoakDurationInMinutes 0).
func appliedSettings(u *armcs.AgentPoolUpgradeSettings) [3]string {
	out := [3]string{"10%", "30", "0"}
	if u == nil {
		return out
	}
	if u.MaxSurge != nil {
		out[0] = *u.MaxSurge
	}
	if u.DrainTimeoutInMinutes != nil {
		out[1] = fmt.Sprint(*u.DrainTimeoutInMinutes)
	}
	if u.NodeSoakDurationInMinutes != nil {
		out[2] = fmt.Sprint(*u.NodeSoakDurationInMinutes)
	}
	return out
}

func settingsText(u *armcs.AgentPoolUpgradeSettings) string {
	if u == nil {
		return "none"
	}
	i := func(p *int32) string {
		if p == nil {
			return "unset"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("maxSurge %s, drainTimeoutInMinutes %s, nodeSoakDurationInMinutes %s", surgeText(u.MaxSurge), i(u.DrainTimeoutInMinutes), i(u.NodeSoakDurationInMinutes))
}

func surgeText(s *string) string {
	if s == nil {
		return "unset"
	}
	return *s
}

// upgradeCalls counts the requests that start an upgrade: the node image
// action, and the pool's writes (settings, a version, a recovery).
func (a *aksPool) upgradeCalls() (image, writes int) {
	for _, c := range a.srv.ChangingCalls() {
		switch c {
		case "agentPools/upgradeNodeImageVersion/action":
			image++
		case "agentPools/write":
			writes++
		}
	}
	return image, writes
}

// aksApps are the Deployments with PDBs of a 6-node pool's tests.
func aksApps() []scenario.App {
	return []scenario.App{{Name: "web", Replicas: 4, MaxUnavailable: num(1)}, {Name: "api", Replicas: 2, MinAvailable: num(1)}}
}

// TestAKSUpgrades: AKS's node image upgrade and its Kubernetes version
// upgrade of a 6-node pool, each with the run's maxSurge 2 over the
// pool's own 1: the plan writes nothing, the run starts AKS's upgrade
// once and follows it to its end, the pool's setting is put back and no
// PDB is violated.
func TestAKSUpgrades(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, version string
		target        []string
		imageCalls    int
	}{
		{"node-image", aksOld, []string{"--node-image", "latest"}, 1},
		{"version", aksNew, []string{"--orchestrator-version", "1.32"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			name := "aks-up-" + tc.name
			a := setupAKSPool(t, name, aksPoolSpec{count: 6, maxSurge: "1"}, aksApps()...)
			watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
			if err != nil {
				t.Fatal(err)
			}
			flags := append([]string{"--strategy", "surge", "--max-surge", "2"}, tc.target...)
			p := a.run(t, append([]string{"plan", name}, flags...)...)
			for _, want := range []string{"AKS agent pool", aksNewImage, "6 outdated"} {
				if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, want) {
					t.Errorf("plan must show %q: %s", want, p)
				}
			}
			if calls := a.srv.ChangingCalls(); len(calls) != 0 {
				t.Errorf("plan wrote to Azure: %v", calls)
			}
			r := a.run(t, append([]string{"run", name, "--yes"}, flags...)...)
			if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "started towards") || !strings.Contains(r.stdout, "succeeded") {
				t.Fatalf("the run must start AKS's upgrade and follow it to its end: %s", r)
			}
			// The settings for the run and back; a version's upgrade is a
			// write too.
			image, writes := a.upgradeCalls()
			if image != tc.imageCalls || writes != 3-tc.imageCalls {
				t.Errorf("%d upgradeNodeImageVersion and %d agent pool writes, want %d and %d", image, writes, tc.imageCalls, 3-tc.imageCalls)
			}
			a.assertUpgraded(t, tc.version, 6, &[]string{"1"}[0])
			if v := watch.Stop(); len(v) != 0 {
				t.Errorf("PDB violations: %v", v)
			}
			t.Logf("%s upgrade of 6 nodes in %s", tc.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestAKSPDBFailureIsFinishedByTheSameRun: a PDB that allows no
// disruption holds its pod past the run's drain timeout: AKS fails the
// upgrade and leaves the pool Failed with its message; the run says so
// naming the pod and the PDB, and status too; once the PDB is relaxed
// the same run command finishes the pool (AKS's recovery).
func TestAKSPDBFailureIsFinishedByTheSameRun(t *testing.T) {
	t.Parallel()
	start := time.Now()
	const name = "aks-pdb"
	a := setupAKSPool(t, name, aksPoolSpec{}, scenario.App{Name: "db", Replicas: 2, MaxUnavailable: num(0)})
	args := []string{"run", name, "--yes", "--node-image", "latest", "--aks-drain-timeout", "3m", "--ignore-check", "pdb-zero-disruptions"}
	// status -w, watching from before the run, follows it to AKS's failure.
	live := startBackground(t, a.cmd("status", name, "-w"))
	r := a.run(t, args...)
	liveCode, liveOut := live.wait(t, time.Minute)
	// Live: the held pod while AKS drains, from the run's record; then
	// AKS's failure.
	for _, want := range []string{"phase Update", "held: pod aks-pdb/db-", "UpgradeFailed", "aks-pdb/db-", "blocked by pdb aks-pdb/db"} {
		if liveCode != nodeupgrade.ExitFailure || !strings.Contains(liveOut, want) {
			t.Errorf("status -w of the run must end (exit %d) naming %q, exit %d:\n%s", nodeupgrade.ExitFailure, want, liveCode, liveOut)
		}
	}
	if r.code != nodeupgrade.ExitPodEvictionError {
		t.Fatalf("the run must fail with AKS's drain, exit %d as its own drain would: %s", nodeupgrade.ExitPodEvictionError, r)
	}
	if st := a.state(t); st != "Failed" {
		t.Errorf("the pool is %s, want Failed", st)
	}
	// What AKS did under undrainableNodeBehavior Schedule, from the record.
	for _, want := range []string{"UpgradeFailed", "Drain node", "blocked by pdb aks-pdb/db", `"aks-pdb/db-`, `PodDisruptionBudget "aks-pdb/db"`, "made it schedulable again, not upgraded, and deleted its surge nodes"} {
		if !strings.Contains(r.stderr+r.stdout, want) {
			t.Errorf("the failed run must say %q: %s", want, r)
		}
	}
	t.Logf("the failed run:\n%s", r)
	// The run changed the pool's settings (--aks-drain-timeout): abort
	// writes nothing to the Failed pool, so neither the failure nor
	// status's next: line offers it; both offer what finishes the pool.
	next := a.run(t, "status", name)
	for what, msg := range map[string]string{"the failed run": r.stderr + r.stdout, "status": next.stdout} {
		if strings.Contains(msg, "nodeupgrade abort") || !strings.Contains(msg, "nodeupgrade resume "+name) {
			t.Errorf("%s must offer resume, not abort:\n%s", what, msg)
		}
	}
	// status -w after the failure says how the run ended, as run did.
	st := a.run(t, "status", name, "-w")
	for _, want := range []string{"UpgradeFailed", "Drain node", "aks-pdb/db-", "blocked by pdb aks-pdb/db"} {
		if st.code != nodeupgrade.ExitFailure || !strings.Contains(st.stdout+st.stderr, want) {
			t.Errorf("status -w must exit %d naming %q: %s", nodeupgrade.ExitFailure, want, st)
		}
	}
	relaxPDB(t, name, "db")
	again := a.run(t, args...)
	if again.code != nodeupgrade.ExitOK {
		t.Fatalf("the same run after the PDB is relaxed must finish the pool: %s", again)
	}
	a.assertUpgraded(t, aksOld, 3, nil)
	t.Logf("%s", time.Since(start).Round(time.Millisecond))
}

// relaxPDB lets the PDB ns/name allow one disruption.
func relaxPDB(t *testing.T, ns, name string) {
	t.Helper()
	patch := []byte(`{"spec":{"maxUnavailable":1}}`)
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Patch(testContext(t, time.Minute), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPDBAllows(t, ns, name, 1)
}

// TestAKSCancel: cancel aborts AKS's upgrade (the pool Canceled) and the
// run ends paused; resume finishes the pool. Once the answer to the
// abort is lost (the SDK's retry answered 409, nothing left to abort):
// cancel is done all the same. Once with the run's maxSurge on the pool:
// abort, before resume, writes nothing to the Canceled pool (AKS takes
// any write to it, the settings put back too, as the order to finish
// the upgrade): it refuses naming resume and changes nothing.
func TestAKSCancel(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		name  string
		flags []string
		abort bool
	}{
		{"answer-lost", nil, false},
		{"abort-refused", []string{"--strategy", "surge", "--max-surge", "2"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			name := fmt.Sprintf("aks-cancel-%d", i)
			a := setupAKSPool(t, name, aksPoolSpec{}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
			paused := a.startThenCancel(t, !tc.abort, append([]string{"run", name, "--yes", "--orchestrator-version", aksNew}, tc.flags...)...)
			if on, _ := a.nodesOn(t, aksNew, aksNewImage); on == 3 {
				t.Errorf("the cancel came after every node was upgraded: nothing was left to resume")
			}
			if tc.abort {
				a.assertNoAbortOffered(t, paused)
				a.assertAbortRefused(t)
			}
			waitPDBAllows(t, name, "web", 1)
			if r := a.run(t, "resume", name, "--yes"); r.code != nodeupgrade.ExitOK {
				t.Fatalf("resume must finish the upgrade: %s", r)
			}
			a.assertUpgraded(t, aksNew, 3, nil)
			t.Logf("%s", time.Since(start).Round(time.Millisecond))
		})
	}
}

// startThenCancel starts the run, cancels AKS's upgrade once started
// (the answer to its abort lost if lose) and waits until the run ended
// paused and the pool is Canceled; it returns the run's output.
func (a *aksPool) startThenCancel(t *testing.T, lose bool, args ...string) string {
	t.Helper()
	run := startBackground(t, a.cmd(args...))
	if !run.waitFor("started towards") {
		t.Fatalf("the upgrade never started:\n%s", run.output())
	}
	if lose {
		a.srv.LoseAnswer("agentPools/abort/action")
	}
	if c := a.run(t, "cancel", a.name); c.code != nodeupgrade.ExitOK {
		t.Fatalf("cancel: %s", c)
	}
	code, out := run.wait(t, time.Minute)
	if code != nodeupgrade.ExitPaused {
		t.Fatalf("the cancelled run must end paused (exit %d), exit %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	a.waitState(t, "Canceled")
	return out
}

// assertNoAbortOffered checks that neither the pause message nor status
// offers abort, which refuses on a Canceled pool with the run's settings
// on it, and that they offer resume.
func (a *aksPool) assertNoAbortOffered(t *testing.T, paused string) {
	t.Helper()
	st := a.run(t, "status", a.name)
	for what, msg := range map[string]string{"the pause message": paused, "status": st.stdout} {
		if strings.Contains(msg, "nodeupgrade abort") || !strings.Contains(msg, "nodeupgrade resume "+a.name) {
			t.Errorf("%s must offer resume, not abort:\n%s", what, msg)
		}
	}
}

// assertAbortRefused checks that abort refuses, naming resume, says
// nothing went back, and writes nothing to the Canceled pool.
func (a *aksPool) assertAbortRefused(t *testing.T) {
	t.Helper()
	writes := len(a.srv.ChangingCalls())
	ab := a.run(t, "abort", a.name, "--yes")
	t.Logf("abort after cancel: %s", ab)
	if ab.code != nodeupgrade.ExitUsage || !oneLine(ab.stderr) || !strings.Contains(ab.stderr, "resume") || strings.Contains(ab.stdout, "back to") {
		t.Errorf("abort must refuse (exit %d) naming resume: %s", nodeupgrade.ExitUsage, ab)
	}
	if calls := a.srv.ChangingCalls(); len(calls) != writes {
		t.Errorf("abort wrote to the Canceled pool: %v", calls[writes:])
	}
	if st := a.state(t); st != "Canceled" {
		t.Errorf("the pool is %s after abort, want Canceled (AKS's upgrade not taken up again)", st)
	}
}

// TestAKSVersionAboveTheControlPlane: plan and run refuse a version
// above the control plane's (which AKS offers the cluster, and refuses
// for the pool) with exit 2 and a one-line error, before any write to
// Azure; the pool and its nodes are as before.
func TestAKSVersionAboveTheControlPlane(t *testing.T) {
	t.Parallel()
	start := time.Now()
	const name = "aks-above"
	a := setupAKSPool(t, name, aksPoolSpec{})
	for _, cmd := range []string{"plan", "run"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{cmd, name, "--orchestrator-version", aksAbove}
			if cmd == "run" {
				args = append(args, "--yes")
			}
			r := a.run(t, args...)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, "above the control plane") {
				t.Errorf("want exit %d and a one-line error saying the version is above the control plane: %s", nodeupgrade.ExitUsage, r)
			}
		})
	}
	if calls := a.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("the refused commands wrote to Azure: %v", calls)
	}
	if p := a.pool(t).Properties; *p.ProvisioningState != "Succeeded" || *p.OrchestratorVersion != aksOld || p.UpgradeSettings != nil {
		t.Errorf("the pool changed: %s, version %s, settings %s", *p.ProvisioningState, *p.OrchestratorVersion, settingsText(p.UpgradeSettings))
	}
	if on, all := a.nodesOn(t, aksOld, aksOldImage); on != 3 || all != 3 {
		t.Errorf("%d of %d nodes on %s/%s, want all 3 untouched", on, all, aksOld, aksOldImage)
	}
	assertUntouched(t, testContext(t, time.Minute), azurefake.AgentPoolLabel, name)
	t.Logf("%s", time.Since(start).Round(time.Millisecond))
}

// TestFaultsAKS: the Azure endpoint answers faultRate of the plugin's
// requests with ARM's 429 (Retry-After), a 500 before the request, or,
// for a write, the request carried out and its answer lost; a node image
// upgrade and a Kubernetes version upgrade finish under several seeds,
// AKS's upgrade started once, the settings put back, no PDB violated.
func TestFaultsAKS(t *testing.T) {
	t.Parallel()
	for i, target := range [][]string{
		{"--node-image", "latest"}, {"--orchestrator-version", aksNew}, {"--node-image", "latest"}, {"--orchestrator-version", aksNew},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			name := fmt.Sprintf("faults-aks-%d", i)
			a := setupAKSPool(t, name, aksPoolSpec{faults: faultRate, seed: uint64(54 + 7*i)}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
			watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
			if err != nil {
				t.Fatal(err)
			}
			r := a.run(t, append([]string{"run", name, "--yes", "--strategy", "surge", "--max-surge", "2"}, target...)...)
			faults := a.srv.Faults()
			t.Logf("%v through %d ARM faults: %s", target, faults, time.Since(start).Round(time.Millisecond))
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run: %s", r)
			}
			if faults == 0 {
				t.Error("no request was refused: the run was not tested against faults")
			}
			version := aksOld
			if target[0] == "--orchestrator-version" {
				version = aksNew
			}
			a.assertUpgraded(t, version, 3, nil)
			if v := watch.Stop(); len(v) != 0 {
				t.Errorf("PDB violations: %v", v)
			}
		})
	}
}

// TestAKSKilledRunIsFinishedByTheNextCommand kills the run (SIGKILL)
// while AKS upgrades the pool: once as soon as it started AKS's upgrade,
// once while AKS drains a node its own eviction holds at 0 disruptions,
// and once after AKS started the upgrade but before its answer reached
// the run (held back: the run recorded no operation); then runs the same
// command at once: it follows AKS's upgrade to its end, started once, no
// PDB violated.
func TestAKSKilledRunIsFinishedByTheNextCommand(t *testing.T) {
	t.Parallel()
	for i, kp := range []killPoint{
		{name: "started", marker: "started towards"},
		{name: "held", marker: "started towards"},
		{name: "unheard", marker: "Phases ("},
	} {
		t.Run(kp.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			name := fmt.Sprintf("aks-kill-%d", i)
			a := setupAKSPool(t, name, aksPoolSpec{}, slowReadyApp())
			switch kp.name {
			case "held":
				kp.then = func() bool { return pdbAtZero(name, slowReadyApp().Name) }
			case "unheard":
				a.srv.SlowAnswer("agentPools/write", 20*time.Second)
				kp.then = func() bool { return a.state(t) == "Upgrading" }
			}
			watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"run", name, "--yes", "--orchestrator-version", aksNew, "--strategy", "surge", "--max-surge", "1"}
			killed, out := runAndKill(t, a.cmd(args...), kp)
			t.Logf("killed=%v; output up to the kill:\n%s", killed, out)
			if !killed {
				t.Fatal("the run ended before the kill")
			}
			r := a.run(t, args...)
			if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "following AKS agent pool update") {
				t.Fatalf("the next run must follow AKS's upgrade to its end: %s", r)
			}
			// The pool's own maxSurge: the version's PUT is the one write.
			if image, writes := a.upgradeCalls(); image != 0 || writes != 1 {
				t.Errorf("%d upgradeNodeImageVersion and %d agent pool writes, want 0 and 1 (the version's)", image, writes)
			}
			a.assertUpgraded(t, aksNew, 3, nil)
			assertNoViolations(t, watch.Stop())
			t.Logf("%s", time.Since(start).Round(time.Millisecond))
		})
	}
}
