package motobridge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
)

func errStr(err error) string {
	if err == nil {
		return "ok"
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return "ERR " + ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return "ERR " + err.Error()
}

func groupStr(g astypes.AutoScalingGroup) string {
	var ins []string
	for _, in := range g.Instances {
		v := ""
		if in.LaunchTemplate != nil {
			v = aws.ToString(in.LaunchTemplate.Version)
		}
		ins = append(ins, fmt.Sprintf("%s/%s/%s/%s/prot=%v/type=%s", aws.ToString(in.AvailabilityZone), in.LifecycleState, aws.ToString(in.HealthStatus), v, aws.ToBool(in.ProtectedFromScaleIn), aws.ToString(in.InstanceType)))
	}
	sort.Strings(ins)
	lt := "<nil>"
	if g.LaunchTemplate != nil {
		lt = fmt.Sprintf("{id=%v name=%v version=%q}", g.LaunchTemplate.LaunchTemplateId != nil, aws.ToString(g.LaunchTemplate.LaunchTemplateName), aws.ToString(g.LaunchTemplate.Version))
	}
	var tags []string
	for _, t := range g.Tags {
		tags = append(tags, fmt.Sprintf("%s=%s(%v,%s)", aws.ToString(t.Key), aws.ToString(t.Value), aws.ToBool(t.PropagateAtLaunch), aws.ToString(t.ResourceType)))
	}
	return fmt.Sprintf("min=%d desired=%d max=%d lt=%s azs=%v vpc=%q hc=%s grace=%d cooldown=%d term=%v status=%q rebalance=%v protect=%v tags=%v suspended=%d\n    instances=%v",
		aws.ToInt32(g.MinSize), aws.ToInt32(g.DesiredCapacity), aws.ToInt32(g.MaxSize), lt, g.AvailabilityZones, aws.ToString(g.VPCZoneIdentifier),
		aws.ToString(g.HealthCheckType), aws.ToInt32(g.HealthCheckGracePeriod), aws.ToInt32(g.DefaultCooldown), g.TerminationPolicies, aws.ToString(g.Status),
		aws.ToBool(g.CapacityRebalance), aws.ToBool(g.NewInstancesProtectedFromScaleIn), tags, len(g.SuspendedProcesses), ins)
}

func probe(t *testing.T, cfg aws.Config, ltID, oldImage, newImage string) []string {
	ctx := context.Background()
	as, e := autoscaling.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	var out []string
	say := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	norm := func(s string) string {
		for _, x := range []string{ltID, oldImage, newImage} {
			s = strings.ReplaceAll(s, x, "<"+map[string]string{ltID: "lt", oldImage: "old", newImage: "new"}[x]+">")
		}
		return s
	}
	desc := func(name string) (astypes.AutoScalingGroup, string) {
		o, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
		if err != nil || len(o.AutoScalingGroups) == 0 {
			return astypes.AutoScalingGroup{}, fmt.Sprintf("%s, %d groups", errStr(err), len(o.AutoScalingGroups))
		}
		return o.AutoScalingGroups[0], groupStr(o.AutoScalingGroups[0])
	}
	settle := func() { time.Sleep(1500 * time.Millisecond) }
	g, s := desc("probe")
	say("1 DescribeAutoScalingGroups: %s", s)
	_, s = desc("nope")
	say("2 DescribeAutoScalingGroups unknown: %s", s)
	first := aws.ToString(g.Instances[0].InstanceId)
	dai, err := as.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: []string{first, "i-0000000000000dead"}})
	s = errStr(err)
	if err == nil {
		for _, in := range dai.AutoScalingInstances {
			v := ""
			if in.LaunchTemplate != nil {
				v = aws.ToString(in.LaunchTemplate.Version)
			}
			s += fmt.Sprintf(" [%s %s %s %s v=%s]", aws.ToString(in.AutoScalingGroupName), aws.ToString(in.AvailabilityZone), aws.ToString(in.LifecycleState), aws.ToString(in.HealthStatus), v)
		}
	}
	say("3 DescribeAutoScalingInstances known+unknown: %s", s)
	for _, v := range [][]string{{"$Default"}, {"$Latest"}, {"1"}, {"7"}, nil} {
		o, err := e.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(ltID), Versions: v})
		s = errStr(err)
		if err == nil {
			for _, x := range o.LaunchTemplateVersions {
				s += fmt.Sprintf(" [v%d default=%v image=%s type=%s]", aws.ToInt64(x.VersionNumber), aws.ToBool(x.DefaultVersion), aws.ToString(x.LaunchTemplateData.ImageId), x.LaunchTemplateData.InstanceType)
			}
		}
		say("4 DescribeLaunchTemplateVersions %v: %s", v, s)
	}
	_, err = e.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String("lt-0123456789abcdef0"), Versions: []string{"$Default"}})
	say("5 DescribeLaunchTemplateVersions unknown template: %s", errStr(err))
	_, err = e.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("nope-template"), Versions: []string{"$Default"}})
	say("5b DescribeLaunchTemplateVersions unknown template name: %s", errStr(err))
	di, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: []string{first, "i-0000000000000dead"}}}})
	s = errStr(err)
	if err == nil {
		for _, r := range di.Reservations {
			for _, in := range r.Instances {
				var keys []string
				for _, t := range in.Tags {
					keys = append(keys, aws.ToString(t.Key)+"="+aws.ToString(t.Value))
				}
				sort.Strings(keys)
				s += fmt.Sprintf(" [%s %s dns=%v ip=%v type=%s az=%s tags=%v]", in.State.Name, aws.ToString(in.ImageId), strings.Contains(aws.ToString(in.PrivateDnsName), "ip-"), in.PrivateIpAddress != nil, in.InstanceType, aws.ToString(in.Placement.AvailabilityZone), keys)
			}
		}
	}
	say("6 DescribeInstances filter instance-id known+unknown: %s", s)
	_, err = e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0000000000000dead"}})
	say("6b DescribeInstances by unknown id: %s", errStr(err))
	im, err := e.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{newImage}})
	s = errStr(err)
	if err == nil {
		s += fmt.Sprintf(" %d images", len(im.Images))
	}
	say("7 DescribeImages new: %s", s)
	_, err = e.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0doesnotexist"}})
	say("7b DescribeImages unknown: %s", errStr(err))
	cv, err := e.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(ltID), SourceVersion: aws.String("9"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(newImage)}})
	say("8 CreateLaunchTemplateVersion from missing source 9: %s", errStr(err))
	cv, err = e.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(ltID), SourceVersion: aws.String("1"),
		VersionDescription: aws.String("probe"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(newImage)}})
	s = errStr(err)
	if err == nil {
		v := cv.LaunchTemplateVersion
		s += fmt.Sprintf(" v%d default=%v desc=%q image=%s type=%s", aws.ToInt64(v.VersionNumber), aws.ToBool(v.DefaultVersion), aws.ToString(v.VersionDescription), aws.ToString(v.LaunchTemplateData.ImageId), v.LaunchTemplateData.InstanceType)
	}
	say("9 CreateLaunchTemplateVersion from 1: %s", s)
	_, err = e.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(ltID), SourceVersion: aws.String("1"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0doesnotexist")}})
	say("9b CreateLaunchTemplateVersion unknown image: %s", errStr(err))
	_, err = e.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(ltID), SourceVersion: aws.String("1"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ubuntu")}})
	say("9c CreateLaunchTemplateVersion malformed image: %s", errStr(err))
	_, err = as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe"), LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(ltID), Version: aws.String("2")}})
	settle()
	_, s = desc("probe")
	say("10 UpdateAutoScalingGroup version 2: %s: %s", errStr(err), s)
	_, err = as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe"), DesiredCapacity: aws.Int32(9), MaxSize: aws.Int32(4)})
	say("11 UpdateAutoScalingGroup desired 9 > max 4: %s", errStr(err))
	_, err = as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe"), DesiredCapacity: aws.Int32(0)})
	say("11b UpdateAutoScalingGroup desired 0 < min 1: %s", errStr(err))
	_, err = as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("nope"), DesiredCapacity: aws.Int32(1)})
	say("11c UpdateAutoScalingGroup unknown group: %s", errStr(err))
	_, err = as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe"), DesiredCapacity: aws.Int32(6), MaxSize: aws.Int32(7)})
	settle()
	_, s = desc("probe")
	say("12 UpdateAutoScalingGroup desired 6 max 7: %s: %s", errStr(err), s)
	_, err = as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe"), MaxSize: aws.Int32(5)})
	settle()
	_, s = desc("probe")
	say("13 UpdateAutoScalingGroup max 5 alone (desired was 6): %s: %s", errStr(err), s)
	g, _ = desc("probe")
	victim := aws.ToString(g.Instances[0].InstanceId)
	ta, err := as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(true)})
	s = errStr(err)
	if err == nil && ta.Activity != nil {
		s += fmt.Sprintf(" activity status=%s group=%s", ta.Activity.StatusCode, aws.ToString(ta.Activity.AutoScalingGroupName))
	}
	_, gs := desc("probe")
	say("14 Terminate with decrement: %s; right after: %s", s, gs)
	settle()
	_, gs = desc("probe")
	say("14b after settling: %s", gs)
	di, err = e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: []string{victim}}}})
	s = errStr(err)
	if err == nil {
		for _, r := range di.Reservations {
			for _, in := range r.Instances {
				var keys []string
				for _, t := range in.Tags {
					keys = append(keys, aws.ToString(t.Key))
				}
				sort.Strings(keys)
				s += fmt.Sprintf(" [%s tags=%v]", in.State.Name, keys)
			}
		}
	}
	say("15 DescribeInstances of the terminated one: %s", s)
	_, err = as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	say("16 Terminate it again: %s", errStr(err))
	g, _ = desc("probe")
	victim = aws.ToString(g.Instances[0].InstanceId)
	_, err = as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	settle()
	_, s = desc("probe")
	say("17 Terminate without decrement: %s: %s", errStr(err), s)
	_, err = as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe"), MinSize: aws.Int32(5)})
	g, _ = desc("probe")
	_, err2 := as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: g.Instances[0].InstanceId, ShouldDecrementDesiredCapacity: aws.Bool(true)})
	say("18 min 5 (%s), terminate with decrement at desired %d: %s", errStr(err), aws.ToInt32(g.DesiredCapacity), errStr(err2))
	al, err := as.DescribeAccountLimits(ctx, &autoscaling.DescribeAccountLimitsInput{})
	s = errStr(err)
	if err == nil {
		s += fmt.Sprintf(" max=%d n=%d", aws.ToInt32(al.MaxNumberOfAutoScalingGroups), aws.ToInt32(al.NumberOfAutoScalingGroups))
	}
	say("19 DescribeAccountLimits: %s", s)
	_, err = as.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe-green"), MinSize: aws.Int32(0), MaxSize: aws.Int32(2), DesiredCapacity: aws.Int32(2),
		AvailabilityZones: []string{"us-east-1a", "us-east-1b"}, LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(ltID), Version: aws.String("2")},
		Tags: []astypes.Tag{{Key: aws.String("team"), Value: aws.String("x"), PropagateAtLaunch: aws.Bool(true)}}})
	settle()
	_, s = desc("probe-green")
	say("20 CreateAutoScalingGroup: %s: %s", errStr(err), s)
	_, err = as.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe-green"), MinSize: aws.Int32(0), MaxSize: aws.Int32(2),
		AvailabilityZones: []string{"us-east-1a"}, LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(ltID)}})
	say("20b CreateAutoScalingGroup again: %s", errStr(err))
	_, err = as.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe-green")})
	say("21 DeleteAutoScalingGroup with instances, no force: %s", errStr(err))
	_, err = as.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String("probe-green"), ForceDelete: aws.Bool(true)})
	_, s = desc("probe-green")
	say("22 DeleteAutoScalingGroup force: %s; right after: %s", errStr(err), s)
	settle()
	_, s = desc("probe-green")
	say("22b after settling: %s", s)
	_, err = as.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String("nope")})
	say("23 DeleteAutoScalingGroup unknown: %s", errStr(err))
	for i := range out {
		out[i] = norm(out[i])
	}
	return out
}

func TestProbe(t *testing.T) {
	cfgOf := func(url string) aws.Config {
		return aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), BaseEndpoint: aws.String(url)}
	}
	srv, err := awsfake.Start(context.Background(), awsfake.Options{LaunchDelay: 200 * time.Millisecond, TerminateDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.RegisterImage("ami-0old", "v1")
	srv.RegisterImage("ami-0new", "v2")
	lt := srv.CreateLaunchTemplate("probe", "ami-0old", "m5.large")
	if err := srv.CreateGroup(awsfake.GroupSpec{Name: "probe", Min: 1, Max: 4, Desired: 3, Zones: zones, LaunchTemplateID: lt}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.WaitStable(ctx, "probe"); err != nil {
		t.Fatal(err)
	}
	fake := probe(t, cfgOf(srv.URL), lt, "ami-0old", "ami-0new")

	ms, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	g, err := CreateNodeGroup(ctx, ms.Config(region), NodeGroupSpec{Name: "probe", Zones: zones, Min: 1, Desired: 3, Max: 4})
	if err != nil {
		t.Fatal(err)
	}
	moto := probe(t, ms.Config(region), g.LaunchTemplateID, g.OldImage, g.NewImage)
	for i := range fake {
		mark := "  same"
		if fake[i] != moto[i] {
			mark = "  DIFF"
		}
		t.Logf("%s\n  awsfake: %s\n  moto:    %s", mark, fake[i], moto[i])
	}
	t.Logf("moto stderr: %s", ms.Stderr())
}
