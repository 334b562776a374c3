package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/motobridge"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The conformance suite: the AWS scenarios that moto supports run, with the
// same setup and the same checks made through the AWS SDK, against the
// project's endpoint (awsfake) and against moto, a third-party
// implementation of the Auto Scaling and EC2 APIs (corrected where it
// contradicts AWS's documentation, see sim/motobridge/moto_server.py). A
// scenario that passes on one and fails on the other shows an endpoint that
// is wrong about AWS, or a plugin that leans on one endpoint's quirks.

const (
	confRegion            = "us-east-1"
	confScaleDownDisabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
)

var confZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// confEndpoint is one implementation of the AWS APIs.
type confEndpoint struct {
	name string
	// start creates a node group of size Ready nodes over confZones with
	// launch template version 1 on the old image, and a new image.
	start func(t *testing.T, ctx context.Context, name string, size int32) *confGroup
}

var confEndpoints = []confEndpoint{
	{name: "awsfake", start: startAWSFakeGroup},
	{name: "moto", start: startMotoGroup},
}

// confGroup is a node group on one endpoint, seen through the AWS SDK.
type confGroup struct {
	name, url                      string
	asg                            *autoscaling.Client
	ec2                            *ec2.Client
	templateID, oldImage, newImage string
	original                       plan.Sizes

	mu   sync.Mutex
	peak int32 // the largest desired capacity seen
}

func confConfig(url string) aws.Config {
	return aws.Config{Region: confRegion, Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), BaseEndpoint: aws.String(url)}
}

func startAWSFakeGroup(t *testing.T, ctx context.Context, name string, size int32) *confGroup {
	t.Helper()
	srv, err := awsfake.StartWithKube(context.Background(), client, awsfake.Options{Region: confRegion, LaunchDelay: 500 * time.Millisecond}, awsfake.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.RegisterImage("ami-new", "node-v2")
	template, err := srv.NodeGroup(ctx, client, awsfake.NodeGroupSpec{Name: name, Zones: confZones, Size: size, Min: 1, Max: size + 1, ImageID: "ami-old"})
	if err != nil {
		t.Fatal(err)
	}
	return newConfGroup(t, name, srv.URL, template, "ami-old", "ami-new")
}

func startMotoGroup(t *testing.T, ctx context.Context, name string, size int32) *confGroup {
	t.Helper()
	srv, err := motobridge.Start(ctx, motobridge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		// A request moto failed with HTTP 500 leaves its traceback here.
		if strings.Contains(srv.Stderr(), "Traceback") {
			t.Errorf("moto failed requests:\n%s", srv.Stderr())
		}
	})
	cfg := confConfig(srv.URL)
	bridge := motobridge.Mirror(cfg, client, motobridge.MirrorOptions{})
	t.Cleanup(func() {
		// Its nodes go with it: a later moto may reuse their names.
		if err := bridge.Close(context.Background()); err != nil {
			t.Errorf("bridge: %v", err)
		}
	})
	g, err := motobridge.CreateNodeGroup(ctx, cfg, motobridge.NodeGroupSpec{Name: name, Zones: confZones, Min: 1, Desired: size, Max: size + 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := motobridge.WaitNodesReady(ctx, cfg, client, name); err != nil {
		t.Fatalf("%v (bridge: %v)", err, bridge.Err())
	}
	return newConfGroup(t, name, srv.URL, g.LaunchTemplateID, g.OldImage, g.NewImage)
}

// newConfGroup reads the group's sizes and watches its desired capacity
// for the rest of the test.
func newConfGroup(t *testing.T, name, url, template, oldImage, newImage string) *confGroup {
	t.Helper()
	cfg := confConfig(url)
	g := &confGroup{name: name, url: url, asg: autoscaling.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), templateID: template, oldImage: oldImage, newImage: newImage}
	ag := g.describe(t, context.Background())
	g.original = plan.Sizes{Min: aws.ToInt32(ag.MinSize), Desired: aws.ToInt32(ag.DesiredCapacity), Max: aws.ToInt32(ag.MaxSize)}
	g.peak = g.original.Desired
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { stop(); <-done })
	go func() {
		defer close(done)
		for {
			out, err := g.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
			if err == nil && len(out.AutoScalingGroups) == 1 {
				g.mu.Lock()
				g.peak = max(g.peak, aws.ToInt32(out.AutoScalingGroups[0].DesiredCapacity))
				g.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return g
}

func (g *confGroup) peakDesired() int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

func (g *confGroup) describe(t *testing.T, ctx context.Context) astypes.AutoScalingGroup {
	t.Helper()
	out, err := g.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{g.name}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("describe Auto Scaling group %q: %v", g.name, err)
	}
	return out.AutoScalingGroups[0]
}

// cmd is a plugin run against this endpoint, with no AWS configuration of
// the machine leaking in.
func (g *confGroup) cmd(args ...string) *exec.Cmd { return g.cmdVia(g.url, args...) }

// cmdVia is a plugin run against this endpoint through endpoint, a proxy
// of it.
func (g *confGroup) cmdVia(endpoint string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") })
	cmd.Env = append(env, "NO_COLOR=1", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/nonexistent/aws/config", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent/aws/credentials",
		"AWS_ENDPOINT_URL="+endpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION="+confRegion)
	return cmd
}

func (g *confGroup) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, g.cmd(args...))
}

// plan runs the plan as JSON and checks its AWS side, which changes
// nothing.
func (g *confGroup) plan(t *testing.T, args ...string) *plan.Plan {
	t.Helper()
	r := g.run(t, append([]string{"plan", g.name, "-o", "json"}, args...)...)
	var p plan.Plan
	if err := json.Unmarshal([]byte(r.stdout), &p); r.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("plan: %v %s", err, r)
	}
	c := p.Cloud
	if p.Provider != "aws" || c == nil || c.Group != g.name || c.CurrentVersion != "1" || c.TargetVersion != plan.NewVersion ||
		c.TargetImage != g.newImage || c.Before != g.original || c.ScaleUp < 1 || c.During.Desired != g.original.Desired+c.ScaleUp {
		t.Fatalf("plan provider %q, cloud %+v: want group %q, version 1 -> new (%s), sizes %v before and a scale-up", p.Provider, c, g.name, g.newImage, g.original)
	}
	if p.Nodes.Outdated != int(g.original.Desired) {
		t.Errorf("plan: %d outdated nodes, want %d", p.Nodes.Outdated, g.original.Desired)
	}
	if ag := g.describe(t, context.Background()); aws.ToInt32(ag.DesiredCapacity) != g.original.Desired || aws.ToString(ag.LaunchTemplate.Version) != "$Default" {
		t.Fatalf("the plan changed the group: desired %d, version %q", aws.ToInt32(ag.DesiredCapacity), aws.ToString(ag.LaunchTemplate.Version))
	}
	return &p
}

func (g *confGroup) record(t *testing.T) state.Record {
	t.Helper()
	return statusRecord(t, g.run, g.name)
}

// waitSettled waits until the group has its desired number of instances,
// all InService.
func (g *confGroup) waitSettled(t *testing.T, ctx context.Context) astypes.AutoScalingGroup {
	t.Helper()
	for {
		ag := g.describe(t, ctx)
		settled := len(ag.Instances) == int(aws.ToInt32(ag.DesiredCapacity))
		for _, in := range ag.Instances {
			settled = settled && in.LifecycleState == astypes.LifecycleStateInService
		}
		if settled {
			return ag
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %q not settled: desired %d, instances %+v", g.name, aws.ToInt32(ag.DesiredCapacity), ag.Instances)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// assertUpgraded checks the end of an upgrade to a new image, as Auto
// Scaling and EC2 report it: every instance launched from launch template
// version 2 (the one new version) with the new image, spread over the
// zones, the original sizes, a desired capacity that never went above
// peakLimit, and nodes left neither tainted, cordoned nor annotated.
func (g *confGroup) assertUpgraded(t *testing.T, peakLimit int32) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	ag := g.waitSettled(t, ctx)
	if got := (plan.Sizes{Min: aws.ToInt32(ag.MinSize), Desired: aws.ToInt32(ag.DesiredCapacity), Max: aws.ToInt32(ag.MaxSize)}); got != g.original {
		t.Errorf("sizes %v, want the original %v", got, g.original)
	}
	// The group launched $Default before the run: it still does, and the
	// new version is the default.
	if v := aws.ToString(ag.LaunchTemplate.Version); v != "$Default" {
		t.Errorf("group launches version %q, want $Default", v)
	}
	if d := g.defaultVersion(t, ctx); d != 2 {
		t.Errorf("the launch template's default is version %d, want 2", d)
	}
	if peak := g.peakDesired(); peak > peakLimit {
		t.Errorf("desired capacity reached %d, above %d (one scale-up)", peak, peakLimit)
	}
	ids := make([]string, 0, len(ag.Instances))
	perZone := map[string]int{}
	for _, in := range ag.Instances {
		ids = append(ids, aws.ToString(in.InstanceId))
		perZone[aws.ToString(in.AvailabilityZone)]++
		// Auto Scaling names the version as the group did at the launch:
		// $Default, which was version 2 then (the EC2 tag below says so).
		if v := launchedVersion(in); v != "2" && v != "$Default" {
			t.Errorf("Auto Scaling reports instance %s launched from launch template version %q, want 2 or $Default", aws.ToString(in.InstanceId), v)
		}
	}
	counts := make([]int, 0, len(confZones))
	for _, z := range confZones {
		counts = append(counts, perZone[z])
	}
	if slices.Max(counts)-slices.Min(counts) > 1 {
		t.Errorf("instances per zone %v: not balanced", perZone)
	}
	out, err := g.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			version := ""
			for _, tag := range in.Tags {
				if aws.ToString(tag.Key) == "aws:ec2launchtemplate:version" {
					version = aws.ToString(tag.Value)
				}
			}
			if version != "2" || aws.ToString(in.ImageId) != g.newImage {
				t.Errorf("instance %s runs version %q with %s, want 2 with %s", aws.ToString(in.InstanceId), version, aws.ToString(in.ImageId), g.newImage)
			}
		}
	}
	versions, err := g.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(g.templateID)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(versions.LaunchTemplateVersions); n != 2 {
		t.Errorf("launch template has %d versions, want 2 (one made by the run)", n)
	} else {
		v1, v2 := versions.LaunchTemplateVersions[0], versions.LaunchTemplateVersions[1]
		if aws.ToInt64(v1.VersionNumber) > aws.ToInt64(v2.VersionNumber) {
			v1, v2 = v2, v1
		}
		// The new version is a copy of version 1 with only the image changed.
		if d1, d2 := v1.LaunchTemplateData, v2.LaunchTemplateData; aws.ToString(d2.ImageId) != g.newImage || d2.InstanceType != d1.InstanceType || d2.InstanceType == "" {
			t.Errorf("version 2 has image %s and instance type %q, want %s and version 1's %q", aws.ToString(d2.ImageId), d2.InstanceType, g.newImage, d1.InstanceType)
		}
	}
	nodes := groupNodes(t, ctx, awsfake.NodeGroupLabel, g.name)
	if len(nodes) != len(ids) {
		t.Errorf("group has %d nodes for %d instances", len(nodes), len(ids))
	}
	for _, n := range nodes {
		if _, ok := n.Annotations[confScaleDownDisabled]; ok {
			t.Errorf("node %q still has %s", n.Name, confScaleDownDisabled)
		}
	}
	assertUntouched(t, ctx, awsfake.NodeGroupLabel, g.name)
	if rec := g.record(t); rec.FinishedAt == nil || rec.LastError != "" {
		t.Errorf("record %+v: want finished without error", rec)
	}
}

// defaultVersion is the launch template's default version number.
func (g *confGroup) defaultVersion(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	out, err := g.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(g.templateID), Versions: []string{"$Default"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LaunchTemplateVersions) != 1 {
		t.Fatalf("launch template %s: %d default versions", g.templateID, len(out.LaunchTemplateVersions))
	}
	return aws.ToInt64(out.LaunchTemplateVersions[0].VersionNumber)
}

// launchedVersion is the launch template version Auto Scaling reports an
// instance launched from; "" without a launch template.
func launchedVersion(in astypes.Instance) string {
	if in.LaunchTemplate == nil {
		return ""
	}
	return aws.ToString(in.LaunchTemplate.Version)
}

// createConfApps creates the apps in namespace name, pinned to the group's
// nodes, and waits until they are Ready.
func createConfApps(t *testing.T, ctx context.Context, name string, apps ...scenario.App) {
	t.Helper()
	for _, a := range apps {
		a.Namespace = name
		a.NodeSelector = map[string]string{awsfake.NodeGroupLabel: name}
		if err := scenario.CreateApp(ctx, client, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
}

func confInt(i int) *intstr.IntOrString { v := intstr.FromInt(i); return &v }

// cloudSummary is what both endpoints must agree on in a plan.
func cloudSummary(p *plan.Plan) string {
	return fmt.Sprintf("%d outdated nodes in %d batches; scale-up %d: %v -> %v", p.Nodes.Outdated, len(p.Batches), p.Cloud.ScaleUp, p.Cloud.Before, p.Cloud.During)
}

// TestMotoConformance runs the conformance scenarios one after another,
// each against both endpoints at once; the whole runs beside the other e2e
// tests. Two moto servers at a time could hand out the same private IPs,
// which name the nodes.
func TestMotoConformance(t *testing.T) {
	t.Parallel()
	t.Run("UpgradeToNewAMI", testMotoConformanceUpgradeToNewAMI)
	t.Run("KilledMidBatchIsFinishedByARerun", testMotoConformanceKilledMidBatchIsFinishedByARerun)
	t.Run("KilledBetweenMakingAndPointingTheVersion", testMotoConformanceKilledBetweenMakingAndPointingTheVersion)
}

func testMotoConformanceUpgradeToNewAMI(t *testing.T) {
	plans := map[string]string{}
	for _, ep := range confEndpoints {
		t.Run(ep.name, func(t *testing.T) {
			name := "conf-upgrade-" + ep.name
			ctx := testContext(t, 10*time.Minute)
			g := ep.start(t, ctx, name, 6)
			createConfApps(t, ctx, name,
				scenario.App{Name: "web", Replicas: 6, MinAvailable: confInt(4)},
				scenario.App{Name: "api", Replicas: 3, MaxUnavailable: confInt(1)},
			)
			args := []string{"--ami", g.newImage, "--max-unavailable", "2", "--seed", "3"}
			p := g.plan(t, args...)
			plans[ep.name] = cloudSummary(p)
			watcher, err := scenario.WatchPDBs(ctx, client, name)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := g.run(t, append(append([]string{"run", g.name}, args...), "--post-drain-wait", "1s", "--yes")...)
			t.Logf("%s: upgrade of 6 nodes over 3 zones, max-unavailable 2: run took %s", ep.name, time.Since(start).Round(time.Millisecond))
			violations := watcher.Stop()
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run failed: %s", r)
			}
			for _, v := range violations {
				t.Errorf("PDB %s had %d Ready pods, needs %d, at %s", v.PDB, v.Ready, v.Required, v.At.Format(time.RFC3339Nano))
			}
			g.assertUpgraded(t, g.original.Desired+p.Cloud.ScaleUp)
			if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
				t.Errorf("workloads not back to full Ready: %v", err)
			}
		})
	}
	if plans["awsfake"] != plans["moto"] {
		t.Errorf("the endpoints disagree on the plan:\nawsfake: %s\nmoto:    %s", plans["awsfake"], plans["moto"])
	}
}

func testMotoConformanceKilledMidBatchIsFinishedByARerun(t *testing.T) {
	for _, ep := range confEndpoints {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel() // each endpoint its own group and namespace
			name := "conf-kill-" + ep.name
			ctx := testContext(t, 10*time.Minute)
			g := ep.start(t, ctx, name, 3)
			createConfApps(t, ctx, name, scenario.App{Name: "web", Replicas: 3, MinAvailable: confInt(2)})
			args := []string{"--ami", g.newImage, "--max-unavailable", "1"}
			p := g.plan(t, args...)
			args = append(append([]string{"run", g.name}, args...), "--post-drain-wait", "1s", "--yes")
			start := time.Now()
			first := startBackground(t, g.cmd(args...))
			if !first.waitFor("cordoned") {
				code, out := first.wait(t, time.Minute)
				t.Fatalf("the run ended (exit %d) before a node was cordoned:\n%s", code, out)
			}
			if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if code, out := first.wait(t, time.Minute); code == nodeupgrade.ExitOK {
				t.Fatalf("the run finished before the kill:\n%s", out)
			}
			if rec := g.record(t); rec.FinishedAt != nil || rec.Cloud == nil || rec.Cloud.Original == nil {
				t.Fatalf("record after the kill %+v: want unfinished, with the original sizes", rec)
			}
			// A plain re-run of the same command finishes it.
			r := g.run(t, args...)
			t.Logf("%s: killed mid-batch and re-run on 3 nodes: %s in all", ep.name, time.Since(start).Round(time.Millisecond))
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("re-run failed: %s", r)
			}
			g.assertUpgraded(t, g.original.Desired+p.Cloud.ScaleUp)
			if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
				t.Errorf("workloads not back to full Ready: %v", err)
			}
		})
	}
}

// gate forwards requests to an endpoint, except the first that points an
// Auto Scaling group at a launch template version (or, for a group that
// launches $Default, makes one the template's default): that one is held
// until the test releases it, and then dropped, as a run killed while it
// waits for the answer never sends it again.
type gate struct {
	*httptest.Server
	held    chan struct{} // closed once the request is held
	release func()
}

func holdPointing(t *testing.T, endpoint string) *gate {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	released := make(chan struct{})
	g := &gate{held: make(chan struct{}), release: sync.OnceFunc(func() { close(released) })}
	var holding atomic.Bool
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		form, _ := url.ParseQuery(string(body))
		pointing := form.Get("Action") == "UpdateAutoScalingGroup" && form.Has("LaunchTemplate.Version") ||
			form.Get("Action") == "ModifyLaunchTemplate" && form.Has("SetDefaultVersion")
		if pointing && holding.CompareAndSwap(false, true) {
			close(g.held)
			<-released
			http.Error(w, "dropped by the test", http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		g.release()
		g.Close()
	})
	return g
}

// A run killed after CreateLaunchTemplateVersion answered and before the
// group was pointed at the new version: the re-run finds the version and
// makes no other, so the template ends with exactly one new version.
func testMotoConformanceKilledBetweenMakingAndPointingTheVersion(t *testing.T) {
	for _, ep := range confEndpoints {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel() // each endpoint its own group and namespace
			name := "conf-setup-" + ep.name
			ctx := testContext(t, 10*time.Minute)
			g := ep.start(t, ctx, name, 3)
			createConfApps(t, ctx, name, scenario.App{Name: "web", Replicas: 3, MinAvailable: confInt(2)})
			args := []string{"--ami", g.newImage, "--max-unavailable", "1"}
			p := g.plan(t, args...)
			args = append(append([]string{"run", g.name}, args...), "--post-drain-wait", "1s", "--yes")
			gate := holdPointing(t, g.url)
			first := startBackground(t, g.cmdVia(gate.URL, args...))
			select {
			case <-gate.held:
			case <-ctx.Done():
				t.Fatalf("the run never pointed the group at a version:\n%s", first.output())
			}
			if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if code, out := first.wait(t, time.Minute); code == nodeupgrade.ExitOK {
				t.Fatalf("the run finished before the kill:\n%s", out)
			}
			gate.release()
			versions, err := g.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(g.templateID)})
			if err != nil {
				t.Fatal(err)
			}
			if n, v, d := len(versions.LaunchTemplateVersions), aws.ToString(g.describe(t, ctx).LaunchTemplate.Version), g.defaultVersion(t, ctx); n != 2 || v != "$Default" || d != 1 {
				t.Fatalf("after the kill: %d versions, group launches %q, default version %d; want the new version made and the group not pointed at it yet", n, v, d)
			}
			r := g.run(t, args...)
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("re-run failed: %s", r)
			}
			if !strings.Contains(r.stdout, "launches launch template "+g.templateID+" version 2") {
				t.Errorf("the re-run does not say the group launches version 2:\n%s", r.stdout)
			}
			g.assertUpgraded(t, g.original.Desired+p.Cloud.ScaleUp)
		})
	}
}
