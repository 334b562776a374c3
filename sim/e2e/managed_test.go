package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// managedGroup is an EKS managed node group of the local endpoint, its
// nodes on the simulated cluster, Kubernetes 1.30 in a 1.31 cluster.
type managedGroup struct {
	awsGroup
	cluster string
	before  awsfake.Nodegroup
}

// setupManagedGroup starts an endpoint whose EKS carries updates out fast
// (evictions given up after evictionTimeout) with a managed node group of
// size nodes and the apps pinned to it.
func setupManagedGroup(t *testing.T, name string, size int32, evictionTimeout time.Duration, apps ...scenario.App) *managedGroup {
	t.Helper()
	return setupManagedGroupOf(t, name, size, evictionTimeout, nil, apps...)
}

// setupManagedGroupOf is setupManagedGroup with the group's spec changed
// by custom (nil: as it is), on the endpoint.
func setupManagedGroupOf(t *testing.T, name string, size int32, evictionTimeout time.Duration, custom func(*awsfake.Server, *awsfake.ManagedNodeGroupSpec), apps ...scenario.App) *managedGroup {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	eks := awsfake.EKSOptions{EvictionTimeout: evictionTimeout, CordonWait: time.Second, DeleteDrainTimeout: 20 * time.Second,
		NodeReadyTimeout: time.Minute, EvictRetry: 500 * time.Millisecond, ConfigUpdateTime: 100 * time.Millisecond}
	srv, err := awsfake.StartWithKube(context.Background(), client,
		awsfake.Options{Region: "us-east-1", LaunchDelay: 500 * time.Millisecond, EKS: eks}, awsfake.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	m := &managedGroup{awsGroup: awsGroup{name: name, srv: srv, terminating: map[string]bool{}}, cluster: name + "-cluster"}
	srv.CreateEKSCluster(m.cluster, "1.31")
	srv.AddRelease(awsfake.Release{KubernetesVersion: "1.30", ReleaseVersion: "1.30.9-20250101", ImageID: "ami-130"})
	srv.AddRelease(awsfake.Release{KubernetesVersion: "1.31", ReleaseVersion: "1.31.2-20250201", ImageID: "ami-131"})
	spec := awsfake.ManagedNodeGroupSpec{Cluster: m.cluster, Name: name, Zones: awsZones,
		Min: 1, Desired: size, Max: size + 1, Version: "1.30", Labels: map[string]string{"pool": name},
		// What a blue/green green must keep besides (eksgreen.go).
		RemoteAccess:     &awsfake.RemoteAccessConfig{Ec2SshKey: "ops", SourceSecurityGroups: []string{"sg-ops"}},
		NodeRepairConfig: &awsfake.NodeRepairConfig{Enabled: ptrTo(true), MaxUnhealthyNodeThresholdPercentage: ptrTo(int32(20))},
		WarmPoolConfig:   &awsfake.WarmPoolConfig{Enabled: ptrTo(true), MinSize: ptrTo(int32(0)), PoolState: "STOPPED"}}
	if custom != nil {
		custom(srv, &spec)
	}
	ng, err := srv.ManagedNodeGroup(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	m.before = ng
	for i := range apps {
		apps[i].Namespace, apps[i].NodeSelector = name, map[string]string{"pool": name}
		if err := scenario.CreateApp(ctx, client, apps[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	return m
}

// versionUpdates counts the UpdateNodegroupVersion calls the endpoint took.
func (m *managedGroup) versionUpdates() int {
	n := 0
	for _, c := range m.srv.EKSCalls() {
		if strings.HasPrefix(c, "POST ") && strings.HasSuffix(c, "/update-version") {
			n++
		}
	}
	return n
}

// changingCalls are the EKS calls that change something: every method
// but GET (SSM's GetParameter, listed too, only reads).
func (m *managedGroup) changingCalls() []string {
	return slices.DeleteFunc(m.srv.EKSCalls(), func(c string) bool {
		return strings.HasPrefix(c, "GET ") || strings.HasPrefix(c, "SSM GetParameter ")
	})
}

// assertUpdated checks that every node runs the 1.31 release, the update
// config is as before the run, and nothing is left marked.
func (m *managedGroup) assertUpdated(t *testing.T) {
	t.Helper()
	ng, _ := m.srv.Nodegroup(m.cluster, m.name)
	if ng.Version != "1.31" || ng.ReleaseVersion != "1.31.2-20250201" {
		t.Errorf("node group at %s / %s, want 1.31 / 1.31.2-20250201", ng.Version, ng.ReleaseVersion)
	}
	if got, want := updateConfig(ng), updateConfig(m.before); got != want {
		t.Errorf("update config %s, want it restored to %s", got, want)
	}
	ctx := testContext(t, time.Minute)
	for _, n := range groupNodes(t, ctx, "eks.amazonaws.com/nodegroup", m.name) {
		if n.Labels["eks.amazonaws.com/nodegroup-image"] != "ami-131" {
			t.Errorf("node %q runs %q, want ami-131", n.Name, n.Labels["eks.amazonaws.com/nodegroup-image"])
		}
		// What kubectl get nodes shows as VERSION.
		if v := n.Status.NodeInfo.KubeletVersion; v != "v1.31.2-eks" {
			t.Errorf("node %q reports kubelet %q, want the release's v1.31.2-eks", n.Name, v)
		}
	}
}

// updateConfig shows a node group's update config.
func updateConfig(ng awsfake.Nodegroup) string {
	u := ng.UpdateConfig
	if u == nil {
		return "<none>"
	}
	deref := func(p *int32) int32 {
		if p == nil {
			return 0
		}
		return *p
	}
	return fmt.Sprintf("maxUnavailable %d, maxUnavailablePercentage %d, strategy %s", deref(u.MaxUnavailable), deref(u.MaxUnavailablePercentage), u.UpdateStrategy)
}

// TestManagedNodeGroupInPlaceUpdate: EKS's own update of a managed node
// group, started once with the run's settings, followed to the end, the
// group's settings put back; Ctrl-C on the way stops the following only,
// and the next run follows the same update.
func TestManagedNodeGroupInPlaceUpdate(t *testing.T) {
	t.Parallel()
	const name = "mng-inplace"
	m := setupManagedGroup(t, name, 3, time.Minute, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	p := m.run(t, "plan", name, "--kubernetes-version", "1.31", "--max-unavailable", "2")
	for _, want := range []string{"EKS managed node group", "1.31.2-20250201", "maxUnavailable 2 for the run, then back to", "cannot stop an in-place update"} {
		if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, want) {
			t.Errorf("plan must show %q: %s", want, p)
		}
	}
	if calls := m.changingCalls(); len(calls) != 0 {
		t.Errorf("plan changed the node group: %v", calls)
	}
	args := []string{"run", name, "--kubernetes-version", "1.31", "--max-unavailable", "2", "--yes"}
	first := startBackground(t, m.cmd(sim.Kubeconfig, args...))
	if !first.waitFor("started towards") {
		t.Fatalf("the update never started:\n%s", first.output())
	}
	_ = first.cmd.Process.Signal(syscall.SIGINT)
	code, out := first.wait(t, time.Minute)
	if code == nodeupgrade.ExitOK || !strings.Contains(out, "stopped following") {
		t.Errorf("Ctrl-C must stop following and say so, exit %d:\n%s", code, out)
	}
	// EKS offers no cancel of an in-place update: cancel says so, exit 2.
	if c := m.run(t, "cancel", name); c.code != nodeupgrade.ExitUsage || !oneLine(c.stderr) || !strings.Contains(c.stderr, "EKS cannot stop an in-place update") {
		t.Errorf("cancel must refuse with EKS's reason, exit %d: %s", nodeupgrade.ExitUsage, c)
	}
	// Nor can abort stop it: it says how to follow it, exit 2, nothing
	// changed.
	before := len(m.changingCalls())
	if a := m.run(t, "abort", name, "--yes"); a.code != nodeupgrade.ExitUsage || !oneLine(a.stderr) || !strings.Contains(a.stderr, "cannot stop an in-place update") {
		t.Errorf("abort must refuse while EKS's update runs, exit %d: %s", nodeupgrade.ExitUsage, a)
	}
	if calls := m.changingCalls(); len(calls) != before {
		t.Errorf("abort changed the node group: %v", calls[before:])
	}
	second := m.run(t, args...)
	if second.code != nodeupgrade.ExitOK || !strings.Contains(second.stdout, "following EKS managed node group update") {
		t.Fatalf("the second run must follow the same update to its end: %s", second)
	}
	if n := m.versionUpdates(); n != 1 {
		t.Errorf("%d UpdateNodegroupVersion calls, want exactly 1", n)
	}
	m.assertUpdated(t)
	if v := watch.Stop(); len(v) != 0 {
		t.Errorf("PDB violations: %v", v)
	}
	// EKS takes the group back to Kubernetes 1.30 neither in place nor on
	// a new group: rollback says so in one line, nothing changed.
	before = len(m.changingCalls())
	if r := m.run(t, "rollback", name, "--yes"); r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, "nothing takes it back to Kubernetes 1.30") {
		t.Errorf("rollback to an earlier Kubernetes version: want exit %d in one line with EKS's reason: %s", nodeupgrade.ExitUsage, r)
	}
	if calls := m.changingCalls(); len(calls) != before {
		t.Errorf("the refused rollback changed the node group: %v", calls[before:])
	}
}

// TestManagedNodeGroupRollbackAfterAFinishedUpdate: a managed node group
// made from the user's launch template, with its own AMI, updated to a
// new image (version 2 of the template); rollback has EKS take it back to
// version 1 with UpdateNodegroupVersion, which takes any version of the
// group's own template (eks-managed.md), planned first, no PDB violated.
func TestManagedNodeGroupRollbackAfterAFinishedUpdate(t *testing.T) {
	t.Parallel()
	const name = "mng-rollback"
	var lt string
	m := setupManagedGroupOf(t, name, 2, time.Minute, func(srv *awsfake.Server, spec *awsfake.ManagedNodeGroupSpec) {
		lt = srv.CreateLaunchTemplate(name, "ami-custom1", "m5.large")
		srv.RegisterImage("ami-custom2", "node-v2")
		spec.LaunchTemplate, spec.Version = &awsfake.LaunchTemplateSpec{ID: lt}, ""
	}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	if r := m.run(t, "run", name, "--ami", "ami-custom2", "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	before := len(m.changingCalls())
	if p := m.run(t, "plan", name, "--rollback"); p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, "launch template "+lt+" version 1") {
		t.Errorf("plan --rollback: want launch template %s version 1: %s", lt, p)
	}
	if calls := m.changingCalls(); len(calls) != before {
		t.Errorf("plan --rollback changed the node group: %v", calls[before:])
	}
	if r := m.run(t, "rollback", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("rollback: %s", r)
	}
	if ng, _ := m.srv.Nodegroup(m.cluster, name); ng.LaunchTemplate.Version != "1" || ng.ReleaseVersion != "ami-custom1" {
		t.Errorf("node group after the rollback: launch template version %s, release %s; want 1, ami-custom1", ng.LaunchTemplate.Version, ng.ReleaseVersion)
	}
	for _, n := range groupNodes(t, testContext(t, time.Minute), "eks.amazonaws.com/nodegroup", name) {
		if img := n.Labels["eks.amazonaws.com/nodegroup-image"]; img != "ami-custom1" {
			t.Errorf("node %q runs %q after the rollback, want ami-custom1", n.Name, img)
		}
	}
	if n := m.versionUpdates(); n != 2 {
		t.Errorf("%d UpdateNodegroupVersion calls, want the run's and the rollback's", n)
	}
	if v := watch.Stop(); len(v) != 0 {
		t.Errorf("PDB violations: %v", v)
	}
}

// TestManagedNodeGroupPDBHoldsTheUpdate: a PDB that allows no disruption
// is a blocker before EKS is called; with the check ignored the run names
// the pod and the PDB while EKS tries, and ends with PodEvictionFailure's
// exit code naming node, pod and PDB.
func TestManagedNodeGroupPDBHoldsTheUpdate(t *testing.T) {
	t.Parallel()
	const name = "mng-pdb"
	m := setupManagedGroup(t, name, 2, 15*time.Second, scenario.App{Name: "db", Replicas: 2, MinAvailable: num(2)})
	args := []string{"run", name, "--kubernetes-version", "1.31", "--yes"}
	refused := m.run(t, args...)
	if refused.code != nodeupgrade.ExitBlockers || !strings.Contains(refused.stderr, "pdb-zero-disruptions") {
		t.Errorf("run must refuse the blocker with exit %d: %s", nodeupgrade.ExitBlockers, refused)
	}
	if calls := m.changingCalls(); len(calls) != 0 {
		t.Errorf("the refused run changed the node group: %v", calls)
	}
	// No post-drain wait: abort's scale-down waits it after each node.
	forced := m.run(t, append(args, "--ignore-check", "pdb-zero-disruptions", "--post-drain-wait", "0s")...)
	if forced.code != nodeupgrade.ExitPodEvictionError {
		t.Fatalf("want exit %d (PodEvictionFailure): %s", nodeupgrade.ExitPodEvictionError, forced)
	}
	for _, want := range []string{`pod "mng-pdb/db-`, `PodDisruptionBudget "mng-pdb/db"`, "PodEvictionFailure"} {
		if !strings.Contains(forced.stdout, want) || !strings.Contains(forced.stderr, want) {
			t.Errorf("the progress and the error must name %q: %s", want, forced)
		}
	}
	if !oneLine(forced.stderr) {
		t.Errorf("the error must be one line: %q", forced.stderr)
	}
	m.assertAbortTakesBackTheScaleUp(t)
}

// TestManagedNodeGroupRerunAfterPodEvictionFailure: once EKS's update
// failed, the same command (the PDB mended) follows the failed update no
// more: it audits the group again, starts a new update, and at its end
// takes back the first update's scale-up, which EKS's second update does
// not scale down: the group ends upgraded at its sizes of before.
func TestManagedNodeGroupRerunAfterPodEvictionFailure(t *testing.T) {
	t.Parallel()
	const name = "mng-rerun"
	m := setupManagedGroup(t, name, 2, 10*time.Second, scenario.App{Name: "db", Replicas: 2, MinAvailable: num(2)})
	args := []string{"run", name, "--kubernetes-version", "1.31", "--yes", "--post-drain-wait", "0s"}
	if failed := m.run(t, append(args, "--ignore-check", "pdb-zero-disruptions")...); failed.code != nodeupgrade.ExitPodEvictionError {
		t.Fatalf("want exit %d (PodEvictionFailure): %s", nodeupgrade.ExitPodEvictionError, failed)
	}
	ctx := testContext(t, 5*time.Minute)
	pdb, err := client.PolicyV1().PodDisruptionBudgets(name).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable = num(1)
	if _, err := client.PolicyV1().PodDisruptionBudgets(name).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	again := m.run(t, args...)
	t.Logf("re-run: %s", again)
	if again.code != nodeupgrade.ExitOK || strings.Contains(again.stderr, "following it to its end") {
		t.Fatalf("re-run: exit %d, want %d with a new update, not the failed one followed", again.code, nodeupgrade.ExitOK)
	}
	if n := m.versionUpdates(); n != 2 {
		t.Errorf("%d UpdateNodegroupVersion calls, want 2: the failed one and the re-run's", n)
	}
	m.assertUpdated(t)
	ng, _ := m.srv.Nodegroup(m.cluster, m.name)
	if d, x := *ng.ScalingConfig.DesiredSize, *ng.ScalingConfig.MaxSize; d != *m.before.ScalingConfig.DesiredSize || x != *m.before.ScalingConfig.MaxSize {
		t.Errorf("desired %d, max %d after the re-run; want %d, %d as before the run", d, x, *m.before.ScalingConfig.DesiredSize, *m.before.ScalingConfig.MaxSize)
	}
	if nodes := groupNodes(t, ctx, "eks.amazonaws.com/nodegroup", m.name); len(nodes) != int(*m.before.ScalingConfig.DesiredSize) {
		t.Errorf("%d nodes after the re-run, want %d", len(nodes), *m.before.ScalingConfig.DesiredSize)
	}
	assertUntouched(t, ctx, "eks.amazonaws.com/nodegroup", m.name)
}

// assertAbortTakesBackTheScaleUp: after EKS's update failed, leaving its
// scale-up, abort puts the group back as it was before the run: the nodes
// EKS added drained and removed, desired and max as before, nothing
// tainted or cordoned, the update config restored, no PDB broken.
func (m *managedGroup) assertAbortTakesBackTheScaleUp(t *testing.T) {
	t.Helper()
	sizes := func() (desired, max int32) {
		ng, _ := m.srv.Nodegroup(m.cluster, m.name)
		return *ng.ScalingConfig.DesiredSize, *ng.ScalingConfig.MaxSize
	}
	wantDesired, wantMax := *m.before.ScalingConfig.DesiredSize, *m.before.ScalingConfig.MaxSize
	if d, _ := sizes(); d <= wantDesired {
		t.Fatalf("EKS's failed update left desired %d, want its scale-up above %d: the test proves nothing", d, wantDesired)
	}
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, m.name)
	if err != nil {
		t.Fatal(err)
	}
	abort := m.run(t, "abort", m.name)
	t.Logf("abort: %s", abort)
	if abort.code != nodeupgrade.ExitOK {
		t.Fatalf("abort: %s; want exit %d", abort, nodeupgrade.ExitOK)
	}
	if d, x := sizes(); d != wantDesired || x != wantMax {
		t.Errorf("after abort desired %d, max %d; want %d, %d as before the run", d, x, wantDesired, wantMax)
	}
	if nodes := groupNodes(t, ctx, "eks.amazonaws.com/nodegroup", m.name); len(nodes) != int(wantDesired) {
		t.Errorf("%d nodes after abort, want %d", len(nodes), wantDesired)
	}
	ng, _ := m.srv.Nodegroup(m.cluster, m.name)
	if got, want := updateConfig(ng), updateConfig(m.before); got != want {
		t.Errorf("update config %s, want it restored to %s", got, want)
	}
	assertUntouched(t, ctx, "eks.amazonaws.com/nodegroup", m.name)
	assertNoViolations(t, watcher.Stop())
}

// TestManagedNodeGroupBadTargetsChangeNothing: what EKS would refuse is
// refused at plan time, exit 2, with no call that changes anything.
func TestManagedNodeGroupBadTargetsChangeNothing(t *testing.T) {
	t.Parallel()
	const name = "mng-bad"
	m := setupManagedGroup(t, name, 2, time.Minute)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"version above the control plane", []string{"--kubernetes-version", "1.33"}, "above the control plane"},
		{"launch template on a group made without one", []string{"--launch-template-version", "2"}, "not created with a launch template"},
		{"custom AMI on an EKS AMI type", []string{"--ami", "ami-0abc1234"}, "--ami needs a managed node group whose launch template names its own AMI"},
		{"unknown update strategy", []string{"--update-strategy", "FAST"}, "invalid --update-strategy"},
		// API Reference, UpdateNodegroupVersion: "You cannot roll back a
		// node group to an earlier Kubernetes version or AMI version".
		{"an earlier Kubernetes version", []string{"--kubernetes-version", "1.29"}, "cannot roll a node group back to an earlier version"},
		{"an earlier release", []string{"--release-version", "1.30.8-20241201"}, "cannot roll a node group back to an earlier AMI version"},
		{"a release that does not exist", []string{"--release-version", "1.30.9-20990101"}, `--release-version "1.30.9-20990101" does not exist`},
		{"a release of another version", []string{"--kubernetes-version", "1.31", "--release-version", "1.30.9-20250101"}, "is not a release of Kubernetes 1.31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p := m.run(t, append([]string{"plan", name}, tc.args...)...); p.code != nodeupgrade.ExitUsage || !strings.Contains(p.stderr, tc.want) {
				t.Errorf("plan: want exit %d and an error with %q: %s", nodeupgrade.ExitUsage, tc.want, p)
			}
			r := m.run(t, append([]string{"run", name, "--yes"}, tc.args...)...)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d and a one-line error with %q: %s", nodeupgrade.ExitUsage, tc.want, r)
			}
		})
	}
	if calls := m.changingCalls(); len(calls) != 0 {
		t.Errorf("refused runs changed the node group: %v", calls)
	}
	for _, n := range groupNodes(t, testContext(t, time.Minute), "eks.amazonaws.com/nodegroup", name) {
		if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Effect == corev1.TaintEffectNoSchedule }) {
			t.Errorf("node %q was marked", n.Name)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
