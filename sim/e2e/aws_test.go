package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsprovider "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

const scaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"

var awsZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// awsGroup is a node group behind an Auto Scaling group of a local AWS
// endpoint of its own, whose instances are kwok nodes of the shared cluster.
type awsGroup struct {
	name     string
	srv      *awsfake.Server
	template string
	original awsfake.GroupSpec
	notReady atomic.Bool // new instances come up as nodes that never get Ready

	mu          sync.Mutex
	peakDesired int32    // the largest desired capacity seen
	oldGone     []string // zones of the old instances, in the order they started terminating
	terminating map[string]bool
}

// setupAWSGroup creates a node group of size instances over three zones,
// launch template version 1 with image ami-old (ami-new is registered), and
// apps pinned to it.
func setupAWSGroup(t *testing.T, name string, size int32, apps ...scenario.App) *awsGroup {
	t.Helper()
	return setupAWSGroupWith(t, name, size, awsfake.Options{}, apps...)
}

// setupAWSGroupWith is setupAWSGroup with more of the endpoint's options
// (region and launch delay are the usual ones).
func setupAWSGroupWith(t *testing.T, name string, size int32, opts awsfake.Options, apps ...scenario.App) *awsGroup {
	t.Helper()
	return setupAWSGroupSpec(t, awsfake.NodeGroupSpec{Name: name, Zones: awsZones, Size: size, Min: 1, Max: size + 1, ImageID: "ami-old"}, opts, apps...)
}

// setupAWSGroupSpec is setupAWSGroupWith with the group's whole spec
// (its subnets, say).
func setupAWSGroupSpec(t *testing.T, spec awsfake.NodeGroupSpec, opts awsfake.Options, apps ...scenario.App) *awsGroup {
	t.Helper()
	ctx := testContext(t, 3*time.Minute)
	name := spec.Name
	g := &awsGroup{name: name, terminating: map[string]bool{}}
	opts.Region, opts.LaunchDelay = "us-east-1", 500*time.Millisecond
	srv, err := awsfake.StartWithKube(context.Background(), client,
		opts,
		awsfake.NodeOptions{NotReady: func(awsfake.Instance) bool { return g.notReady.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	g.srv = srv
	srv.RegisterImage("ami-new", "node-v2")
	g.template, err = srv.NodeGroup(ctx, client, spec)
	if err != nil {
		t.Fatal(err)
	}
	made, _ := srv.Group(name)
	g.original = made.GroupSpec
	createPinnedApps(t, ctx, name, apps)
	// Watch the group's desired capacity for the whole test: a re-run must
	// never inflate it past the first scale-up.
	watchCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		_ = srv.WaitFor(watchCtx, name, func(gr awsfake.Group) bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.peakDesired = max(g.peakDesired, gr.Desired)
			for _, in := range gr.Instances {
				if in.LaunchTemplateVersion == "1" && in.Lifecycle != awsfake.LifecycleInService && !g.terminating[in.ID] {
					g.terminating[in.ID] = true
					g.oldGone = append(g.oldGone, in.Zone)
				}
			}
			return false
		})
	}()
	return g
}

func (g *awsGroup) peak() int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peakDesired
}

// env is the environment of a plugin run against this group's endpoint,
// with no other AWS configuration from the machine leaking in.
func (g *awsGroup) env() []string {
	return append(cleanAWSEnv(),
		"AWS_ENDPOINT_URL="+g.srv.URL,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
}

func cleanAWSEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") })
	return append(env, "NO_COLOR=1", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/nonexistent/aws/config", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent/aws/credentials")
}

func (g *awsGroup) cmd(kubeconfig string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = g.env()
	return cmd
}

func (g *awsGroup) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, g.cmd(sim.Kubeconfig, args...))
}

// assertFinished checks the end state of an upgrade to launch template
// version 2: every instance on it, the sizes of before the run, nothing
// left tainted, cordoned or annotated, one new version only, and the
// record finished.
func (g *awsGroup) assertFinished(t *testing.T) {
	t.Helper()
	g.assertFinishedWithin(t, g.original.Desired+6)
}

// assertFinishedWithin is assertFinished with the largest desired capacity
// the run may have reached.
func (g *awsGroup) assertFinishedWithin(t *testing.T, peakLimit int32) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	gr := g.stableAtOriginalSizes(t, ctx)
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion != "2" || in.ImageID != "ami-new" {
			t.Errorf("instance %s runs version %s (%s), want 2 (ami-new)", in.ID, in.LaunchTemplateVersion, in.ImageID)
		}
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 2 || lt.DefaultVersion != 2 {
		t.Errorf("launch template has %d versions, default %d; want 2 (one made by the run, made the default)", len(lt.Versions), lt.DefaultVersion)
	}
	// The group launched $Default before the run: it still does.
	if gr.LaunchTemplateVersion != "$Default" {
		t.Errorf("group launches %q, want $Default", gr.LaunchTemplateVersion)
	}
	nodes := groupNodes(t, ctx, groupKey, g.name)
	if len(nodes) != int(g.original.Desired) {
		t.Errorf("group has %d nodes, want %d", len(nodes), g.original.Desired)
	}
	for _, n := range nodes {
		if _, ok := n.Annotations[scaleDownDisabled]; ok {
			t.Errorf("node %q still has %s", n.Name, scaleDownDisabled)
		}
	}
	assertUntouched(t, ctx, groupKey, g.name)
	if peak := g.peak(); peak > peakLimit {
		t.Errorf("desired capacity reached %d, above %d", peak, peakLimit)
	}
	rec := g.record(t)
	if rec.FinishedAt == nil || rec.LastError != "" || rec.Cloud == nil || rec.Cloud.Original == nil {
		t.Errorf("record %+v: want finished, no error, original sizes kept", rec)
	}
}

// stableAtOriginalSizes waits until the group launches and terminates
// nothing more, checks it has its sizes of before the run, and returns it.
func (g *awsGroup) stableAtOriginalSizes(t *testing.T, ctx context.Context) awsfake.Group {
	t.Helper()
	if err := g.srv.WaitStable(ctx, g.name); err != nil {
		t.Fatal(err)
	}
	gr, _ := g.srv.Group(g.name)
	if gr.Desired != g.original.Desired || gr.Max != g.original.Max || gr.Min != g.original.Min {
		t.Errorf("sizes min/desired/max %d/%d/%d, want the original %d/%d/%d", gr.Min, gr.Desired, gr.Max, g.original.Min, g.original.Desired, g.original.Max)
	}
	return gr
}

func (g *awsGroup) record(t *testing.T) state.Record {
	t.Helper()
	return statusRecord(t, g.run, g.name)
}

func TestAWSUpgradeToNewAMI(t *testing.T) {
	t.Parallel()
	const name = "aws-happy"
	g := setupAWSGroup(t, name, 9,
		scenario.App{Name: "web", Replicas: 18, MinAvailable: pct("75%")},
		scenario.App{Name: "api", Replicas: 9, MaxUnavailable: num(2)},
	)
	ctx := testContext(t, 10*time.Minute)

	// The plan shows the AWS side and changes nothing.
	r := g.run(t, "plan", name, "--ami", "ami-new", "--max-unavailable", "2", "--seed", "3", "-o", "json")
	var p plan.Plan
	if err := json.Unmarshal([]byte(r.stdout), &p); r.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("plan: %v %s", err, r)
	}
	if p.Provider != "aws" || p.Cloud == nil {
		t.Fatalf("plan provider %q cloud %+v: want aws detected from the provider IDs", p.Provider, p.Cloud)
	}
	c := p.Cloud
	if c.Group != name || c.CurrentVersion != "1" || c.TargetVersion != plan.NewVersion || c.TargetImage != "ami-new" ||
		c.ScaleUp != 6 || c.Before.Desired != 9 || c.During.Desired != 15 || c.Before.Max != 10 || c.During.Max != 16 {
		t.Errorf("cloud plan %+v: want group %q, version 1 -> new (ami-new), +6 (2 x 3 zones): desired 9 -> 15, max 10 -> 16", c, name)
	}
	if p.Nodes.Outdated != 9 || len(p.Batches) != 5 {
		t.Errorf("plan: %d outdated in %d batches, want 9 in 5", p.Nodes.Outdated, len(p.Batches))
	}
	for _, b := range p.Batches {
		for _, n := range b.Nodes {
			if !strings.HasPrefix(n.MachineID, "i-") {
				t.Errorf("node %q: no instance ID in the plan", n.Name)
			}
		}
	}
	table := g.run(t, "plan", name, "--ami", "ami-new", "--max-unavailable", "2", "--seed", "3")
	for _, want := range []string{"Auto Scaling:", "version 1 -> new", "+6 nodes: desired 9 -> 15, max 10 -> 16", "INSTANCE"} {
		if !strings.Contains(table.stdout, want) {
			t.Errorf("plan table does not show %q:\n%s", want, table.stdout)
		}
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 1 {
		t.Fatalf("plan created a launch template version")
	}
	if gr, _ := g.srv.Group(name); gr.Desired != 9 {
		t.Fatalf("plan changed the desired capacity to %d", gr.Desired)
	}

	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// As the least-privileged user of deploy/rbac.yaml.
	run := runCmd(t, g.cmd(boundUser(t, upgrader), "run", name, "--ami", "ami-new", "--max-unavailable", "2", "--seed", "3", "--post-drain-wait", "1s", "--yes"))
	t.Logf("aws upgrade of 9 nodes, max-unavailable 2: run took %s", time.Since(start).Round(time.Millisecond))
	violations := watcher.Stop()
	if run.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", run)
	}
	if strings.Contains(run.stderr, "warning") {
		t.Errorf("the run warned (missing permission?): %s", run.stderr)
	}
	assertNoViolations(t, violations)
	for _, want := range []string{"scaling Auto Scaling group", "new nodes Ready", "scale-down: removing node", "is back to desired 9, max 10"} {
		if !strings.Contains(run.stdout, want) {
			t.Errorf("run output lacks %q:\n%s", want, run.stdout)
		}
	}
	g.assertFinished(t)
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
}

// killPoint is where a run is killed: the first output line containing
// the marker, or after a delay.
type killPoint struct {
	name   string
	marker string
	after  time.Duration
	// then, after the marker, holds the kill until the cloud says what
	// it reports: a window the run's output does not mark, such as the
	// one between a service's end and the run reading it.
	then func() bool
	// planFile runs a reviewed plan: the re-run of the same command must
	// accept that the nodes done meanwhile are gone.
	planFile bool
}

func TestAWSKilledRunIsFinishedByARerun(t *testing.T) {
	t.Parallel()
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	points := []killPoint{
		{name: "scale-up", marker: "for the new nodes of launch template"},
		{name: "taint", marker: "tainting"},
		{name: "mid-batch", marker: "cordoned"},
		{name: "scale-down", marker: "scale-down: removing node", planFile: true},
	}
	for i := range 2 {
		points = append(points, killPoint{name: fmt.Sprintf("random-%d", i), after: time.Second + time.Duration(rng.Int64N(int64(30*time.Second)))})
	}
	t.Logf("random kill points from seed %d: %s, %s", seed, points[4].after, points[5].after)
	for i, kp := range points {
		t.Run(kp.name, func(t *testing.T) {
			name := fmt.Sprintf("aws-kill-%d", i)
			g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
			args := []string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "2s", "--yes"}
			if kp.planFile {
				saved := g.run(t, "plan", name, "--ami", "ami-new", "--max-unavailable", "1", "-o", "json")
				file := filepath.Join(t.TempDir(), "plan.json")
				if saved.code != nodeupgrade.ExitOK || os.WriteFile(file, []byte(saved.stdout), 0o600) != nil {
					t.Fatalf("saving the plan: %s", saved)
				}
				args = []string{"run", "--plan-file", file, "--post-drain-wait", "2s", "--yes"}
			}
			killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, args...), kp)
			t.Logf("killed=%v at %q; output up to the kill:\n%s", killed, kp.name, out)
			if kp.marker != "" && !killed {
				t.Fatalf("the run ended before the kill point")
			}
			// A random kill can come after the run recorded its end, or
			// after it exited: then the first run did it all.
			finished := !killed
			if finished && !strings.Contains(out, "upgrade of 3 nodes finished") {
				t.Errorf("the run ended before the kill without finishing:\n%s", out)
			}
			if killed {
				// A kill before the lock was taken leaves no record at all.
				st := g.run(t, "status", name, "-o", "json")
				var rec state.Record
				switch {
				case st.code == nodeupgrade.ExitUsage && strings.Contains(st.stderr, "no run recorded"):
					t.Logf("killed before the run recorded anything")
				case st.code != nodeupgrade.ExitOK || json.Unmarshal([]byte(st.stdout), &rec) != nil:
					t.Fatalf("status: %s", st)
				case rec.FinishedAt != nil && (kp.marker != "" || rec.Phase != string(plan.PhaseDone)):
					t.Fatalf("record after the kill says finished: %+v", rec)
				case rec.FinishedAt != nil:
					t.Logf("killed after the run recorded its end")
					finished = true
				default:
					t.Logf("record after the kill: phase %s, cloud %+v", rec.Phase, rec.Cloud)
				}
			}
			// A plain re-run of the same command finishes it.
			r := g.run(t, args...)
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("re-run failed: %s", r)
			}
			g.assertFinished(t)
			// The final line counts the nodes of both runs.
			if !finished && !strings.Contains(r.stdout, "upgrade of 3 nodes finished") {
				t.Errorf("the re-run's final line does not count the 3 nodes of the whole run:\n%s", r.stdout)
			}
		})
	}
}

// runAndKill starts cmd and SIGKILLs it at the kill point; it returns
// whether it did and the output of the run.
func runAndKill(t *testing.T, cmd *exec.Cmd, kp killPoint) (bool, string) {
	t.Helper()
	run := startBackground(t, cmd)
	killed := atomic.Bool{}
	if kp.after > 0 {
		timer := time.AfterFunc(kp.after, func() {
			if cmd.Process.Signal(syscall.SIGKILL) == nil {
				killed.Store(true)
			}
		})
		defer timer.Stop()
	}
	if kp.marker != "" && run.waitFor(kp.marker) && run.until(kp.then) {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		killed.Store(true)
	}
	code, out := run.wait(t, 5*time.Minute)
	// A timer that fired after the process exited on its own killed nothing.
	if killed.Load() && code == nodeupgrade.ExitOK {
		killed.Store(false)
	}
	return killed.Load(), out
}

func TestAWSSecondRunIsRefusedWhileTheFirstHoldsTheLock(t *testing.T) {
	t.Parallel()
	const name = "aws-lock"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	args := []string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "20s", "--yes"}
	first := startBackground(t, g.cmd(sim.Kubeconfig, args...))
	if !first.waitFor("cordoned") {
		t.Fatal("the first run ended before the second was tried")
	}
	versions := func() int { lt, _ := g.srv.LaunchTemplate(g.template); return len(lt.Versions) }
	before, _ := g.srv.Group(name)
	second := g.run(t, args...)
	if second.code != nodeupgrade.ExitLocked || !strings.Contains(second.stderr, "is being upgraded by") || !oneLine(second.stderr) {
		t.Errorf("the second run must exit %d naming the holder: %s", nodeupgrade.ExitLocked, second)
	}
	if after, _ := g.srv.Group(name); after.Desired != before.Desired || after.Max != before.Max || versions() != 2 {
		t.Errorf("the refused run changed the group: desired %d -> %d, max %d -> %d, %d versions", before.Desired, after.Desired, before.Max, after.Max, versions())
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	first.wait(t, time.Minute)
	// The killed holder's lock does not block the next run on this machine.
	if r := g.run(t, "run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("the run after the killed one failed: %s", r)
	}
	g.assertFinished(t)
}

func TestAWSAutoscalerScalingUpStopsTheScaleDown(t *testing.T) {
	t.Parallel()
	const name = "aws-autoscaler"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	run := startBackground(t, g.cmd(sim.Kubeconfig, "run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "3s", "--yes"))
	if !run.waitFor("scale-down: removing node") {
		t.Fatalf("the run never reached the scale-down:\n%s", run.output())
	}
	// The cluster autoscaler wants one node more while the first node of
	// the scale-down is being drained.
	gr, _ := g.srv.Group(name)
	raisedTo := gr.Desired + 1
	if err := g.srv.SetDesired(name, raisedTo); err != nil {
		t.Fatal(err)
	}
	code, out := run.wait(t, 5*time.Minute)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "cluster autoscaler scaled it up") {
		t.Errorf("the run did not say the autoscaler stopped it:\n%s", out)
	}
	ctx := testContext(t, time.Minute)
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	if gr, _ := g.srv.Group(name); gr.Desired != raisedTo {
		t.Errorf("desired capacity %d after the run, want %d as the autoscaler left it", gr.Desired, raisedTo)
	}
	rec := g.record(t)
	if rec.FinishedAt == nil || !strings.Contains(rec.Note, "autoscaler") {
		t.Errorf("record %+v: want finished with a note about the autoscaler", rec)
	}
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if n.Spec.Unschedulable {
			t.Errorf("node %q left cordoned", n.Name)
		}
		if _, ok := n.Annotations[scaleDownDisabled]; ok {
			t.Errorf("node %q still has %s", n.Name, scaleDownDisabled)
		}
	}
}

func TestAWSNodesNeverReadyEndInNodeCreationFailure(t *testing.T) {
	t.Parallel()
	const name = "aws-notready"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	g.notReady.Store(true)
	r := g.run(t, "run", name, "--ami", "ami-new", "--max-unavailable", "1", "--node-ready-timeout", "20s", "--post-drain-wait", "0s", "--yes")
	if r.code != nodeupgrade.ExitNodeCreation {
		t.Fatalf("want exit %d (NodeCreationFailure), got %s", nodeupgrade.ExitNodeCreation, r)
	}
	if !oneLine(r.stderr) || !strings.Contains(r.stderr, "NodeCreationFailure") || !strings.Contains(r.stderr, "not Ready") {
		t.Errorf("want a one-line NodeCreationFailure naming the instances, got %q", r.stderr)
	}
	gr, _ := g.srv.Group(name)
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion == "2" && !strings.Contains(r.stderr, in.ID) {
			t.Errorf("the failure does not name new instance %s: %q", in.ID, r.stderr)
		}
	}
	// Nothing was drained: the old nodes are not tainted or cordoned and
	// the apps still run where they were.
	ctx := testContext(t, time.Minute)
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if n.Labels[awsprovider.TemplateVersionLabel] != "1" {
			continue
		}
		if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == groupKey }) {
			t.Errorf("old node %q was tainted or cordoned", n.Name)
		}
	}
	rec := g.record(t)
	if rec.Cloud == nil || rec.Cloud.Original == nil || rec.Cloud.Original.Desired != 3 || !strings.Contains(rec.LastError, "NodeCreationFailure") {
		t.Errorf("record %+v: want the original sizes (desired 3) and the failure recorded", rec)
	}
}

func TestAWSBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	const name = "aws-badinput"
	g := setupAWSGroup(t, name, 3)
	run := func(extra ...string) []string {
		return append([]string{"run", name, "--yes", "--post-drain-wait", "0s"}, extra...)
	}
	noCredentials := cleanAWSEnv()
	noCredentials = append(noCredentials, "AWS_ENDPOINT_URL="+g.srv.URL, "AWS_REGION=us-east-1")
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{name: "malformed ami", args: run("--ami", "ubuntu-24.04"), want: `invalid --ami "ubuntu-24.04"`},
		{name: "unknown ami", args: run("--ami", "ami-0doesnotexist"), want: `image "ami-0doesnotexist" not found`},
		{name: "missing launch template version", args: run("--launch-template-version", "7"), want: `has no version "7"`},
		{name: "missing asg", args: run("--asg", "no-such-asg", "--ami", "ami-new"), want: `auto scaling group "no-such-asg" not found`},
		{name: "no credentials", args: run("--ami", "ami-new"), env: noCredentials, want: "no AWS credentials found"},
		{name: "ami with provider none", args: run("--ami", "ami-new", "--provider", "none"), want: "--ami needs --provider aws"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := g.cmd(sim.Kubeconfig, tc.args...)
			if tc.env != nil {
				cmd.Env = tc.env
			}
			r := runCmd(t, cmd)
			if r.code != nodeupgrade.ExitUsage {
				t.Fatalf("want exit %d, got %s", nodeupgrade.ExitUsage, r)
			}
			if !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want a one-line error mentioning %s, got %q", tc.want, r.stderr)
			}
			if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 1 {
				t.Errorf("a launch template version was created")
			}
			if gr, _ := g.srv.Group(name); gr.Desired != 3 || gr.Max != 4 || gr.LaunchTemplateVersion != "$Default" {
				t.Errorf("the group changed: desired %d max %d version %q", gr.Desired, gr.Max, gr.LaunchTemplateVersion)
			}
			assertUntouched(t, testContext(t, time.Minute), groupKey, name)
		})
	}
}

// zoneRuns returns the zones in the order the old instances went, with
// repeats collapsed: one zone at a time gives each zone once.
func (g *awsGroup) zoneRuns() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var runs []string
	for _, z := range g.oldGone {
		if len(runs) == 0 || runs[len(runs)-1] != z {
			runs = append(runs, z)
		}
	}
	return runs
}

func TestAWSSurge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                     string
		maxSurge, maxUnavailable string
		peakExtra                int32
	}{
		// The balanced profile: one extra node at a time.
		{name: "surge-1-0", maxSurge: "1", maxUnavailable: "0", peakExtra: 1},
		// No extra resources: two old nodes of a zone at a time, replaced
		// by the group.
		{name: "surge-0-2", maxSurge: "0", maxUnavailable: "2", peakExtra: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "aws-" + tc.name
			g := setupAWSGroup(t, name, 6,
				scenario.App{Name: "web", Replicas: 6, MinAvailable: num(4)},
				scenario.App{Name: "api", Replicas: 3, MaxUnavailable: num(1)},
			)
			ctx := testContext(t, 10*time.Minute)
			args := []string{"--strategy", "surge", "--max-surge", tc.maxSurge, "--max-unavailable", tc.maxUnavailable, "--ami", "ami-new", "--seed", "5"}
			pl := g.run(t, append([]string{"plan", name}, args...)...)
			if pl.code != nodeupgrade.ExitOK || !strings.Contains(pl.stdout, "Surge     zone us-east-1a:") || !strings.Contains(pl.stdout, "Phases (estimated") {
				t.Fatalf("plan does not show the surge phases per zone: %s", pl)
			}
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := g.run(t, append(append([]string{"run", name}, args...), "--post-drain-wait", "0s", "--yes")...)
			t.Logf("%s on 6 nodes in 3 zones: run took %s", tc.name, time.Since(start).Round(time.Millisecond))
			violations := watcher.Stop()
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run failed: %s", r)
			}
			assertNoViolations(t, violations)
			if runs := g.zoneRuns(); !slices.Equal(runs, awsZones) {
				t.Errorf("old instances went zone by zone as %v, want %v one zone at a time", runs, awsZones)
			}
			g.assertFinishedWithin(t, g.original.Desired+tc.peakExtra)
			if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
				t.Errorf("workloads not back to full Ready: %v", err)
			}
		})
	}
}

func TestAWSShortLivedOnlyPointsTheGroupAtTheTarget(t *testing.T) {
	t.Parallel()
	const name = "aws-short"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	r := g.run(t, "run", name, "--strategy", "short-lived", "--ami", "ami-new", "--max-age", "24h", "--yes")
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "3 outdated nodes are left running") {
		t.Fatalf("run: %s", r)
	}
	if gr, _ := g.srv.Group(name); gr.LaunchTemplateVersion != "$Default" || gr.Desired != 3 {
		t.Errorf("group launches version %q with desired %d, want $Default and 3", gr.LaunchTemplateVersion, gr.Desired)
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); lt.DefaultVersion != 2 {
		t.Errorf("the launch template's default is version %d, want 2", lt.DefaultVersion)
	}
	assertUntouched(t, ctx, groupKey, name)
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "3 of 3 old nodes still run") || !strings.Contains(st.stdout, "0 older than --max-age 24h") {
		t.Errorf("status: %s", st)
	}
	// An old instance goes away on its own; its replacement is new.
	gr, _ := g.srv.Group(name)
	if err := g.srv.TerminateInstance(gr.Instances[0].ID, false); err != nil {
		t.Fatal(err)
	}
	if err := g.srv.WaitFor(ctx, name, func(gr awsfake.Group) bool {
		n := 0
		for _, in := range gr.Instances {
			if in.LaunchTemplateVersion == "2" && in.Lifecycle == awsfake.LifecycleInService {
				n++
			}
		}
		return n == 1 && len(gr.Instances) == 3
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "2 of 3 old nodes still run") {
		t.Errorf("status after one old node went: %s", st)
	}
}

func TestAWSRollbackOfAPartialEKSRun(t *testing.T) {
	t.Parallel()
	const name = "aws-eks-rollback"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	args := []string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--seed", "1", "--yes"}
	// Killed in the second batch: one node upgraded, two not.
	killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, args...), killPoint{marker: "batch 2/3: draining"})
	if !killed {
		t.Fatalf("the run ended before the second batch:\n%s", out)
	}
	// The rollback starts at once: the replacement of batch 1's node may
	// still be launching, with no node yet; the rollback waits for it to
	// join and plans it too, or it would stay on version 2.
	gr, _ := g.srv.Group(name)
	var untouched []string
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion == "1" && in.Lifecycle == awsfake.LifecycleInService {
			untouched = append(untouched, in.ID)
		}
	}
	// The nodes on version 2: the scale-up's, and the killed run's
	// replacements (one may still be launching).
	onTarget := 0
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion == "2" && (in.Lifecycle == awsfake.LifecycleInService || in.Lifecycle == awsfake.LifecyclePending) {
			onTarget++
		}
	}
	surplus := int(gr.Desired - g.original.Desired)
	r := g.run(t, "rollback", name, "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("rollback: %s", r)
	}
	// Issue 42: the rollback replaced the scale-up's nodes too, then
	// drained their replacements in the scale-down ("8 drains where 2
	// do"). It replaces only what the sizes before the run keep; the
	// scale-down removes the surplus, each node drained once.
	batchDrains := len(regexp.MustCompile(`(?m)batch \d+/\d+: draining `).FindAllString(r.stdout, -1))
	scaleDowns := strings.Count(r.stdout, "scale-down: removing node")
	if surplus < 1 || batchDrains != onTarget-surplus || scaleDowns != surplus {
		t.Errorf("the rollback drained %d nodes in batches and %d in the scale-down; want %d and %d (%d nodes on version 2, %d above the sizes before the run):\n%s",
			batchDrains, scaleDowns, onTarget-surplus, surplus, onTarget, surplus, r.stdout)
	}
	// The final line says what the rollback did, not "upgrade of 0 nodes".
	final := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d rolled back ([1-9]\d*) nodes?$`).FindStringSubmatch(r.stdout)
	if final == nil {
		t.Errorf("the rollback's final line is not \"rolled back N nodes\":\n%s", r.stdout)
	}
	// status counts the rollback's nodes, not the upgrade's too (issue 33:
	// DONE 10 for a 9-node group).
	if st := g.run(t, "status", name); final != nil && !regexp.MustCompile(`(?m)^`+name+`\s+rolled back\s+\S+\s+\S+\s+`+final[1]+`\s+0\s`).MatchString(st.stdout) {
		t.Errorf("status must show %s done, 0 left:\n%s", final[1], st)
	}
	ctx := testContext(t, 2*time.Minute)
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	gr, _ = g.srv.Group(name)
	lt, _ := g.srv.LaunchTemplate(g.template)
	if gr.LaunchTemplateVersion != "$Default" || lt.DefaultVersion != 1 || gr.Desired != g.original.Desired || gr.Max != g.original.Max {
		t.Errorf("group after the rollback: version %q (default %d), desired %d, max %d; want $Default with version 1 the default again, and the original %d, %d", gr.LaunchTemplateVersion, lt.DefaultVersion, gr.Desired, gr.Max, g.original.Desired, g.original.Max)
	}
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion != "1" {
			t.Errorf("instance %s runs version %s after the rollback", in.ID, in.LaunchTemplateVersion)
		}
	}
	// The nodes the killed run had not upgraded yet were left alone,
	// except those the rollback's own scale-down removed: at least one
	// stays.
	kept := 0
	for _, in := range gr.Instances {
		if slices.Contains(untouched, in.ID) {
			kept++
		}
	}
	if kept == 0 {
		t.Errorf("none of the instances %v that were never upgraded is left", untouched)
	}
	assertUntouched(t, ctx, groupKey, name)
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("workloads: %v", err)
	}
}

// TestAWSResumedEKSRollbackKeepsItsSplit: a rollback killed in its batch
// and resumed defers the same nodes to its scale-down (those its batches
// never tainted), which removes them, each drained once.
func TestAWSResumedEKSRollbackKeepsItsSplit(t *testing.T) {
	t.Parallel()
	const name = "aws-eks-rollback-resumed"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	args := []string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--seed", "1", "--yes"}
	if killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, args...), killPoint{marker: "batch 2/3: draining"}); !killed {
		t.Fatalf("the run ended before the second batch:\n%s", out)
	}
	// Killed once its batch drained a node: that node, now without pods,
	// is held off, and the resumed rollback still replaces it.
	killed, first := runAndKill(t, g.cmd(sim.Kubeconfig, "rollback", name, "--yes"), killPoint{marker: ": drained"})
	if !killed {
		t.Fatalf("the rollback ended before its first drain:\n%s", first)
	}
	deferred := scaleDownRows(first)
	if len(deferred) == 0 {
		t.Fatalf("the rollback's plan defers no node to the scale-down:\n%s", first)
	}
	r := g.run(t, "resume", name, "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume: %s", r)
	}
	if again := scaleDownRows(r.stdout); !slices.Equal(again, deferred) {
		t.Errorf("the resumed rollback defers %v, the first attempt %v:\n%s", again, deferred, r.stdout)
	}
	removed := regexp.MustCompile(`scale-down: removing node "([^"]+)"`).FindAllStringSubmatch(r.stdout, -1)
	var names []string
	for _, m := range removed {
		names = append(names, m[1])
	}
	slices.Sort(names)
	if !slices.Equal(names, deferred) {
		t.Errorf("the scale-down removed %v, want the deferred %v:\n%s", names, deferred, r.stdout)
	}
	ctx := testContext(t, 2*time.Minute)
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	gr, _ := g.srv.Group(name)
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion != "1" {
			t.Errorf("instance %s runs version %s after the rollback", in.ID, in.LaunchTemplateVersion)
		}
	}
	if gr.Desired != g.original.Desired {
		t.Errorf("desired %d after the rollback, want %d", gr.Desired, g.original.Desired)
	}
	assertUntouched(t, ctx, groupKey, name)
}

// scaleDownRows are the nodes a printed plan leaves to the scale-down
// (batch column "scale-down"), sorted.
func scaleDownRows(out string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^scale-down\s+(\S+)`).FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

// A group that launches $Default keeps doing so: the run makes its new
// version the template's default (the plan says so), and abort of a run
// killed after that makes the old version the default again.
func TestAWSDefaultFollowedAndRestoredByAbort(t *testing.T) {
	t.Parallel()
	const name = "aws-default"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	args := []string{name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s"}
	pl := g.run(t, append([]string{"plan"}, args...)...)
	if pl.code != nodeupgrade.ExitOK || !strings.Contains(pl.stdout, "Launches after:  launch template "+g.template+" $Default -> the new version (made the template's default") {
		t.Fatalf("the plan does not say the group keeps launching $Default: %s", pl)
	}
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	// Killed in the scale-up, after the Setup.
	killed, out := runAndKill(t, g.cmd(sim.Kubeconfig, append(append([]string{"run"}, args...), "--yes")...), killPoint{marker: "waiting up to"})
	if !killed {
		t.Fatalf("the run ended before the scale-up:\n%s", out)
	}
	gr, _ := g.srv.Group(name)
	lt, _ := g.srv.LaunchTemplate(g.template)
	if gr.LaunchTemplateVersion != "$Default" || lt.DefaultVersion != 2 || len(lt.Versions) != 2 {
		t.Fatalf("killed run: group launches %q, default %d of %d versions; want $Default, the new version 2 the default", gr.LaunchTemplateVersion, lt.DefaultVersion, len(lt.Versions))
	}
	if rec := g.record(t); rec.Cloud == nil || rec.Cloud.DefaultWas != "1" {
		t.Fatalf("the record does not keep the old default: %+v", rec.Cloud)
	}
	r := g.run(t, "abort", name)
	if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "version 1 the default again") {
		t.Fatalf("abort: %s", r)
	}
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	gr, _ = g.srv.Group(name)
	lt, _ = g.srv.LaunchTemplate(g.template)
	if gr.LaunchTemplateVersion != "$Default" || lt.DefaultVersion != 1 {
		t.Errorf("after abort: group launches %q, default version %d; want $Default with version 1 the default again", gr.LaunchTemplateVersion, lt.DefaultVersion)
	}
	if gr.Desired != g.original.Desired || gr.Max != g.original.Max {
		t.Errorf("after abort: desired %d max %d, want %d %d", gr.Desired, gr.Max, g.original.Desired, g.original.Max)
	}
	assertNoViolations(t, watcher.Stop())
}
