package motobridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"

	awsprov "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
)

// The plugin's EKS calls (pkg/cloud/aws's EKS type) on the two
// implementations of EKS's node group API the project has: its own
// endpoint (awsfake) and moto 5.2.1, which implements CreateNodegroup,
// DescribeNodegroup, ListNodegroups, UpdateNodegroupConfig and
// DeleteNodegroup. The same scenario runs on both and every answer field
// the plugin reads is recorded; eksChecks says what AWS documents for
// each (eks_checks_test.go).

const (
	eksCluster  = "c1"
	eksVersion  = "1.31"
	eksRelease  = "1.31.2-20250201" // the fake's latest release for 1.31
	eksNodeRole = "arn:aws:iam::123456789012:role/eks-node"
	customImage = "ami-0c0ffee0c0ffee001"
	greenImage  = "ami-0c0ffee0c0ffee002"
)

// eksEndpoint is one implementation with cluster eksCluster at
// eksVersion; template makes a launch template whose version 1 launches
// image on m5.large, and returns its id.
type eksEndpoint struct {
	name     string
	cfg      aws.Config
	rec      *recorder
	template func(t *testing.T, ctx context.Context, name, image string) string
}

func awsfakeEKS(t *testing.T, ctx context.Context) eksEndpoint {
	t.Helper()
	fast := awsfake.EKSOptions{DeleteDrainTimeout: time.Second, NodeReadyTimeout: 20 * time.Second, ConfigUpdateTime: 50 * time.Millisecond}
	srv, err := awsfake.Start(ctx, awsfake.Options{Region: region, LaunchDelay: 20 * time.Millisecond, EKS: fast})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.CreateEKSCluster(eksCluster, eksVersion)
	srv.AddRelease(awsfake.Release{KubernetesVersion: eksVersion, ReleaseVersion: eksRelease, ImageID: "ami-0eks131"})
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), BaseEndpoint: aws.String(srv.URL)}
	return eksEndpoint{name: "awsfake", cfg: cfg, template: func(_ *testing.T, _ context.Context, name, image string) string {
		return srv.CreateLaunchTemplate(name, image, "m5.large")
	}}
}

func motoEKS(t *testing.T, ctx context.Context) eksEndpoint {
	t.Helper()
	cfg := start(t, Options{})
	_, err := eks.NewFromConfig(cfg).CreateCluster(ctx, &eks.CreateClusterInput{
		Name: aws.String(eksCluster), Version: aws.String(eksVersion), RoleArn: aws.String("arn:aws:iam::123456789012:role/eks-cluster"),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: subnets()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return eksEndpoint{name: "moto", cfg: cfg, template: func(t *testing.T, ctx context.Context, name, image string) string {
		t.Helper()
		out, err := ec2.NewFromConfig(cfg).CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(image), InstanceType: ec2types.InstanceTypeM5Large},
		})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.LaunchTemplate.LaunchTemplateId)
	}}
}

func subnets() []string { return []string{awsfake.Subnet(zones[0]), awsfake.Subnet(zones[1])} }

// recorder keeps the body of the last answer to each "METHOD path", so
// that answers the plugin's calls discard can be read too.
type recorder struct {
	next aws.HTTPClient
	mu   sync.Mutex
	last map[string][]byte
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	res, err := r.next.Do(req)
	if err != nil {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[req.Method+" "+req.URL.Path] = body
	return res, err
}

// field reads a field of the last answer to method and path by its JSON
// path ("update.status").
func (r *recorder) field(method, path, jsonPath string) string {
	r.mu.Lock()
	body := r.last[method+" "+path]
	r.mu.Unlock()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Sprintf("<no answer: %v>", err)
	}
	for _, k := range strings.Split(jsonPath, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return fmt.Sprint(v)
}

// answers are what an endpoint said, in the order asked.
type answers struct {
	keys   []string
	values map[string]string
}

func (a *answers) add(key, value string) {
	a.keys = append(a.keys, key)
	a.values[key] = value
}

// ids blanks what an endpoint picks at random at the end of names:
// moto's UUIDs, the fake's hex suffixes.
var ids = regexp.MustCompile(`[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$|\b[0-9a-f]{8,}$`)

// group records every field of a node group the plugin reads (see
// pkg/cloud/aws.EKSNodegroup), the launch template lt shown as
// <template>.
func (a *answers) group(prefix string, g *awsprov.EKSNodegroup, lt string) {
	var asgs []string
	for _, n := range g.AutoScalingGroups {
		asgs = append(asgs, ids.ReplaceAllString(n, "<id>"))
	}
	template := "none"
	if t := g.LaunchTemplate; t != nil {
		template = fmt.Sprintf("%s %s version %s", strings.ReplaceAll(t.ID, lt, "<template>"), t.Name, t.Version)
	}
	for _, f := range []struct{ k, v string }{
		{"cluster", g.Cluster}, {"name", g.Name}, {"arn", ids.ReplaceAllString(g.ARN, "<id>")}, {"status", g.Status},
		{"version", g.Version}, {"releaseVersion", g.ReleaseVersion}, {"amiType", g.AMIType}, {"capacityType", g.CapacityType},
		{"scaling", sizes(g)}, {"updateConfig", fmt.Sprintf("%+v", g.Update)}, {"health", fmt.Sprint(g.Health)},
		{"launchTemplate", template}, {"subnets", fmt.Sprint(g.Subnets)}, {"instanceTypes", fmt.Sprint(g.InstanceTypes)},
		{"labels", fmt.Sprint(g.Labels)}, {"tags", fmt.Sprint(g.Tags)}, {"taints", fmt.Sprint(g.Taints)},
		{"nodeRole", g.NodeRole}, {"diskSize", fmt.Sprint(g.DiskSize)}, {"autoScalingGroups", fmt.Sprint(asgs)},
	} {
		a.add(prefix+": "+f.k, f.v)
	}
}

func sizes(g *awsprov.EKSNodegroup) string {
	return fmt.Sprintf("min %d desired %d max %d", g.Min, g.Desired, g.Max)
}

// outcome is "ok" or the error's code.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return answer(err)
}

// runEKS drives the plugin's EKS calls through the scenario on one
// endpoint and records the answers: blue/green from a group made without
// a launch template (with the configuration changes a run makes), then
// from one made with a custom AMI's launch template.
func runEKS(t *testing.T, ctx context.Context, ep eksEndpoint) *answers {
	t.Helper()
	ep.rec = &recorder{next: http.DefaultClient, last: map[string][]byte{}}
	ep.cfg.HTTPClient = ep.rec
	e := awsprov.NewEKSFromConfig(ep.cfg)
	e.SetPoll(10*time.Millisecond, 100*time.Millisecond)
	a := &answers{values: map[string]string{}}
	v, err := e.ClusterVersion(ctx, eksCluster)
	a.add("DescribeCluster: version", v+" "+outcome(err))
	blue := createBlue(t, ctx, ep, e, a, "blue", blueInput())
	createGreen(t, ctx, e, a, blue, awsprov.GreenSpec{Name: "green", Version: eksVersion, Min: 1, Desired: 2, Max: 3}, "")
	configure(t, ctx, ep, e, a)
	deleteGroup(ctx, ep, e, a, "green")
	belowCluster(ctx, e, a, blue)
	lt := ep.template(t, ctx, "blue-lt", customImage)
	if _, err := ec2.NewFromConfig(ep.cfg).CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId: aws.String(lt), SourceVersion: aws.String("1"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(greenImage)},
	}); err != nil {
		t.Fatal(err)
	}
	blue = createBlue(t, ctx, ep, e, a, "blue-lt", &eks.CreateNodegroupInput{
		LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: aws.String(lt), Version: aws.String("1")},
		ScalingConfig:  &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(1), DesiredSize: aws.Int32(1), MaxSize: aws.Int32(2)},
	})
	a.group("DescribeNodegroup blue-lt", blue, lt)
	createGreen(t, ctx, e, a, blue, awsprov.GreenSpec{Name: "green-lt", TemplateVersion: "2", Min: 1, Desired: 1, Max: 2}, lt)
	deleteGroup(ctx, ep, e, a, "green-lt")
	names, err := e.ListNodegroups(ctx, eksCluster)
	a.add("ListNodegroups at the end", fmt.Sprint(names)+" "+outcome(err))
	return a
}

// blueInput is a node group made without a launch template, every field
// the plugin copies to green set.
func blueInput() *eks.CreateNodegroupInput {
	return &eks.CreateNodegroupInput{
		InstanceTypes: []string{"m5.large"}, DiskSize: aws.Int32(30),
		AmiType: ekstypes.AMITypesAl2023X8664Standard, CapacityType: ekstypes.CapacityTypesOnDemand,
		ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(1), DesiredSize: aws.Int32(2), MaxSize: aws.Int32(3)},
		Labels:        map[string]string{"team": "web"}, Tags: map[string]string{"owner": "web"},
		Taints:       []ekstypes.Taint{{Key: aws.String("dedicated"), Value: aws.String("web"), Effect: ekstypes.TaintEffectNoSchedule}},
		UpdateConfig: &ekstypes.NodegroupUpdateConfig{MaxUnavailablePercentage: aws.Int32(25), UpdateStrategy: ekstypes.NodegroupUpdateStrategiesMinimal},
	}
}

// createBlue creates a node group through the SDK as a user would, in
// the cluster's subnets with the node role, and waits until it is ACTIVE.
func createBlue(t *testing.T, ctx context.Context, ep eksEndpoint, e *awsprov.EKS, a *answers, name string, in *eks.CreateNodegroupInput) *awsprov.EKSNodegroup {
	t.Helper()
	in.ClusterName, in.NodegroupName, in.NodeRole, in.Subnets = aws.String(eksCluster), aws.String(name), aws.String(eksNodeRole), subnets()
	out, err := eks.NewFromConfig(ep.cfg).CreateNodegroup(ctx, in)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	a.add("CreateNodegroup "+name+": status", string(out.Nodegroup.Status))
	blue, err := e.WaitActive(ctx, eksCluster, name)
	if err != nil {
		t.Fatal(err)
	}
	if in.LaunchTemplate == nil {
		a.group("DescribeNodegroup "+name, blue, "")
	}
	return blue
}

// createGreen creates green as blue/green does, twice: the second finds
// the first, as an interrupted run's must.
func createGreen(t *testing.T, ctx context.Context, e *awsprov.EKS, a *answers, blue *awsprov.EKSNodegroup, spec awsprov.GreenSpec, lt string) {
	t.Helper()
	g, err := e.CreateGreen(ctx, blue, spec)
	if err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
	a.add("CreateNodegroup "+spec.Name+": status", g.Status)
	if g, err = e.WaitActive(ctx, eksCluster, spec.Name); err != nil {
		t.Fatal(err)
	}
	a.group("DescribeNodegroup "+spec.Name, g, lt)
	again, err := e.CreateGreen(ctx, blue, spec)
	a.add("CreateNodegroup "+spec.Name+" again: the same group", fmt.Sprint(err == nil && again.ARN == g.ARN)+" "+outcome(err))
	names, err := e.ListNodegroups(ctx, eksCluster)
	a.add("ListNodegroups with "+spec.Name, fmt.Sprint(names)+" "+outcome(err))
}

// configChanges are what a run sets with UpdateNodegroupConfig, and puts
// back, on green.
var configChanges = []struct {
	name   string
	change awsprov.ConfigChange
}{
	{"maxUnavailable 2 DEFAULT, desired 3 max 4", awsprov.ConfigChange{Update: &awsprov.UpdateSettings{MaxUnavailable: 2, Strategy: "DEFAULT"}, Desired: aws.Int32(3), Max: aws.Int32(4)}},
	{"maxUnavailablePercentage 50 MINIMAL", awsprov.ConfigChange{Update: &awsprov.UpdateSettings{MaxUnavailablePercentage: 50, Strategy: "MINIMAL"}}},
	{"labels and taints", awsprov.ConfigChange{AddLabels: map[string]string{"tier": "front"}, RemoveLabels: []string{"team"},
		AddTaints:    []corev1.Taint{{Key: "spot", Value: "yes", Effect: corev1.TaintEffectPreferNoSchedule}},
		RemoveTaints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}}},
}

// configure makes the configChanges, recording UpdateNodegroupConfig's
// answer and the group after each; then asks for a desired size above
// the maximum.
func configure(t *testing.T, ctx context.Context, ep eksEndpoint, e *awsprov.EKS, a *answers) {
	t.Helper()
	path := "/clusters/" + eksCluster + "/node-groups/green/update-config"
	for _, c := range configChanges {
		g, err := e.UpdateConfig(ctx, eksCluster, "green", c.change)
		prefix := "UpdateNodegroupConfig " + c.name
		a.add(prefix+": answer", ep.rec.field("POST", path, "update.type")+" "+ep.rec.field("POST", path, "update.status"))
		followed := followedOutcome(err)
		if followed == describeUpdate404 {
			g, err = e.DescribeNodegroup(ctx, eksCluster, "green")
		}
		a.add(prefix+": followed", followed)
		if err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
		a.add(prefix+": then", fmt.Sprintf("%s, %s, %+v, labels %v, taints %v", g.Status, sizes(g), g.Update, g.Labels, g.Taints))
	}
	_, err := e.UpdateConfig(ctx, eksCluster, "green", awsprov.ConfigChange{Desired: aws.Int32(9)})
	a.add("UpdateNodegroupConfig desired 9 above max 4", followedOutcome(err))
}

// describeUpdate404 is moto's answer to DescribeUpdate of a config update,
// which UpdateConfig follows: moto reports it done at once and knows no
// such update.
const describeUpdate404 = "DescribeUpdate 404"

// followedOutcome is outcome, with moto's 404 to DescribeUpdate named.
func followedOutcome(err error) string {
	if err != nil && strings.Contains(err.Error(), "DescribeUpdate") && strings.Contains(err.Error(), "StatusCode: 404") {
		return describeUpdate404
	}
	return outcome(err)
}

// belowCluster asks for a green at a version below the cluster's, which
// CreateNodegroup refuses; one made anyway is deleted.
func belowCluster(ctx context.Context, e *awsprov.EKS, a *answers, blue *awsprov.EKSNodegroup) {
	_, err := e.CreateGreen(ctx, blue, awsprov.GreenSpec{Name: "green-1.30", Version: "1.30", Min: 1, Desired: 1, Max: 1})
	a.add("CreateNodegroup green-1.30 in a 1.31 cluster", outcome(err))
	if err == nil {
		_ = e.DeleteNodegroup(ctx, eksCluster, "green-1.30")
		_ = e.WaitDeleted(ctx, eksCluster, "green-1.30")
	}
}

// deleteGroup deletes a node group and waits until it is gone, as
// blue/green does with blue at the end and with green on rollback; then
// deletes it again, as a resumed run would.
func deleteGroup(ctx context.Context, ep eksEndpoint, e *awsprov.EKS, a *answers, name string) {
	err := e.DeleteNodegroup(ctx, eksCluster, name)
	a.add("DeleteNodegroup "+name+": answer", ep.rec.field("DELETE", "/clusters/"+eksCluster+"/node-groups/"+name, "nodegroup.status")+" "+outcome(err))
	a.add("WaitDeleted "+name, outcome(e.WaitDeleted(ctx, eksCluster, name)))
	_, err = e.DescribeNodegroup(ctx, eksCluster, name)
	a.add("DescribeNodegroup "+name+" deleted", outcome(err))
	a.add("DeleteNodegroup "+name+" again", outcome(e.DeleteNodegroup(ctx, eksCluster, name)))
}

// TestEKSNodegroupCallsOnMotoAndAWSFake runs the plugin's EKS calls on
// both endpoints and checks every answer: the project's endpoint must
// answer as AWS documents, and moto as documented or with the deviation
// it was found with, so that a change of either is noticed (and
// sim/awsfake/README.md's table revisited).
func TestEKSNodegroupCallsOnMotoAndAWSFake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	checks := eksChecks()
	for _, ep := range []func(*testing.T, context.Context) eksEndpoint{awsfakeEKS, motoEKS} {
		e := ep(t, ctx)
		t.Run(e.name, func(t *testing.T) {
			got := runEKS(t, ctx, e)
			for _, k := range got.keys {
				c, ok := checks[k]
				want, deviates := c.want, e.name == "moto" && c.moto != ""
				if deviates {
					want = c.moto
				}
				switch {
				case ok && deviates && got.values[k] == want:
					t.Logf("%s: moto %q, not %q: %s", k, want, c.want, c.doc)
				case !ok:
					t.Errorf("%s: %q, and no check says what to want", k, got.values[k])
				case got.values[k] != want && deviates:
					t.Errorf("%s: %q; moto answered %q when probed (want %q: %s)", k, got.values[k], c.moto, c.want, c.doc)
				case got.values[k] != want:
					t.Errorf("%s: %q, want %q", k, got.values[k], want)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(checks)) {
				if _, ok := got.values[k]; !ok {
					t.Errorf("%s: not answered", k)
				}
			}
		})
	}
}
