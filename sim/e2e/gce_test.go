package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/clusterautoscaler"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// kopsKey is the node-group label of kOps, which the template's
// kube-labels put on the nodes.
const kopsKey = "kops.k8s.io/instancegroup"

const gceProject = "sim-project"

var gceZones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// gceGroup is a node group of a local Compute endpoint of its own, whose
// instances are kwok nodes of the shared cluster: one regional managed
// instance group, or one zonal group per zone as kOps makes them, all
// launching one template. Update policies and instance redistribution are
// PROACTIVE, the API's defaults: a MIG left so would replace and move
// nodes nobody drained.
type gceGroup struct {
	name string
	keys []string // the MIGs, in zone order
	srv  *gcefake.Server
}

// setupGCEGroup creates a regional group of size instances over three
// zones from template NAME-v1 with image img-old (img-new is registered),
// and apps pinned to it.
func setupGCEGroup(t *testing.T, name string, size int64, apps ...scenario.App) *gceGroup {
	t.Helper()
	g := startGCE(t, name)
	g.addMIG(t, gcefake.GroupSpec{Project: gceProject, Name: name, Region: "us-central1", Zones: gceZones, Template: name + "-v1", Size: size})
	g.ready(t, apps)
	return g
}

// setupZonalGCEGroups creates one zonal group per zone, A-NAME in zone
// us-central1-a and so on, of perZone instances each, as kOps does for
// an instance group over three zones.
func setupZonalGCEGroups(t *testing.T, name string, perZone int64, apps ...scenario.App) *gceGroup {
	t.Helper()
	g := startGCE(t, name)
	for _, z := range gceZones {
		g.addMIG(t, gcefake.GroupSpec{Project: gceProject, Name: z[len(z)-1:] + "-" + name, Zone: z, Template: name + "-v1", Size: perZone})
	}
	g.ready(t, apps)
	return g
}

// startGCE starts the endpoint with the images and template NAME-v1.
func startGCE(t *testing.T, name string) *gceGroup {
	t.Helper()
	return startFaultyGCE(t, name, gcefake.Options{})
}

func (g *gceGroup) addMIG(t *testing.T, spec gcefake.GroupSpec) {
	t.Helper()
	key, err := g.srv.CreateGroup(spec)
	if err != nil {
		t.Fatal(err)
	}
	g.keys = append(g.keys, key)
}

// ready waits for every instance's node and creates apps pinned to them.
func (g *gceGroup) ready(t *testing.T, apps []scenario.App) {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	var names []string
	for _, key := range g.keys {
		if err := g.srv.WaitStable(ctx, key); err != nil {
			t.Fatal(err)
		}
		gr, _ := g.srv.Group(key)
		for _, in := range gr.Instances {
			names = append(names, in.Name)
		}
	}
	if err := scenario.WaitNodesReady(ctx, client, names...); err != nil {
		t.Fatal(err)
	}
	createAppsPinnedBy(t, ctx, kopsKey, g.name, apps)
}

// blueNames are the MIGs' names as the group flag and the plan give them.
func (g *gceGroup) blueNames() string {
	names := make([]string, len(g.keys))
	for i, k := range g.keys {
		names[i] = k[strings.LastIndex(k, "/")+1:]
	}
	return strings.Join(names, ",")
}

// redistribution is what a MIG's instanceRedistributionType reads when
// nothing changed it: PROACTIVE for a regional one, none for a zonal one.
func redistribution(gr gcefake.Group) string {
	if gr.Regional {
		return gcefake.Proactive
	}
	return ""
}

// newTemplate is the name of the template a run makes for img-new.
func (g *gceGroup) newTemplate() string {
	return gce.CopyName(g.name+"-v1", "projects/"+gceProject+"/global/images/img-new")
}

// env is the environment of a plugin run against this group's endpoint,
// with no Google Cloud configuration of the machine leaking in.
func (g *gceGroup) env() []string {
	return append(cleanGCEEnv(), gce.EndpointEnv+"="+g.srv.Endpoint, gce.NoAuthEnv+"=true")
}

// cleanGCEEnv has no credentials: no key file, no gcloud configuration,
// and a metadata server that refuses connections.
func cleanGCEEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOOGLE_") || strings.HasPrefix(kv, "CLOUDSDK_") || strings.HasPrefix(kv, "GCE_") || strings.HasPrefix(kv, "NODEUPGRADE_GCE_")
	})
	return append(env, "NO_COLOR=1", "CLOUDSDK_CONFIG=/nonexistent/gcloud", "GCE_METADATA_HOST=127.0.0.1:1")
}

// cmd runs the plugin: the provider is found from the nodes' provider
// IDs and the gce flags given.
func (g *gceGroup) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	cmd.Env = g.env()
	return cmd
}

func (g *gceGroup) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, g.cmd(args...))
}

// groups are the managed instance groups of the endpoint.
func (g *gceGroup) groups() []gcefake.Group {
	var out []gcefake.Group
	for _, k := range g.srv.GroupKeys(gceProject) {
		if gr, ok := g.srv.Group(k); ok {
			out = append(out, gr)
		}
	}
	return out
}

// assertUnchanged checks nothing of the cloud or the nodes changed: one
// template, the MIGs of the group alone, each of its size per MIG, on
// NAME-v1, their policies as made.
func (g *gceGroup) assertUnchanged(t *testing.T, size int64) {
	t.Helper()
	if ts := g.srv.Templates(gceProject); len(ts) != 1 {
		t.Errorf("templates %v, want only %s-v1", ts, g.name)
	}
	grs := g.groups()
	if len(grs) != len(g.keys) {
		t.Errorf("groups %+v, want %s alone", grs, g.blueNames())
	}
	for _, gr := range grs {
		if !slices.Contains(g.keys, gr.Key) || gr.TargetSize != size/int64(len(g.keys)) || gr.Template != g.name+"-v1" || gr.UpdateType != gcefake.Proactive || gr.Redistribution != redistribution(gr) {
			t.Errorf("group %+v, want one of %s, size %d, on %s-v1, PROACTIVE", gr, g.blueNames(), size/int64(len(g.keys)), g.name)
		}
	}
	assertUntouched(t, testContext(t, time.Minute), kopsKey, g.name)
}

// assertFinished checks the end of an upgrade to img-new: as many groups
// as before (blue/green's green ones), each of its size before the run
// and policies, every instance and node on the one new template, nothing
// left cordoned or tainted, and no instance a group removed of its own
// accord.
func (g *gceGroup) assertFinished(t *testing.T, size int64) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	grs := g.groups()
	if len(grs) != len(g.keys) {
		t.Fatalf("%d groups, want %d: %+v", len(grs), len(g.keys), grs)
	}
	var instances []gcefake.Instance
	for _, gr := range grs {
		if err := g.srv.WaitStable(ctx, gr.Key); err != nil {
			t.Fatal(err)
		}
		gr, _ = g.srv.Group(gr.Key)
		if gr.TargetSize != size/int64(len(g.keys)) || gr.UpdateType != gcefake.Proactive || gr.Redistribution != redistribution(gr) || gr.Template != g.newTemplate() {
			t.Errorf("group %s: size %d, policy %s, redistribution %q, template %s; want %d, PROACTIVE, %q (as before the run), %s",
				gr.Name, gr.TargetSize, gr.UpdateType, gr.Redistribution, gr.Template, size/int64(len(g.keys)), redistribution(gr), g.newTemplate())
		}
		instances = append(instances, gr.Instances...)
	}
	for _, in := range instances {
		if in.Template != g.newTemplate() || in.Image != "projects/"+gceProject+"/global/images/img-new" {
			t.Errorf("instance %s runs %s (%s)", in.Name, in.Template, in.Image)
		}
	}
	if ts := g.srv.Templates(gceProject); len(ts) != 2 || !slices.Contains(ts, g.newTemplate()) {
		t.Errorf("templates %v, want %s-v1 and the one new %s", ts, g.name, g.newTemplate())
	}
	if rs := g.srv.Removals(); len(rs) > 0 {
		t.Errorf("a group removed instances nobody drained: %+v", rs)
	}
	nodes := groupNodes(t, ctx, kopsKey, g.name)
	if len(nodes) != int(size) {
		t.Errorf("%d nodes, want %d", len(nodes), size)
	}
	for _, n := range nodes {
		if !slices.ContainsFunc(instances, func(in gcefake.Instance) bool { return gcefake.ProviderID(in) == n.Spec.ProviderID }) {
			t.Errorf("node %s (%s) is no instance of the groups: a stale Node object", n.Name, n.Spec.ProviderID)
		}
	}
	assertUntouched(t, ctx, kopsKey, g.name)
	if err := scenario.WaitAppsReady(ctx, client, g.name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
}

func gceApps() []scenario.App {
	return []scenario.App{
		{Name: "web", Replicas: 6, MinAvailable: num(4)},
		{Name: "api", Replicas: 3, MaxUnavailable: num(1)},
	}
}

// gceStrategies are the strategies that drive the group, with settings
// for 6 nodes in 3 zones.
var gceStrategies = []struct {
	strategy string
	args     []string
}{
	{"eks", []string{"--max-unavailable", "2"}},
	{"surge", []string{"--max-surge", "1", "--max-unavailable", "0"}},
	{"blue-green", []string{"--batch-node-count", "2", "--node-pool-soak", "0s"}},
}

// TestGCEStrategiesUpgradeToNewImage upgrades a regional group of 6 nodes
// in 3 zones to a new image with each strategy that drives the group.
func TestGCEStrategiesUpgradeToNewImage(t *testing.T) {
	t.Parallel()
	for _, tc := range gceStrategies {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			g := setupGCEGroup(t, "gce-"+tc.strategy, 6, gceApps()...)
			g.upgrade(t, tc.strategy, tc.args, func(c *plan.CloudPlan) bool { return c.Rebalance == gce.Redistribution })
		})
	}
}

// TestGCEZonalMIGsUpgradeToNewImage upgrades a node group of three zonal
// groups, one per zone as kOps makes them, of 2 nodes each: one node
// group, each group resized in its own zone, blue/green with one green
// group per blue one.
func TestGCEZonalMIGsUpgradeToNewImage(t *testing.T) {
	t.Parallel()
	for _, tc := range gceStrategies {
		t.Run(tc.strategy, func(t *testing.T) {
			t.Parallel()
			g := setupZonalGCEGroups(t, "gcez-"+tc.strategy, 2, gceApps()...)
			g.upgrade(t, tc.strategy, tc.args, func(c *plan.CloudPlan) bool {
				return c.GroupKind == "zonal managed instance groups" && strings.Count(c.LaunchesAfter, "update policy PROACTIVE") == 3
			})
		})
	}
}

// upgrade plans and runs an upgrade of 6 nodes to img-new with strategy,
// and checks the plan (the group's names, template and size, and
// planOK), that no PDB was violated, and the end.
func (g *gceGroup) upgrade(t *testing.T, strategy string, extra []string, planOK func(*plan.CloudPlan) bool) {
	t.Helper()
	ctx := testContext(t, 10*time.Minute)
	args := append([]string{g.name, "--strategy", strategy, "--image", "img-new", "--seed", "4"}, extra...)
	pl := g.run(t, append([]string{"plan"}, append(args, "-o", "json")...)...)
	var p plan.Plan
	if err := json.Unmarshal([]byte(pl.stdout), &p); pl.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("plan: %v %s", err, pl)
	}
	if c := p.Cloud; c == nil || c.Provider != "gce" || c.Group != g.blueNames() || c.CurrentVersion != g.name+"-v1" || c.TargetVersion != plan.NewVersion || c.Before.Desired != 6 || !planOK(c) {
		t.Errorf("cloud plan %+v: want gce, %s, %s-v1 -> new, size 6", c, g.blueNames(), g.name)
	}
	g.assertUnchanged(t, 6)
	watcher, err := scenario.WatchPDBs(ctx, client, g.name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := g.run(t, append([]string{"run"}, append(args, "--post-drain-wait", "0s", "--yes")...)...)
	t.Logf("%s on %s, 6 nodes in 3 zones: run took %s", strategy, g.blueNames(), time.Since(start).Round(time.Millisecond))
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	assertNoViolations(t, watcher.Stop())
	g.assertFinished(t, 6)
	if p.BlueGreen != nil {
		// The plan names the green groups the run made, as reviewed.
		var made []string
		for _, gr := range g.groups() {
			made = append(made, gr.Name)
		}
		planned := strings.Split(p.BlueGreen.Green, ",")
		slices.Sort(made)
		slices.Sort(planned)
		if !slices.Equal(made, planned) {
			t.Errorf("the plan named green %q, the run made %q", p.BlueGreen.Green, made)
		}
	}
}

// TestGCEKilledMidBatchThenRerun kills an eks run once a node is cordoned
// and runs it again: it finishes, with one new template only.
func TestGCEKilledMidBatchThenRerun(t *testing.T) {
	t.Parallel()
	const name = "gce-kill"
	g := setupGCEGroup(t, name, 6, gceApps()...)
	args := []string{"run", name, "--image", "img-new", "--max-unavailable", "2", "--post-drain-wait", "2s", "--yes"}
	killed, out := runAndKill(t, g.cmd(args...), killPoint{name: "mid-batch", marker: "cordoned"})
	if !killed {
		t.Fatalf("the run ended before the kill point:\n%s", out)
	}
	if ts := g.srv.Templates(gceProject); len(ts) != 2 {
		t.Errorf("templates after the kill %v, want the one new", ts)
	}
	if r := g.run(t, args...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("re-run: %s", r)
	}
	g.assertFinished(t, 6)
}

// TestGCEAbort aborts a surge run killed mid-batch and a blue/green run
// left soaking: back in service, the group at its size and policies, no
// extra instance, no second group.
func TestGCEAbort(t *testing.T) {
	t.Parallel()
	t.Run("surge mid-batch", func(t *testing.T) {
		t.Parallel()
		const name = "gce-abort-surge"
		g := setupGCEGroup(t, name, 6, gceApps()...)
		args := []string{"run", name, "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--image", "img-new", "--post-drain-wait", "2s", "--yes"}
		if killed, out := runAndKill(t, g.cmd(args...), killPoint{name: "mid-batch", marker: "cordoned"}); !killed {
			t.Fatalf("the run ended before the kill point:\n%s", out)
		}
		if a := g.run(t, "abort", name); a.code != nodeupgrade.ExitOK {
			t.Fatalf("abort: %s", a)
		}
		g.assertAborted(t)
		// The first run after abort, towards the same target, is a run,
		// not a rollback (issue 41 item 8).
		r := g.run(t, args...)
		if r.code != nodeupgrade.ExitOK || strings.Contains(r.stdout, "rolling back") || strings.Contains(r.stdout, "rolled back") {
			t.Fatalf("the run after abort: %s", r)
		}
		if st := g.run(t, "status", name, "-o", "json"); st.code != nodeupgrade.ExitOK || strings.Contains(st.stdout, "rollbackFrom") || strings.Contains(st.stdout, "rolled back") {
			t.Errorf("status of the run after abort: %s", st)
		}
		g.assertFinished(t, 6)
	})
	t.Run("blue-green soak", func(t *testing.T) {
		t.Parallel()
		const name = "gce-abort-bg"
		g := setupGCEGroup(t, name, 6, gceApps()...)
		r := g.run(t, "run", name, "--strategy", "blue-green", "--image", "img-new", "--batch-node-count", "6", "--node-pool-soak", "1h", "--post-drain-wait", "0s", "--no-wait", "--yes")
		if r.code != nodeupgrade.ExitPaused {
			t.Fatalf("--no-wait must stop at the soak with exit %d: %s", nodeupgrade.ExitPaused, r)
		}
		if n := len(g.groups()); n != 2 {
			t.Fatalf("%d groups in the soak, want blue and green", n)
		}
		if a := g.run(t, "abort", name); a.code != nodeupgrade.ExitOK {
			t.Fatalf("abort: %s", a)
		}
		// Right after abort green's nodes may still be there, their
		// instances gone: a plan reads them as leaving, not as a wrong
		// project.
		if p := g.run(t, "plan", name, "--strategy", "blue-green", "--image", "img-new"); p.code != nodeupgrade.ExitOK {
			t.Errorf("plan right after abort: %s", p)
		}
		g.assertAborted(t)
	})
}

// assertAborted checks the group is back in service as before the run.
func (g *gceGroup) assertAborted(t *testing.T) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	if err := g.srv.WaitStable(ctx, g.keys[0]); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for wctx.Err() == nil && len(g.groups()) > 1 {
		time.Sleep(100 * time.Millisecond) // green is deleted with its instances
	}
	grs := g.groups()
	if len(grs) != 1 || grs[0].Name != g.name || grs[0].TargetSize != 6 || len(grs[0].Instances) != 6 {
		t.Errorf("groups %+v, want %s alone with its 6 instances", grs, g.name)
	}
	if rs := g.srv.Removals(); len(rs) > 0 {
		t.Errorf("the group removed instances nobody drained: %+v", rs)
	}
	// PROACTIVE again, unless instances of another template than the
	// group's are left, which it would replace undrained.
	if len(grs) == 1 {
		want := gcefake.Proactive
		if slices.ContainsFunc(grs[0].Instances, func(in gcefake.Instance) bool { return in.Template != grs[0].Template }) {
			want = gcefake.Opportunistic
		}
		if grs[0].UpdateType != want || grs[0].Redistribution != gcefake.Proactive {
			t.Errorf("update policy %s, redistribution %s; want %s, PROACTIVE", grs[0].UpdateType, grs[0].Redistribution, want)
		}
	}
	assertBackInService(t, g.name, g.run, true)
	if n := len(groupNodes(t, ctx, kopsKey, g.name)); n != 6 {
		t.Errorf("%d nodes, want 6", n)
	}
}

// TestGCEBadInputChangesNothing: missing credentials, an unknown image and
// a group of another project end in exit 2 and a one-line message, with
// nothing changed.
func TestGCEBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	const name = "gce-badinput"
	g := setupGCEGroup(t, name, 3)
	run := func(extra ...string) []string { return append([]string{"run", name, "--yes"}, extra...) }
	other := fmt.Sprintf("projects/other-project/regions/us-central1/instanceGroupManagers/%s", name)
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{name: "no credentials", args: run("--image", "img-new"), env: append(cleanGCEEnv(), gce.EndpointEnv+"="+g.srv.Endpoint), want: "no Google Cloud credentials found"},
		{name: "unknown image", args: run("--image", "img-nope"), want: `image "img-nope" not found in project "sim-project"; check --image`},
		{name: "group of another project", args: run("--image", "img-new", "--mig", other), want: `is in project "other-project", the nodes' instances in project "sim-project"`},
		{name: "unknown template", args: run("--instance-template", "nope"), want: `instance template "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := g.cmd(tc.args...)
			if tc.env != nil {
				cmd.Env = tc.env
			}
			r := runCmd(t, cmd)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d and one line with %q, got %s", nodeupgrade.ExitUsage, tc.want, r)
			}
			g.assertUnchanged(t, 3)
		})
	}
}

// TestGCEAutoscaledBlueGreen: green, a MIG from zero, is grown by the
// cluster autoscaler (resize) as blue's pods need room; during the wait
// period the autoscaler removes blue's empty cordoned nodes
// (deleteInstances), not the one with a safe-to-evict=false pod, which
// is drained after it.
func TestGCEAutoscaledBlueGreen(t *testing.T) {
	t.Parallel()
	const name = "gce-abg"
	g := setupGCEGroup(t, name, 3, scenario.App{Name: "keep", Replicas: 1,
		PodAnnotations: map[string]string{clusterautoscaler.SafeToEvictAnnotation: "false"}})
	ctx := testContext(t, 10*time.Minute)
	keeper := onlyPodNode(t, ctx, name)
	greenName := (&gce.NodeGroup{MIGs: []gce.MIG{{Name: name}}}).GreenName(g.newTemplate())
	green := gcefake.GroupKey(gceProject, "", "us-central1", greenName)
	go func() {
		_ = g.srv.RunClusterAutoscaler(ctx, client, gcefake.ClusterAutoscalerOptions{MaxSize: 3, Options: clusterautoscaler.Options{
			ScaleUpGroups: []string{green}, ScaleDownGroups: []string{g.keys[0]}, ScaleDownDelay: 2 * time.Second, Namespaces: []string{name},
		}})
	}()
	run := startBackground(t, g.cmd("run", name, "--strategy", "autoscaled-blue-green", "--image", "img-new", "--wait-period", "25s", "--post-drain-wait", "0s",
		"--ignore-check", "single-replica", "--yes"))
	if !run.waitFor("wait period: ") {
		t.Fatalf("the run never reached the wait period:\n%s", run.output())
	}
	followAutoscaledWait(t, ctx, run, keeper, func(ctx context.Context) string {
		if g.srv.WaitFor(ctx, g.keys[0], func(gr gcefake.Group) bool { return gr.TargetSize == 1 }) == nil {
			return ""
		}
		gr, _ := g.srv.Group(g.keys[0])
		return fmt.Sprintf("target size %d", gr.TargetSize)
	})
	grs := g.groups()
	if len(grs) != 1 || grs[0].Key != green || grs[0].Template != g.newTemplate() || grs[0].TargetSize < 1 {
		t.Errorf("groups %+v, want green %s alone, on %s, grown from 0", grs, green, g.newTemplate())
	}
	if rs := g.srv.Removals(); len(rs) > 0 {
		t.Errorf("a group removed instances nobody drained: %+v", rs)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("the keeper is not Ready on green: %v", err)
	}
}

// TestGCEShortLivedOnlyPointsTheGroupAtTheTarget: the MIG launches the new
// template, nothing is drained, and the update policy stays OPPORTUNISTIC
// while old instances run (PROACTIVE would replace them undrained); an
// old instance preempted is recreated by the MIG from the new template.
func TestGCEShortLivedOnlyPointsTheGroupAtTheTarget(t *testing.T) {
	t.Parallel()
	const name = "gce-short"
	g := setupGCEGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	r := g.run(t, "run", name, "--strategy", "short-lived", "--image", "img-new", "--max-age", "24h", "--yes")
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "3 outdated nodes are left running") || !strings.Contains(r.stdout+r.stderr, "stays OPPORTUNISTIC") {
		t.Fatalf("run: %s", r)
	}
	gr, _ := g.srv.Group(g.keys[0])
	if gr.Template != g.newTemplate() || gr.TargetSize != 3 || gr.UpdateType != gcefake.Opportunistic || gr.Redistribution != gcefake.Proactive {
		t.Errorf("group on %s, size %d, policy %s, redistribution %s; want %s, 3, OPPORTUNISTIC, PROACTIVE", gr.Template, gr.TargetSize, gr.UpdateType, gr.Redistribution, g.newTemplate())
	}
	assertUntouched(t, ctx, kopsKey, name)
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "3 of 3 old nodes still run") || !strings.Contains(st.stdout, "0 older than --max-age 24h") {
		t.Errorf("status: %s", st)
	}
	old := gr.Instances[0]
	if err := g.srv.Preempt(old.Project, old.Zone, old.Name); err != nil {
		t.Fatal(err)
	}
	if err := g.srv.WaitFor(ctx, g.keys[0], func(gr gcefake.Group) bool {
		return gr.Stable() && slices.ContainsFunc(gr.Instances, func(in gcefake.Instance) bool { return in.Name == old.Name && in.Template == g.newTemplate() })
	}); err != nil {
		t.Fatal(err)
	}
	if rs := g.srv.Removals(); len(rs) > 0 {
		t.Errorf("the group removed instances nobody drained: %+v", rs)
	}
}

// runGCEExamples runs the examples of docs/providers/gce.md on the GCE
// demo of `simcluster up --gce-demo`, with 3 nodes: a plan and an eks run
// to img-new, then a blue/green plan and a surge run back to demo-v1.
func runGCEExamples(t *testing.T, ctx context.Context, ex *helpExamples) {
	srv, err := gcefake.StartDemo(ctx, client, gcefake.DemoOptions{Size: 3, LaunchDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	watcher, err := scenario.WatchPDBs(ctx, client, "demo")
	if err != nil {
		t.Fatal(err)
	}
	env := append(cleanGCEEnv(), gce.EndpointEnv+"="+srv.Endpoint, gce.NoAuthEnv+"=true")
	newTemplate := gce.CopyName(gcefake.DemoTemplate, "projects/"+gcefake.DemoProject+"/global/images/"+gcefake.DemoNewImage)
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan demo --image img-new --max-unavailable 2")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade run demo --image img-new --max-unavailable 2 --yes")
	assertGCEDemo(t, ctx, srv, newTemplate)
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan demo --instance-template demo-v1 --strategy blue-green --node-pool-soak 30m")
	ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade run demo --instance-template demo-v1 --strategy surge --max-surge 1 --yes")
	assertGCEDemo(t, ctx, srv, gcefake.DemoTemplate)
	assertNoViolations(t, watcher.Stop())
}

// assertGCEDemo wants the demo's group back in service on template: its
// 3 instances on it, its policies PROACTIVE, no taint or cordon, every
// Deployment Ready.
func assertGCEDemo(t *testing.T, ctx context.Context, srv *gcefake.Server, template string) {
	t.Helper()
	if err := srv.WaitStable(ctx, gcefake.DemoKey()); err != nil {
		t.Fatal(err)
	}
	gr, _ := srv.Group(gcefake.DemoKey())
	if gr.Template != template || gr.TargetSize != 3 || gr.UpdateType != gcefake.Proactive || gr.Redistribution != gcefake.Proactive {
		t.Errorf("group on %s, size %d, policy %s, redistribution %s; want %s, 3, PROACTIVE, PROACTIVE", gr.Template, gr.TargetSize, gr.UpdateType, gr.Redistribution, template)
	}
	for _, in := range gr.Instances {
		if in.Template != template {
			t.Errorf("instance %s runs %s, want %s", in.Name, in.Template, template)
		}
	}
	assertUntouched(t, ctx, gcefake.DemoGroupLabel, gcefake.DemoGroup)
	if err := scenario.WaitAppsReady(ctx, client, "demo"); err != nil {
		t.Errorf("workloads not Ready: %v", err)
	}
}
