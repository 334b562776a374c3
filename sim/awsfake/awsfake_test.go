package awsfake

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// recorder is a fake OnLaunch/OnTerminate pair: no cluster needed.
type recorder struct {
	mu                   sync.Mutex
	launched, terminated []string
}

func (r *recorder) launch(_ context.Context, in Instance) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.launched = append(r.launched, in.ID)
	return nil
}

func (r *recorder) terminate(_ context.Context, in Instance) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated = append(r.terminated, in.ID)
	return nil
}

func (r *recorder) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.launched), len(r.terminated)
}

// sdkConfig is how a test points the real SDK at the fake: any static
// credentials, a region and BaseEndpoint.
func sdkConfig(s *Server) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		BaseEndpoint: aws.String(s.URL),
	}
}

type fixture struct {
	s    *Server
	rec  *recorder
	asg  *autoscaling.Client
	ec2  *ec2.Client
	ltID string
	ctx  context.Context
}

func start(t *testing.T, desired int32) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	rec := &recorder{}
	s, err := Start(ctx, Options{LaunchDelay: 20 * time.Millisecond, OnLaunch: rec.launch, OnTerminate: rec.terminate, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	lt := s.CreateLaunchTemplate("ng1", "ami-old", "")
	if err := s.CreateGroup(GroupSpec{Name: "ng1", Min: 1, Max: 3, Desired: desired, Zones: zones, LaunchTemplateID: lt, LaunchTemplateVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitStable(ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	cfg := sdkConfig(s)
	return &fixture{s: s, rec: rec, asg: autoscaling.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), ltID: lt, ctx: ctx}
}

func zoneCounts(g Group) map[string]int {
	m := map[string]int{}
	for _, in := range g.Instances {
		m[in.Zone]++
	}
	return m
}

func TestReplaceWithNewVersion(t *testing.T) {
	f := start(t, 3)
	ctx := f.ctx

	out, err := f.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"ng1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.AutoScalingGroups) != 1 {
		t.Fatalf("groups: %d", len(out.AutoScalingGroups))
	}
	ag := out.AutoScalingGroups[0]
	if *ag.DesiredCapacity != 3 || *ag.MaxSize != 3 || *ag.MinSize != 1 || !slices.Equal(ag.AvailabilityZones, zones) {
		t.Fatalf("group: %+v", ag)
	}
	if *ag.LaunchTemplate.LaunchTemplateId != f.ltID || *ag.LaunchTemplate.Version != "1" {
		t.Fatalf("launch template: %+v", ag.LaunchTemplate)
	}
	seen := map[string]bool{}
	var ids []string
	for _, in := range ag.Instances {
		if in.LifecycleState != "InService" || *in.HealthStatus != "Healthy" || *in.LaunchTemplate.Version != "1" {
			t.Fatalf("instance: %+v", in)
		}
		seen[*in.AvailabilityZone] = true
		ids = append(ids, *in.InstanceId)
	}
	if len(seen) != 3 {
		t.Fatalf("want one instance per zone, got %v", seen)
	}

	ai, err := f.asg.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: ids[:2]})
	if err != nil {
		t.Fatal(err)
	}
	if len(ai.AutoScalingInstances) != 2 || *ai.AutoScalingInstances[0].AutoScalingGroupName != "ng1" {
		t.Fatalf("auto scaling instances: %+v", ai.AutoScalingInstances)
	}

	di, err := f.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	if len(di.Reservations) != 3 {
		t.Fatalf("reservations: %d", len(di.Reservations))
	}
	for _, r := range di.Reservations {
		in := r.Instances[0]
		tags := map[string]string{}
		for _, tg := range in.Tags {
			tags[*tg.Key] = *tg.Value
		}
		if *in.ImageId != "ami-old" || in.State.Name != "running" || in.LaunchTime == nil || *in.Placement.AvailabilityZone == "" ||
			tags["aws:ec2launchtemplate:id"] != f.ltID || tags["aws:ec2launchtemplate:version"] != "1" {
			t.Fatalf("ec2 instance: %+v tags %v", in, tags)
		}
	}

	cv, err := f.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId: aws.String(f.ltID), SourceVersion: aws.String("1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-new")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if *cv.LaunchTemplateVersion.VersionNumber != 2 || *cv.LaunchTemplateVersion.LaunchTemplateData.ImageId != "ami-new" ||
		cv.LaunchTemplateVersion.LaunchTemplateData.InstanceType != "m5.large" {
		t.Fatalf("new version: %+v", cv.LaunchTemplateVersion)
	}
	dv, err := f.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: aws.String(f.ltID), Versions: []string{"$Latest", "$Default", "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dv.LaunchTemplateVersions) != 3 || *dv.LaunchTemplateVersions[0].VersionNumber != 2 ||
		*dv.LaunchTemplateVersions[1].VersionNumber != 1 || !*dv.LaunchTemplateVersions[1].DefaultVersion {
		t.Fatalf("versions: %+v", dv.LaunchTemplateVersions)
	}

	if _, err := f.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String("ng1"),
		LaunchTemplate:       &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(f.ltID), Version: aws.String("2")},
	}); err != nil {
		t.Fatal(err)
	}

	victim, _ := f.s.Instance(ids[0])
	ta, err := f.asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(victim.ID), ShouldDecrementDesiredCapacity: aws.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ta.Activity == nil || *ta.Activity.AutoScalingGroupName != "ng1" {
		t.Fatalf("activity: %+v", ta.Activity)
	}
	err = f.s.WaitFor(ctx, "ng1", func(g Group) bool {
		if !Stable(g) {
			return false
		}
		for _, in := range g.Instances {
			if in.ID == victim.ID {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := f.s.Group("ng1")
	if g.Desired != 3 {
		t.Fatalf("desired changed to %d", g.Desired)
	}
	var fresh []Instance
	for _, in := range g.Instances {
		if !slices.Contains(ids, in.ID) {
			fresh = append(fresh, in)
		}
	}
	if len(fresh) != 1 || fresh[0].LaunchTemplateVersion != "2" || fresh[0].ImageID != "ami-new" || fresh[0].Zone != victim.Zone {
		t.Fatalf("replacement: %+v (victim in %s)", fresh, victim.Zone)
	}
	if v, _ := f.s.Instance(victim.ID); v.State != StateTerminated {
		t.Fatalf("victim state %q", v.State)
	}
	if l, term := f.rec.counts(); l != 4 || term != 1 {
		t.Fatalf("callbacks: %d launched, %d terminated", l, term)
	}
}

func TestSetDesiredCapacity(t *testing.T) {
	f := start(t, 2)
	ctx := f.ctx
	_, err := f.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String("ng1"), DesiredCapacity: aws.Int32(5)})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationError" {
		t.Fatalf("above max: want ValidationError, got %v", err)
	}
	if _, err := f.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("ng1"), MaxSize: aws.Int32(6)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String("ng1"), DesiredCapacity: aws.Int32(5)}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitStable(ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	g, _ := f.s.Group("ng1")
	zc := zoneCounts(g)
	if len(g.Instances) != 5 || zc["us-east-1a"] != 2 || zc["us-east-1b"] != 2 || zc["us-east-1c"] != 1 {
		t.Fatalf("after scale-up: %d instances, zones %v", len(g.Instances), zc)
	}
	if _, err := f.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String("ng1"), DesiredCapacity: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitStable(ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	g, _ = f.s.Group("ng1")
	if zc := zoneCounts(g); len(g.Instances) != 2 || len(zc) != 2 {
		t.Fatalf("after scale-down: %d instances, zones %v", len(g.Instances), zc)
	}
	// Lowering max below desired pulls desired down with it.
	if _, err := f.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("ng1"), MaxSize: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	if g, _ := f.s.Group("ng1"); g.Desired != 1 {
		t.Fatalf("desired %d after max 1", g.Desired)
	}
}

func TestErrorShapes(t *testing.T) {
	f := start(t, 1)
	ctx := f.ctx
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return "not an API error: " + errString(err)
	}
	_, err := f.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("nope"), MaxSize: aws.Int32(2)})
	if c := code(err); c != "ValidationError" {
		t.Errorf("update unknown group: %s", c)
	}
	_, err = f.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String("nope"), DesiredCapacity: aws.Int32(2)})
	if c := code(err); c != "ValidationError" {
		t.Errorf("set desired of unknown group: %s", c)
	}
	_, err = f.asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String("i-0000000000000dead"), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	if c := code(err); c != "ValidationError" {
		t.Errorf("terminate unknown instance: %s", c)
	}
	_, err = f.asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(firstID(f.s)), ShouldDecrementDesiredCapacity: aws.Bool(true)})
	if c := code(err); c != "ValidationError" {
		t.Errorf("terminate below min: %s", c)
	}
	_, err = f.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(f.ltID), Versions: []string{"7"}})
	if c := code(err); c != "InvalidLaunchTemplateId.VersionNotFound" {
		t.Errorf("unknown version: %s", c)
	}
	_, err = f.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String("lt-0000000000000dead")})
	if c := code(err); c != "InvalidLaunchTemplateId.NotFound" {
		t.Errorf("unknown template: %s", c)
	}
	_, err = f.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(f.ltID), SourceVersion: aws.String("1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("bogus")}})
	if c := code(err); c != "InvalidAMIID.Malformed" {
		t.Errorf("malformed ami: %s", c)
	}
	_, err = f.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0000000000000dead"}})
	if c := code(err); c != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown instance: %s", c)
	}
	// Unknown names are simply missing, as in AWS.
	out, err := f.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{"nope"}})
	if err != nil || len(out.AutoScalingGroups) != 0 {
		t.Errorf("describe unknown group: %v, %d groups", err, len(out.AutoScalingGroups))
	}
}

func firstID(s *Server) string {
	g, _ := s.Group("ng1")
	return g.Instances[0].ID
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestLaunchFailureRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	fails := 1
	s, err := Start(ctx, Options{LaunchDelay: -1, OnLaunch: func(context.Context, Instance) error {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			return errors.New("no capacity")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lt := s.CreateLaunchTemplate("x", "ami-1", "")
	if err := s.CreateGroup(GroupSpec{Name: "x", Min: 1, Max: 1, Desired: 1, Zones: zones[:1], LaunchTemplateID: lt}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := s.WaitStable(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < time.Second {
		t.Fatalf("relaunched after %v, want a back-off of 1s", d)
	}
}

func TestDescribeImages(t *testing.T) {
	f := start(t, 1) // its template registered ami-old under its id
	f.s.RegisterImage("ami-new", "node-v2")
	f.s.RegisterImage("ami-0a1b2c3d", "other/v3")
	for _, tc := range []struct {
		name      string
		in        ec2.DescribeImagesInput
		want      []string // image id=name, in order
		errCode   string
		errSubstr string
	}{
		{name: "all", in: ec2.DescribeImagesInput{}, want: []string{"ami-0a1b2c3d=other/v3", "ami-new=node-v2", "ami-old=ami-old"}},
		{name: "by id, owner ignored", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-new"}, Owners: []string{"self"}}, want: []string{"ami-new=node-v2"}},
		{name: "unknown id", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-new", "ami-xyz"}},
			errCode: "InvalidAMIID.NotFound", errSubstr: "The image id '[ami-xyz]' does not exist"},
		{name: "unknown ids", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-x1", "ami-x2"}},
			errCode: "InvalidAMIID.NotFound", errSubstr: "The image ids '[ami-x1, ami-x2]' do not exist"},
		{name: "malformed id", in: ec2.DescribeImagesInput{ImageIds: []string{"bogus"}}, errCode: "InvalidAMIID.Malformed"},
		{name: "filter leaves unknown out", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: []string{"ami-xyz", "ami-old"}}}},
			want: []string{"ami-old=ami-old"}},
		{name: "filter matches nothing", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: []string{"ami-xyz"}}}}},
		{name: "name wildcard and id filter", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{
			{Name: aws.String("name"), Values: []string{"node-*", "other/?3"}},
			{Name: aws.String("image-id"), Values: []string{"ami-new", "ami-0a1b2c3d", "ami-old"}},
		}}, want: []string{"ami-0a1b2c3d=other/v3", "ami-new=node-v2"}},
		{name: "unknown filter", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("owner-alias"), Values: []string{"amazon"}}}},
			errCode: "InvalidParameterValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeImages(f.ctx, &tc.in)
			if tc.errCode != "" {
				var ae smithy.APIError
				var re *awshttp.ResponseError
				if !errors.As(err, &ae) || ae.ErrorCode() != tc.errCode || !strings.Contains(ae.ErrorMessage(), tc.errSubstr) {
					t.Fatalf("want %s %q, got %v", tc.errCode, tc.errSubstr, err)
				}
				if !errors.As(err, &re) || re.HTTPStatusCode() != 400 {
					t.Fatalf("want HTTP 400, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, im := range out.Images {
				got = append(got, *im.ImageId+"="+*im.Name)
				if im.State != ec2types.ImageStateAvailable || im.Architecture != ec2types.ArchitectureValuesX8664 ||
					im.RootDeviceType != ec2types.DeviceTypeEbs || im.VirtualizationType != ec2types.VirtualizationTypeHvm {
					t.Errorf("image %s: state %q arch %q root %q virt %q", *im.ImageId, im.State, im.Architecture, im.RootDeviceType, im.VirtualizationType)
				}
				if _, err := time.Parse(time.RFC3339, aws.ToString(im.CreationDate)); err != nil {
					t.Errorf("image %s: creationDate: %v", *im.ImageId, err)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("images %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUniqueAcrossServers: Servers of one process must not hand out the
// same instance id, private IP, node name or launch template id, since
// several of them may feed one simulated cluster.
func TestUniqueAcrossServers(t *testing.T) {
	a, b := start(t, 3), start(t, 3)
	b2 := b.s.CreateLaunchTemplate("ng2", "ami-old", "")
	if err := b.s.CreateGroup(GroupSpec{Name: "ng2", Min: 0, Max: 2, Desired: 2, Zones: zones, LaunchTemplateID: b2}); err != nil {
		t.Fatal(err)
	}
	if err := b.s.WaitStable(b.ctx, "ng2"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	check := func(kind, v, owner string) {
		t.Helper()
		if prev, dup := seen[kind+" "+v]; dup {
			t.Errorf("%s %s used by %s and %s", kind, v, prev, owner)
		}
		seen[kind+" "+v] = owner
	}
	idRE := regexp.MustCompile(`^i-[0-9a-f]{17}$`)
	ltRE := regexp.MustCompile(`^lt-[0-9a-f]{17}$`)
	dnsRE := regexp.MustCompile(`^ip-10-\d{1,3}-\d{1,3}-\d{1,3}\.us-east-1\.compute\.internal$`)
	for _, tc := range []struct {
		name   string
		s      *Server
		groups []string
		lts    []string
	}{
		{"a", a.s, []string{"ng1"}, []string{a.ltID}},
		{"b", b.s, []string{"ng1", "ng2"}, []string{b.ltID, b2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, lt := range tc.lts {
				if !ltRE.MatchString(lt) {
					t.Errorf("launch template id %q", lt)
				}
				check("launch template", lt, tc.name)
			}
			for _, name := range tc.groups {
				g, _ := tc.s.Group(name)
				for _, in := range g.Instances {
					if !idRE.MatchString(in.ID) || !dnsRE.MatchString(in.PrivateDNS) || "ip-"+dashes(in.PrivateIP)+".us-east-1.compute.internal" != in.PrivateDNS {
						t.Errorf("instance %s: ip %s dns %s", in.ID, in.PrivateIP, in.PrivateDNS)
					}
					check("instance", in.ID, tc.name+"/"+name)
					check("ip", in.PrivateIP, tc.name+"/"+name)
					check("node", NodeOptions{}.NodeName(in), tc.name+"/"+name)
				}
			}
		})
	}
	if len(seen) != 3*(3+3+2)+3 { // instance, ip and node per instance; 3 templates
		t.Fatalf("%d names recorded: %v", len(seen), seen)
	}
}
