package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// assertGreenServes checks that blue's group is gone and the node group
// runs on green: every node of it on launch template version 2.
func (g *awsGroup) assertGreenServes(t *testing.T, green string) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	if slices.Contains(g.srv.Groups(), g.name) {
		t.Errorf("blue Auto Scaling group %q still exists", g.name)
	}
	if err := g.srv.WaitStable(ctx, green); err != nil {
		t.Fatal(err)
	}
	gr, ok := g.srv.Group(green)
	if !ok || gr.Desired != g.original.Desired {
		t.Fatalf("green %q: %+v, want %d instances", green, gr.GroupSpec, g.original.Desired)
	}
	nodes := groupNodes(t, ctx, groupKey, g.name)
	if len(nodes) != int(g.original.Desired) {
		t.Errorf("the node group has %d nodes, want %d (green's)", len(nodes), g.original.Desired)
	}
	for _, n := range nodes {
		if n.Labels["eks.amazonaws.com/sourceLaunchTemplateVersion"] != "2" || n.Spec.Unschedulable {
			t.Errorf("node %q: version %q, cordoned %v; want green's version 2, schedulable", n.Name, n.Labels["eks.amazonaws.com/sourceLaunchTemplateVersion"], n.Spec.Unschedulable)
		}
		if _, ok := n.Annotations[scaleDownDisabled]; ok {
			t.Errorf("node %q still has %s", n.Name, scaleDownDisabled)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, g.name); err != nil {
		t.Errorf("workloads not Ready on green: %v", err)
	}
}

func TestAWSBlueGreenCreatedByTheTool(t *testing.T) {
	t.Parallel()
	const name = "aws-bg"
	g := setupAWSGroup(t, name, 6,
		scenario.App{Name: "web", Replicas: 6, MinAvailable: num(4)},
		scenario.App{Name: "api", Replicas: 3, MaxUnavailable: num(1)},
	)
	ctx := testContext(t, 10*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "2", "--batch-soak", "4s", "--node-pool-soak", "1h", "--post-drain-wait", "0s", "--yes"}
	pl := g.run(t, append([]string{"plan"}, args[1:len(args)-3]...)...)
	for _, want := range []string{"CreateGreen", "3 batches of up to 2 nodes, 4s soak between batches", "Soak      1h;"} {
		if !strings.Contains(pl.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, pl.stdout)
		}
	}
	run := startBackground(t, g.cmd(sim.Kubeconfig, args...))
	start := time.Now()
	if !run.waitFor("node pool soak: ") {
		t.Fatalf("the run never reached the soak:\n%s", run.output())
	}
	out := run.output()
	if n := strings.Count(out, "soak: 4s"); n != 2 {
		t.Errorf("want the 4s batch soak twice (between 3 batches), saw %d:\n%s", n, out)
	}
	st := g.run(t, "status", name)
	if !strings.Contains(st.stdout, "soaking until") || !strings.Contains(st.stdout, "green Auto Scaling group \"aws-bg-v2\"") {
		t.Errorf("status during the soak does not show it: %s", st)
	}
	// Not soaking yet is refused; soaking, complete ends it.
	if c := g.run(t, "complete", name); c.code != nodeupgrade.ExitOK {
		t.Fatalf("complete: %s", c)
	}
	code, out := run.wait(t, 5*time.Minute)
	t.Logf("blue/green of 6 nodes in 3 batches: %s until complete ended the soak", time.Since(start).Round(time.Second))
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", code, out)
	}
	assertNoViolations(t, watcher.Stop())
	if !strings.Contains(out, "soak ended by complete") {
		t.Errorf("the run does not say complete ended the soak:\n%s", out)
	}
	g.assertGreenServes(t, name+"-v2")
	// Blue launched $Default: green does too, with the new version the default.
	if gr, _ := g.srv.Group(name + "-v2"); gr.LaunchTemplateVersion != "$Default" {
		t.Errorf("green launches %q, want $Default as blue did", gr.LaunchTemplateVersion)
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); lt.DefaultVersion != 2 {
		t.Errorf("the launch template's default is version %d, want 2", lt.DefaultVersion)
	}
	if r := g.run(t, "rollback", name, "--yes"); r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) {
		t.Errorf("rollback after blue was deleted must exit %d with one line: %s", nodeupgrade.ExitUsage, r)
	}
}

func TestAWSBlueGreenRollbackDuringTheDrain(t *testing.T) {
	t.Parallel()
	const name = "aws-bg-rollback"
	g := setupAWSGroup(t, name, 3,
		scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)},
	)
	ctx := testContext(t, 10*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	run := startBackground(t, g.cmd(sim.Kubeconfig, "run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "1", "--batch-soak", "2m", "--post-drain-wait", "0s", "--yes"))
	if !run.waitFor("batch 1/3: soak") {
		t.Fatalf("the run never reached the first batch soak:\n%s", run.output())
	}
	if r := g.run(t, "rollback", name); r.code != nodeupgrade.ExitOK {
		t.Fatalf("rollback: %s", r)
	}
	code, out := run.wait(t, 5*time.Minute)
	if code != nodeupgrade.ExitOK || !strings.Contains(out, "rolled back") {
		t.Fatalf("run exit %d, want %d having rolled back:\n%s", code, nodeupgrade.ExitOK, out)
	}
	// The live run's own writes after it kept what the command asked.
	if a := g.record(t).Asked; a == nil || a.Control != "rollback" || a.By == "" || !a.Answered {
		t.Errorf("the record says asked %+v; want the rollback, by the command's process, answered", a)
	}
	assertNoViolations(t, watcher.Stop())
	if slices.Contains(g.srv.Groups(), name+"-v2") {
		t.Errorf("green was not deleted: %v", g.srv.Groups())
	}
	gr, _ := g.srv.Group(name)
	if gr.Min != g.original.Min || gr.Desired != g.original.Desired || gr.Max != g.original.Max {
		t.Errorf("blue sizes %d/%d/%d, want the original %d/%d/%d", gr.Min, gr.Desired, gr.Max, g.original.Min, g.original.Desired, g.original.Max)
	}
	// Blue launches $Default, and the default is blue's version again.
	if lt, _ := g.srv.LaunchTemplate(g.template); gr.LaunchTemplateVersion != "$Default" || lt.DefaultVersion != 1 {
		t.Errorf("blue launches %q with default version %d, want $Default with version 1", gr.LaunchTemplateVersion, lt.DefaultVersion)
	}
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if n.Spec.Unschedulable {
			t.Errorf("blue node %q left cordoned", n.Name)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads not back on blue: %v", err)
	}
}

func TestAWSBlueGreenCancelKillResume(t *testing.T) {
	t.Parallel()
	const name = "aws-bg-resume"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	run := startBackground(t, g.cmd(sim.Kubeconfig, "run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "1", "--batch-soak", "5s", "--node-pool-soak", "2s", "--post-drain-wait", "0s", "--yes"))
	if !run.waitFor("batch 1/3: soak") {
		t.Fatalf("the run never reached a batch soak:\n%s", run.output())
	}
	if r := g.run(t, "cancel", name); r.code != nodeupgrade.ExitOK {
		t.Fatalf("cancel: %s", r)
	}
	code, out := run.wait(t, time.Minute)
	if code != nodeupgrade.ExitPaused || !strings.Contains(out, "paused by cancel") {
		t.Fatalf("the cancelled run must stop with exit %d saying it paused; exit %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	// A plain run is refused while paused, and so is complete outside a soak.
	if r := g.run(t, "run", name, "--strategy", "blue-green", "--ami", "ami-new", "--yes"); r.code != nodeupgrade.ExitUsage || !strings.Contains(r.stderr, "paused") {
		t.Errorf("run on a paused group must exit %d: %s", nodeupgrade.ExitUsage, r)
	}
	// Resume, killed at once, then resumed again: it finishes.
	first := startBackground(t, g.cmd(sim.Kubeconfig, "resume", name, "--yes"))
	if !first.waitFor("resuming the run") {
		t.Fatalf("resume did not start:\n%s", first.output())
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	first.wait(t, time.Minute)
	r := g.run(t, "resume", name, "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("second resume: %s", r)
	}
	t.Logf("second resume:\n%s", r.stdout)
	g.assertGreenServes(t, name+"-v2")
}

func TestAWSRefusedControlsExitTwo(t *testing.T) {
	t.Parallel()
	g := setupAWSGroup(t, "aws-controls", 1)
	ctx := testContext(t, time.Minute)
	store := &state.Store{Client: client, Namespace: "kube-system"}
	for _, tc := range []struct {
		name, action string
		rec          state.Record
		want         string
	}{
		{"cancel during blue deletion", "cancel", state.Record{Strategy: "blue-green", Phase: "DeleteBlue"}, "is deleting blue, which cannot be stopped or undone"},
		{"complete when not soaking", "complete", state.Record{Strategy: "blue-green", Phase: "Drain"}, "not soaking"},
		{"rollback during blue deletion", "rollback", state.Record{Strategy: "blue-green", Phase: "DeleteBlue"}, "cannot roll back"},
		{"rollback of an eks run with nothing to go back to", "rollback", state.Record{Strategy: "eks", Phase: "Drain"}, "recorded no version of its group to go back to"},
		{"resume with nothing recorded", "resume", state.Record{}, "has no run recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := "ctl-" + strings.ReplaceAll(tc.name, " ", "-")
			if tc.rec.Phase != "" {
				rec := tc.rec
				rec.NodeGroup, rec.StartedAt = group, time.Now()
				if err := store.Save(ctx, &rec); err != nil {
					t.Fatal(err)
				}
			}
			r := g.run(t, tc.action, group)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d with one line mentioning %q, got %s", nodeupgrade.ExitUsage, tc.want, r)
			}
		})
	}
}

func TestAWSAutoscaledBlueGreenKeepsSafeToEvictFalseNodesThroughTheWait(t *testing.T) {
	t.Parallel()
	const name = "aws-abg"
	g := setupAWSGroup(t, name, 3)
	ctx := testContext(t, 10*time.Minute)
	// One pod that the autoscaler must not evict; the other blue nodes are
	// empty, so the autoscaler removes them during the wait period.
	createPinnedApps(t, ctx, name, []scenario.App{{Name: "keep", Replicas: 1,
		PodAnnotations: map[string]string{awsfake.SafeToEvictAnnotation: "false"}}})
	keeper := onlyPodNode(t, ctx, name)
	green := name + "-v2"
	go func() {
		_ = g.srv.RunAutoscaler(ctx, client, awsfake.AutoscalerOptions{
			ScaleUpGroups: []string{green}, ScaleDownGroups: []string{name}, ScaleDownDelay: 2 * time.Second, Namespaces: []string{name},
		})
	}()
	run := startBackground(t, g.cmd(sim.Kubeconfig, "run", name, "--strategy", "autoscaled-blue-green", "--ami", "ami-new", "--wait-period", "25s", "--post-drain-wait", "0s",
		"--ignore-check", "single-replica", "--yes"))
	if !run.waitFor("wait period: ") {
		t.Fatalf("the run never reached the wait period:\n%s", run.output())
	}
	if r := g.run(t, "rollback", name, "--yes"); r.code != nodeupgrade.ExitUsage || !strings.Contains(r.stderr, "supports blue-green") {
		t.Errorf("rollback of autoscaled blue/green must exit %d: %s", nodeupgrade.ExitUsage, r)
	}
	followAutoscaledWait(t, ctx, run, keeper, func(ctx context.Context) string {
		if g.srv.WaitFor(ctx, name, func(gr awsfake.Group) bool { return gr.Desired == 1 }) == nil {
			return ""
		}
		gr, _ := g.srv.Group(name)
		return fmt.Sprintf("desired %d", gr.Desired)
	})
	if slices.Contains(g.srv.Groups(), name) {
		t.Errorf("blue Auto Scaling group %q still exists", name)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("the keeper is not Ready on green: %v", err)
	}
}

func TestAWSBlueGreenGivenGreenNoWaitThenRunAgain(t *testing.T) {
	t.Parallel()
	const name = "aws-bg-given"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	// Someone else made green: version 2 of the same launch template.
	version, err := g.srv.AddLaunchTemplateVersion(g.template, "ami-new")
	if err != nil || version != 2 {
		t.Fatalf("version %d: %v", version, err)
	}
	green := name + "-theirs"
	if err := g.srv.CreateGroup(awsfake.GroupSpec{Name: green, Min: 0, Desired: 3, Max: 4, Zones: awsZones, LaunchTemplateID: g.template, LaunchTemplateVersion: "2"}); err != nil {
		t.Fatal(err)
	}
	if err := g.srv.WaitStable(ctx, green); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", name, "--strategy", "blue-green", "--green-asg", green, "--launch-template-version", "2", "--batch-node-count", "3", "--node-pool-soak", "1h", "--post-drain-wait", "0s", "--yes"}
	r := g.run(t, append(args, "--no-wait")...)
	if r.code != nodeupgrade.ExitPaused || !strings.Contains(r.stderr, "soaking until") {
		t.Fatalf("--no-wait must stop at the soak with exit %d: %s", nodeupgrade.ExitPaused, r)
	}
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "soaking until") {
		t.Errorf("status does not show the soak: %s", st)
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 2 {
		t.Errorf("a given green and version made no new version, but there are %d", len(lt.Versions))
	}
	if c := g.run(t, "complete", name); c.code != nodeupgrade.ExitOK {
		t.Fatalf("complete: %s", c)
	}
	// complete ended the soak in the record, with no process to tell: status
	// says so and resume goes straight on to delete blue (not the 1h soak).
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "soak over") {
		t.Errorf("status after complete does not say the soak is over: %s", st)
	}
	if r := g.run(t, "resume", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume after complete: %s", r)
	}
	g.assertGreenServes(t, green)
	if !slices.Contains(g.srv.Groups(), green) {
		t.Errorf("the given green group was deleted")
	}
}

func TestAWSBlueGreenGreenGivenBySelector(t *testing.T) {
	t.Parallel()
	const name = "aws-bg-selector"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	// Green is plain nodes someone else made, e.g. by another provisioner.
	var green []string
	for i, z := range awsZones {
		n := fmt.Sprintf("%s-green-%d", name, i)
		if err := scenario.CreateNode(ctx, client, scenario.Node{Name: n, Zone: z, Labels: map[string]string{groupKey: name, "pool": "theirs-" + name}}); err != nil {
			t.Fatal(err)
		}
		green = append(green, n)
	}
	if err := scenario.WaitNodesReady(ctx, client, green...); err != nil {
		t.Fatal(err)
	}
	r := g.run(t, "run", name, "--provider", "aws", "--strategy", "blue-green", "--green-selector", "pool=theirs-"+name, "--batch-node-count", "3", "--node-pool-soak", "0s", "--post-drain-wait", "0s", "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	if slices.Contains(g.srv.Groups(), name) {
		t.Errorf("blue Auto Scaling group %q still exists", name)
	}
	for _, n := range green {
		node, err := client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil || node.Spec.Unschedulable {
			t.Errorf("green node %q: %v, cordoned %v", n, err, err == nil && node.Spec.Unschedulable)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads not Ready on green: %v", err)
	}
}

// onlyPodNode is the node of the one pod of namespace ns.
func onlyPodNode(t *testing.T, ctx context.Context, ns string) string {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods: %v %v", pods, err)
	}
	return pods.Items[0].Spec.NodeName
}

// followAutoscaledWait follows an autoscaled blue/green run from its wait
// period to its end: within 20s the cluster autoscaler leaves blue with
// the one node keeper, which a safe-to-evict=false pod keeps (shrunk
// waits for that and says what blue has instead), keeper stays through
// the wait and is drained after it, and the run succeeds.
func followAutoscaledWait(t *testing.T, ctx context.Context, run *background, keeper string, shrunk func(context.Context) string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if got := shrunk(wctx); got != "" {
		t.Fatalf("the autoscaler did not shrink blue to the one node that must stay during the wait period: %s", got)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, keeper, metav1.GetOptions{}); err != nil {
		t.Fatalf("node %q with the safe-to-evict=false pod is gone during the wait period: %v", keeper, err)
	}
	code, out := run.wait(t, 5*time.Minute)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "draining \""+keeper+"\"") {
		t.Errorf("the keeper node %q was not drained after the wait period:\n%s", keeper, out)
	}
}
