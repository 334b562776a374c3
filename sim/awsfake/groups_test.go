package awsfake

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
)

// wantAPIError checks an error's code, that its message contains substr,
// and that it came with HTTP 400.
func wantAPIError(t *testing.T, err error, code, substr string) {
	t.Helper()
	var ae smithy.APIError
	var re *awshttp.ResponseError
	if !errors.As(err, &ae) || ae.ErrorCode() != code || !strings.Contains(ae.ErrorMessage(), substr) {
		t.Fatalf("want %s %q, got %v", code, substr, err)
	}
	if !errors.As(err, &re) || re.HTTPStatusCode() != 400 {
		t.Fatalf("want HTTP 400, got %v", err)
	}
}

func describeGroup(t *testing.T, f *fixture, name string) *astypes.AutoScalingGroup {
	t.Helper()
	out, err := f.asg.DescribeAutoScalingGroups(f.ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.AutoScalingGroups) == 0 {
		return nil
	}
	return &out.AutoScalingGroups[0]
}

type tagView struct {
	id, typ, key, value string
	propagate           bool
}

func tagViews(ag *astypes.AutoScalingGroup) []tagView {
	var out []tagView
	for _, tg := range ag.Tags {
		out = append(out, tagView{aws.ToString(tg.ResourceId), aws.ToString(tg.ResourceType), aws.ToString(tg.Key), aws.ToString(tg.Value), aws.ToBool(tg.PropagateAtLaunch)})
	}
	return out
}

func TestCreateAutoScalingGroup(t *testing.T) {
	f := start(t, 1) // ng1: template "ng1" (f.ltID), version 1
	if _, err := f.s.AddLaunchTemplateVersion(f.ltID, "ami-new"); err != nil {
		t.Fatal(err)
	}
	lt := func(id, name, version string) *astypes.LaunchTemplateSpecification {
		s := &astypes.LaunchTemplateSpecification{}
		if id != "" {
			s.LaunchTemplateId = aws.String(id)
		}
		if name != "" {
			s.LaunchTemplateName = aws.String(name)
		}
		if version != "" {
			s.Version = aws.String(version)
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		in        autoscaling.CreateAutoScalingGroupInput
		errCode   string
		errSubstr string
		check     func(t *testing.T, ag *astypes.AutoScalingGroup)
	}{
		{
			name: "green clone by template name, subnets and tags",
			in: autoscaling.CreateAutoScalingGroupInput{
				AutoScalingGroupName: aws.String("green"), LaunchTemplate: lt("", "ng1", "$Latest"),
				MinSize: aws.Int32(1), MaxSize: aws.Int32(3),
				VPCZoneIdentifier:      aws.String("subnet-us-east-1b, subnet-us-east-1a"),
				HealthCheckType:        aws.String("ELB"),
				HealthCheckGracePeriod: aws.Int32(120),
				DefaultCooldown:        aws.Int32(60),
				TerminationPolicies:    []string{"OldestInstance", "Default"},
				Tags: []astypes.Tag{
					{Key: aws.String("team"), Value: aws.String("web"), PropagateAtLaunch: aws.Bool(true)},
					{Key: aws.String("k8s.io/cluster-autoscaler/enabled"), Value: aws.String("true")},
				},
			},
			check: func(t *testing.T, ag *astypes.AutoScalingGroup) {
				if *ag.MinSize != 1 || *ag.DesiredCapacity != 1 || *ag.MaxSize != 3 {
					t.Errorf("sizes %d/%d/%d, want desired defaulting to min", *ag.MinSize, *ag.DesiredCapacity, *ag.MaxSize)
				}
				if aws.ToString(ag.VPCZoneIdentifier) != "subnet-us-east-1b,subnet-us-east-1a" || !slices.Equal(ag.AvailabilityZones, []string{"us-east-1b", "us-east-1a"}) {
					t.Errorf("VPCZoneIdentifier %q, zones %v", aws.ToString(ag.VPCZoneIdentifier), ag.AvailabilityZones)
				}
				if *ag.LaunchTemplate.LaunchTemplateId != f.ltID || *ag.LaunchTemplate.LaunchTemplateName != "ng1" || *ag.LaunchTemplate.Version != "$Latest" {
					t.Errorf("launch template %+v", ag.LaunchTemplate)
				}
				if *ag.HealthCheckType != "ELB" || *ag.HealthCheckGracePeriod != 120 || *ag.DefaultCooldown != 60 ||
					!slices.Equal(ag.TerminationPolicies, []string{"OldestInstance", "Default"}) || ag.Status != nil {
					t.Errorf("health check %s/%d, cooldown %d, policies %v, status %v", *ag.HealthCheckType, *ag.HealthCheckGracePeriod, *ag.DefaultCooldown, ag.TerminationPolicies, ag.Status)
				}
				want := []tagView{
					{"green", "auto-scaling-group", "k8s.io/cluster-autoscaler/enabled", "true", false},
					{"green", "auto-scaling-group", "team", "web", true},
				}
				if got := tagViews(ag); !slices.Equal(got, want) {
					t.Errorf("tags %+v, want %+v", got, want)
				}
				if got := f.s.GroupTags("green"); !maps.Equal(got, map[string]string{"team": "web", "k8s.io/cluster-autoscaler/enabled": "true"}) {
					t.Errorf("GroupTags %v", got)
				}
				// The reconcile loop launches it from the latest version,
				// with the propagated tag and the zone's subnet.
				if err := f.s.WaitStable(f.ctx, "green"); err != nil {
					t.Fatal(err)
				}
				g, _ := f.s.Group("green")
				in := g.Instances[0]
				if in.ImageID != "ami-new" || in.LaunchTemplateVersion != "2" || in.Zone != "us-east-1b" {
					t.Fatalf("instance %+v", in)
				}
				di, err := f.ec2.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{in.ID}})
				if err != nil {
					t.Fatal(err)
				}
				ei := di.Reservations[0].Instances[0]
				tags := map[string]string{}
				for _, tg := range ei.Tags {
					tags[*tg.Key] = *tg.Value
				}
				if aws.ToString(ei.SubnetId) != "subnet-us-east-1b" || tags["team"] != "web" || tags["Name"] != "green" ||
					tags["aws:autoscaling:groupName"] != "green" || tags["k8s.io/cluster-autoscaler/enabled"] != "" {
					t.Errorf("ec2 instance subnet %q tags %v", aws.ToString(ei.SubnetId), tags)
				}
			},
		},
		{
			name: "zones only, AWS defaults",
			in: autoscaling.CreateAutoScalingGroupInput{
				AutoScalingGroupName: aws.String("plain"), LaunchTemplate: lt(f.ltID, "", ""),
				MinSize: aws.Int32(0), MaxSize: aws.Int32(2), DesiredCapacity: aws.Int32(2),
				AvailabilityZones: []string{"us-east-1c"},
			},
			check: func(t *testing.T, ag *astypes.AutoScalingGroup) {
				if *ag.DesiredCapacity != 2 || ag.VPCZoneIdentifier != nil || len(ag.Tags) != 0 || *ag.LaunchTemplate.Version != "$Default" ||
					*ag.HealthCheckType != "EC2" || *ag.HealthCheckGracePeriod != 0 || *ag.DefaultCooldown != 300 ||
					!slices.Equal(ag.TerminationPolicies, []string{"Default"}) || !slices.Equal(ag.AvailabilityZones, []string{"us-east-1c"}) {
					t.Errorf("group %+v", ag)
				}
				if got := f.s.GroupTags("plain"); got == nil || len(got) != 0 {
					t.Errorf("GroupTags %v, want empty", got)
				}
			},
		},
		{
			name: "zones and subnets that agree",
			in: autoscaling.CreateAutoScalingGroupInput{
				AutoScalingGroupName: aws.String("both"), LaunchTemplate: lt(f.ltID, "", "1"),
				MinSize: aws.Int32(0), MaxSize: aws.Int32(0),
				AvailabilityZones: []string{"us-east-1a", "us-east-1c"}, VPCZoneIdentifier: aws.String("subnet-us-east-1c"),
			},
			check: func(t *testing.T, ag *astypes.AutoScalingGroup) {
				if !slices.Equal(ag.AvailabilityZones, []string{"us-east-1c"}) || aws.ToString(ag.VPCZoneIdentifier) != "subnet-us-east-1c" {
					t.Errorf("zones %v, VPCZoneIdentifier %q", ag.AvailabilityZones, aws.ToString(ag.VPCZoneIdentifier))
				}
			},
		},
		{
			name:      "name taken",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("ng1"), LaunchTemplate: lt(f.ltID, "", ""), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones},
			errCode:   "AlreadyExists",
			errSubstr: "AutoScalingGroup by this name already exists - A group with the name ng1 already exists",
		},
		{
			name:      "desired above max",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt(f.ltID, "", ""), MinSize: aws.Int32(1), MaxSize: aws.Int32(3), DesiredCapacity: aws.Int32(5), AvailabilityZones: zones},
			errCode:   "ValidationError",
			errSubstr: "Desired capacity:5 must be between the specified min size:1 and max size:3",
		},
		{
			name:      "min above max",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt(f.ltID, "", ""), MinSize: aws.Int32(4), MaxSize: aws.Int32(3), AvailabilityZones: zones},
			errCode:   "ValidationError",
			errSubstr: "Max bound, 3, must be greater than or equal to min bound, 4",
		},
		{
			name:      "no launch template",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones},
			errCode:   "ValidationError",
			errSubstr: "Valid requests must contain either LaunchTemplate, LaunchConfigurationName, InstanceId or MixedInstancesPolicy parameter.",
		},
		{
			name: "mixed instances policy",
			in: autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones,
				MixedInstancesPolicy: &astypes.MixedInstancesPolicy{LaunchTemplate: &astypes.LaunchTemplate{LaunchTemplateSpecification: lt(f.ltID, "", "")}}},
			errCode:   "ValidationError",
			errSubstr: "only groups created with a LaunchTemplate",
		},
		{
			name:      "unknown template id",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt("lt-0000000000000dead", "", ""), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones},
			errCode:   "ValidationError",
			errSubstr: "The specified launch template, with template ID lt-0000000000000dead, does not exist.",
		},
		{
			name:      "unknown template name",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt("", "nope", ""), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones},
			errCode:   "ValidationError",
			errSubstr: "The specified launch template, with template name nope, does not exist.",
		},
		{
			name:      "template id and name",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt(f.ltID, "ng1", ""), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones},
			errCode:   "ValidationError",
			errSubstr: "but not both",
		},
		{
			name:      "unknown version",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt(f.ltID, "", "9"), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones},
			errCode:   "ValidationError",
			errSubstr: "version 9",
		},
		{
			name:      "unknown subnet",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt(f.ltID, "", ""), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), VPCZoneIdentifier: aws.String("subnet-us-east-1a,subnet-0abc1234")},
			errCode:   "ValidationError",
			errSubstr: "The subnet ID 'subnet-0abc1234' does not exist",
		},
		{
			name: "subnet outside the zones",
			in: autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt(f.ltID, "", ""), MinSize: aws.Int32(0), MaxSize: aws.Int32(1),
				AvailabilityZones: []string{"us-east-1a"}, VPCZoneIdentifier: aws.String("subnet-us-east-1b")},
			errCode:   "ValidationError",
			errSubstr: "The availability zones of the specified subnets and the Auto Scaling group do not match",
		},
		{
			name:      "no zones or subnets",
			in:        autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("x"), LaunchTemplate: lt(f.ltID, "", ""), MinSize: aws.Int32(0), MaxSize: aws.Int32(1)},
			errCode:   "ValidationError",
			errSubstr: "At least one Availability Zone or VPC Subnet is required.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.asg.CreateAutoScalingGroup(f.ctx, &tc.in)
			if tc.errCode != "" {
				wantAPIError(t, err, tc.errCode, tc.errSubstr)
				if ag := describeGroup(t, f, *tc.in.AutoScalingGroupName); ag != nil && *tc.in.AutoScalingGroupName != "ng1" {
					t.Fatalf("a failed create left group %s", *ag.AutoScalingGroupName)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ag := describeGroup(t, f, *tc.in.AutoScalingGroupName)
			if ag == nil {
				t.Fatal("not described")
			}
			tc.check(t, ag)
		})
	}
	if got := f.s.Groups(); !slices.Equal(got, []string{"both", "green", "ng1", "plain"}) {
		t.Fatalf("Groups() = %v", got)
	}
	// Listing every group gives them in name order.
	out, err := f.asg.DescribeAutoScalingGroups(f.ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ag := range out.AutoScalingGroups {
		names = append(names, *ag.AutoScalingGroupName)
	}
	if !slices.Equal(names, []string{"both", "green", "ng1", "plain"}) {
		t.Fatalf("described %v", names)
	}
	// Groups made by CreateGroup keep their defaults.
	if ag := describeGroup(t, f, "ng1"); *ag.HealthCheckType != "EC2" || *ag.HealthCheckGracePeriod != 300 || *ag.DefaultCooldown != 300 || ag.VPCZoneIdentifier != nil {
		t.Fatalf("ng1: %+v", ag)
	}
}

func TestCreateGroupSubnets(t *testing.T) {
	f := start(t, 1)
	for _, tc := range []struct {
		name      string
		spec      GroupSpec
		wantZones []string
		wantErr   string
	}{
		{"subnets only", GroupSpec{Name: "a", Max: 1, Subnets: []string{Subnet("us-east-1c"), Subnet("us-east-1a")}, Tags: map[string]string{"k": "v"}}, []string{"us-east-1c", "us-east-1a"}, ""},
		{"bad subnet", GroupSpec{Name: "b", Max: 1, Subnets: []string{"subnet-sim-a"}}, nil, "The subnet ID 'subnet-sim-a' does not exist"},
		{"no zones", GroupSpec{Name: "c", Max: 1}, nil, "At least one Availability Zone or VPC Subnet is required."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.LaunchTemplateID = f.ltID
			err := f.s.CreateGroup(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, _ := f.s.Group(tc.spec.Name)
			if !slices.Equal(g.Zones, tc.wantZones) || !slices.Equal(g.Subnets, tc.spec.Subnets) || !maps.Equal(g.Tags, tc.spec.Tags) {
				t.Fatalf("group %+v", g.GroupSpec)
			}
			ag := describeGroup(t, f, tc.spec.Name)
			if aws.ToString(ag.VPCZoneIdentifier) != strings.Join(tc.spec.Subnets, ",") || len(ag.Tags) != len(tc.spec.Tags) ||
				(len(ag.Tags) > 0 && !*ag.Tags[0].PropagateAtLaunch) {
				t.Fatalf("described %+v", ag)
			}
		})
	}
}

func TestDeleteAutoScalingGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rec := &recorder{}
	// Terminations take a while, so the delete in progress can be seen.
	s, err := Start(ctx, Options{LaunchDelay: 20 * time.Millisecond, TerminateDelay: 300 * time.Millisecond, OnLaunch: rec.launch, OnTerminate: rec.terminate, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lt := s.CreateLaunchTemplate("ng", "ami-old", "")
	for _, g := range []GroupSpec{
		{Name: "blue", Min: 1, Max: 3, Desired: 3, Zones: zones, LaunchTemplateID: lt},
		{Name: "empty", Zones: zones, LaunchTemplateID: lt},
	} {
		if err := s.CreateGroup(g); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitStable(ctx, g.Name); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{s: s, rec: rec, asg: autoscaling.NewFromConfig(sdkConfig(s)), ctx: ctx}

	for _, tc := range []struct {
		name      string
		group     string
		force     bool
		errCode   string
		errSubstr string
	}{
		{"unknown group", "nope", true, "ValidationError", "AutoScalingGroup name not found - AutoScalingGroup 'nope' not found"},
		{"instances without force", "blue", false, "ResourceInUse", "You cannot delete an AutoScalingGroup while there are instances or pending Spot instance request(s) still in the group."},
		{"empty without force", "empty", false, "", ""},
		{"instances with force", "blue", true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := s.Group(tc.group)
			_, err := f.asg.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(tc.group), ForceDelete: aws.Bool(tc.force)})
			if tc.errCode != "" {
				wantAPIError(t, err, tc.errCode, tc.errSubstr)
				if after, ok := s.Group(tc.group); ok && (after.Status != "" || len(after.Instances) != len(before.Instances)) {
					t.Fatalf("group changed by a refused delete: %+v", after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(before.Instances) > 0 {
				// Described as deleting, sizes zeroed, until the instances
				// are gone; it can no longer be changed.
				ag := describeGroup(t, f, tc.group)
				if ag == nil || aws.ToString(ag.Status) != StatusDeleting || *ag.MinSize != 0 || *ag.MaxSize != 0 || *ag.DesiredCapacity != 0 {
					t.Fatalf("while deleting: %+v", ag)
				}
				for _, in := range ag.Instances {
					if in.LifecycleState != astypes.LifecycleStateTerminating {
						t.Errorf("instance %s %s", *in.InstanceId, in.LifecycleState)
					}
				}
				_, err := f.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(tc.group), MaxSize: aws.Int32(5)})
				wantAPIError(t, err, "ValidationError", "The AutoScaling group may not be modified while it is pending delete")
				_, err = f.asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String(tc.group),
					LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(lt)}, MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones})
				wantAPIError(t, err, "AlreadyExists", "A group with the name "+tc.group+" already exists")
				if _, err := f.asg.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(tc.group), ForceDelete: aws.Bool(true)}); err != nil {
					t.Fatalf("repeated delete: %v", err)
				}
			}
			if err := s.WaitDeleted(ctx, tc.group); err != nil {
				t.Fatal(err)
			}
			if ag := describeGroup(t, f, tc.group); ag != nil {
				t.Fatalf("still described: %+v", ag)
			}
			for _, in := range before.Instances {
				if got, _ := s.Instance(in.ID); got.State != StateTerminated {
					t.Errorf("instance %s %s", in.ID, got.State)
				}
			}
		})
	}
	if l, term := rec.counts(); l != 3 || term != 3 {
		t.Fatalf("callbacks: %d launched, %d terminated", l, term)
	}
	if got := s.Groups(); len(got) != 0 {
		t.Fatalf("groups left: %v", got)
	}
	if tags := s.GroupTags("blue"); tags != nil {
		t.Fatalf("tags of a deleted group: %v", tags)
	}
}

func TestAccountLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{LaunchDelay: -1, MaxGroups: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lt := s.CreateLaunchTemplate("ng", "ami-old", "")
	asg := autoscaling.NewFromConfig(sdkConfig(s))
	limits := func(t *testing.T, want int32) {
		t.Helper()
		out, err := asg.DescribeAccountLimits(ctx, &autoscaling.DescribeAccountLimitsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if *out.MaxNumberOfAutoScalingGroups != 2 || *out.NumberOfAutoScalingGroups != want ||
			*out.MaxNumberOfLaunchConfigurations != 200 || *out.NumberOfLaunchConfigurations != 0 {
			t.Fatalf("limits %d/%d groups, %d/%d launch configurations", *out.NumberOfAutoScalingGroups, *out.MaxNumberOfAutoScalingGroups,
				*out.NumberOfLaunchConfigurations, *out.MaxNumberOfLaunchConfigurations)
		}
	}
	limits(t, 0)
	for i, tc := range []struct {
		name    string
		errCode string
	}{
		{"g1", ""}, {"g2", ""}, {"g3", "LimitExceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String(tc.name),
				LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(lt)}, MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones})
			if tc.errCode != "" {
				wantAPIError(t, err, tc.errCode, "limit of 2 Auto Scaling groups")
				limits(t, 2)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			limits(t, int32(i+1))
		})
	}
	if err := s.CreateGroup(GroupSpec{Name: "g4", Max: 1, Zones: zones, LaunchTemplateID: lt}); err == nil || !strings.Contains(err.Error(), "LimitExceeded") {
		t.Fatalf("CreateGroup past the limit: %v", err)
	}
	if err := s.DeleteGroup("g1", false); err != nil {
		t.Fatal(err)
	}
	limits(t, 1)
}

func TestCreateOrUpdateTags(t *testing.T) {
	f := start(t, 1)
	tag := func(id, typ, k, v string, propagate bool) astypes.Tag {
		return astypes.Tag{ResourceId: aws.String(id), ResourceType: aws.String(typ), Key: aws.String(k), Value: aws.String(v), PropagateAtLaunch: aws.Bool(propagate)}
	}
	for _, tc := range []struct {
		name      string
		tags      []astypes.Tag
		errCode   string
		errSubstr string
		want      []tagView
	}{
		{
			name: "add two",
			tags: []astypes.Tag{tag("ng1", "auto-scaling-group", "b", "1", true), tag("ng1", "auto-scaling-group", "a", "2", false)},
			want: []tagView{{"ng1", "auto-scaling-group", "a", "2", false}, {"ng1", "auto-scaling-group", "b", "1", true}},
		},
		{
			name: "update value and propagation",
			tags: []astypes.Tag{tag("ng1", "auto-scaling-group", "a", "3", true)},
			want: []tagView{{"ng1", "auto-scaling-group", "a", "3", true}, {"ng1", "auto-scaling-group", "b", "1", true}},
		},
		{
			name:    "unknown group changes nothing",
			tags:    []astypes.Tag{tag("ng1", "auto-scaling-group", "c", "1", true), tag("nope", "auto-scaling-group", "a", "1", true)},
			errCode: "ValidationError", errSubstr: "AutoScalingGroup name not found - AutoScalingGroup 'nope' not found",
			want: []tagView{{"ng1", "auto-scaling-group", "a", "3", true}, {"ng1", "auto-scaling-group", "b", "1", true}},
		},
		{
			name:    "wrong resource type",
			tags:    []astypes.Tag{tag("ng1", "instance", "a", "1", true)},
			errCode: "ValidationError", errSubstr: "auto-scaling-group",
			want: []tagView{{"ng1", "auto-scaling-group", "a", "3", true}, {"ng1", "auto-scaling-group", "b", "1", true}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.asg.CreateOrUpdateTags(f.ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: tc.tags})
			if tc.errCode != "" {
				wantAPIError(t, err, tc.errCode, tc.errSubstr)
			} else if err != nil {
				t.Fatal(err)
			}
			if got := tagViews(describeGroup(t, f, "ng1")); !slices.Equal(got, tc.want) {
				t.Fatalf("tags %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := f.s.GroupTags("ng1"); !maps.Equal(got, map[string]string{"a": "3", "b": "1"}) {
		t.Fatalf("GroupTags %v", got)
	}
}

func TestNodeLabelValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts NodeOptions
		in   Instance
		want string
	}{
		{"launch template name", NodeOptions{}, Instance{Group: "green", LaunchTemplateName: "blue"}, "blue"},
		{"override by group", NodeOptions{GroupLabelValues: map[string]string{"green": "ng"}}, Instance{Group: "green", LaunchTemplateName: "blue"}, "ng"},
		{"override of another group", NodeOptions{GroupLabelValues: map[string]string{"other": "ng"}}, Instance{Group: "green", LaunchTemplateName: "blue"}, "blue"},
		{"no template name", NodeOptions{}, Instance{Group: "green"}, "green"},
		{"own key", NodeOptions{GroupLabelKey: "nodegroup"}, Instance{Group: "green", LaunchTemplateName: "blue"}, "blue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.opts.GroupLabelKey
			if key == "" {
				key = NodeGroupLabel
			}
			if got := tc.opts.NodeLabels(tc.in)[key]; got != tc.want {
				t.Fatalf("%s=%q, want %q", key, got, tc.want)
			}
		})
	}
}
