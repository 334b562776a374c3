package awsfake

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// Through the real SDK: a group attached to a target group and a Classic
// Load Balancer registers its instances, new ones included; a deregistered
// one drains for the delay, then is out; a termination records what still
// held the instance.
func TestLoadBalancersThroughTheSDK(t *testing.T) {
	f := start(t, 2)
	const delay = 400 * time.Millisecond
	arn := f.s.CreateTargetGroup("web", 8080, delay)
	f.s.CreateClassicLoadBalancer("web-clb", delay)
	if _, err := f.asg.AttachLoadBalancerTargetGroups(f.ctx, &autoscaling.AttachLoadBalancerTargetGroupsInput{AutoScalingGroupName: aws.String("ng1"), TargetGroupARNs: []string{arn}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.asg.AttachLoadBalancers(f.ctx, &autoscaling.AttachLoadBalancersInput{AutoScalingGroupName: aws.String("ng1"), LoadBalancerNames: []string{"web-clb"}}); err != nil {
		t.Fatal(err)
	}
	ag := describeGroup(t, f, "ng1")
	if !slices.Equal(ag.TargetGroupARNs, []string{arn}) || !slices.Equal(ag.LoadBalancerNames, []string{"web-clb"}) {
		t.Fatalf("group lists target groups %v and load balancers %v", ag.TargetGroupARNs, ag.LoadBalancerNames)
	}
	if _, err := f.asg.AttachLoadBalancerTargetGroups(f.ctx, &autoscaling.AttachLoadBalancerTargetGroupsInput{AutoScalingGroupName: aws.String("ng1"), TargetGroupARNs: []string{arn + "-missing"}}); err == nil {
		t.Error("attaching a target group that does not exist succeeded")
	}
	v2 := elasticloadbalancingv2.NewFromConfig(sdkConfig(f.s))
	clb := elasticloadbalancing.NewFromConfig(sdkConfig(f.s))
	i1, i2 := ag.Instances[0].InstanceId, ag.Instances[1].InstanceId

	targets := func(ids ...string) map[string]elbv2types.TargetHealthStateEnum {
		t.Helper()
		in := &elasticloadbalancingv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn)}
		for _, id := range ids {
			in.Targets = append(in.Targets, elbv2types.TargetDescription{Id: aws.String(id)})
		}
		out, err := v2.DescribeTargetHealth(f.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]elbv2types.TargetHealthStateEnum{}
		for _, d := range out.TargetHealthDescriptions {
			if aws.ToInt32(d.Target.Port) != 8080 {
				t.Errorf("target %s on port %d, want 8080", aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port))
			}
			m[aws.ToString(d.Target.Id)] = d.TargetHealth.State
		}
		return m
	}
	classic := func() map[string]string {
		t.Helper()
		out, err := clb.DescribeInstanceHealth(f.ctx, &elasticloadbalancing.DescribeInstanceHealthInput{LoadBalancerName: aws.String("web-clb")})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, s := range out.InstanceStates {
			m[aws.ToString(s.InstanceId)] = aws.ToString(s.State) + "/" + aws.ToString(s.Description)
		}
		return m
	}
	if got := targets(); len(got) != 2 || got[*i1] != "healthy" || got[*i2] != "healthy" {
		t.Fatalf("target health %v: want both instances healthy", got)
	}
	attrs, err := v2.DescribeTargetGroupAttributes(f.ctx, &elasticloadbalancingv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(arn)})
	if err != nil || !slices.ContainsFunc(attrs.Attributes, func(a elbv2types.TargetGroupAttribute) bool {
		return aws.ToString(a.Key) == "deregistration_delay.timeout_seconds" && aws.ToString(a.Value) == "0"
	}) {
		t.Errorf("attributes %+v, %v: want the delay in whole seconds (0)", attrs, err)
	}
	la, err := clb.DescribeLoadBalancerAttributes(f.ctx, &elasticloadbalancing.DescribeLoadBalancerAttributesInput{LoadBalancerName: aws.String("web-clb")})
	if err != nil || !la.LoadBalancerAttributes.ConnectionDraining.Enabled {
		t.Errorf("classic attributes %+v, %v: want connection draining on", la, err)
	}

	// i-1 deregistered from both: draining, then out.
	if _, err := v2.DeregisterTargets(f.ctx, &elasticloadbalancingv2.DeregisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: []elbv2types.TargetDescription{{Id: i1, Port: aws.Int32(8080)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := clb.DeregisterInstancesFromLoadBalancer(f.ctx, &elasticloadbalancing.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: aws.String("web-clb"), Instances: []elbtypes.Instance{{InstanceId: i1}}}); err != nil {
		t.Fatal(err)
	}
	if got := targets(); got[*i1] != "draining" || got[*i2] != "healthy" {
		t.Errorf("after deregistering %s: %v", *i1, got)
	}
	if got := classic(); got[*i1] != "InService/Instance deregistration currently in progress." || got[*i2] != "InService/N/A" {
		t.Errorf("classic after deregistering %s: %v", *i1, got)
	}
	// i-2 terminated while both still hold it: recorded so.
	if _, err := f.asg.TerminateInstanceInAutoScalingGroup(f.ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: i2, ShouldDecrementDesiredCapacity: aws.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	if got := targets(); got[*i1] != "" {
		t.Errorf("after the delay %s is still listed: %v", *i1, got)
	}
	if got := targets(*i1); got[*i1] != "unused" {
		t.Errorf("after the delay, %s asked for: %v, want unused", *i1, got)
	}
	if got := classic(); got[*i1] != "" {
		t.Errorf("classic after the delay lists %s: %v", *i1, got)
	}
	if _, err := f.asg.TerminateInstanceInAutoScalingGroup(f.ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: i1, ShouldDecrementDesiredCapacity: aws.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	ts := f.s.Terminations()
	if len(ts) != 2 || ts[0].Instance != *i2 || !slices.Equal(ts[0].Held, []string{"target group web", "classic load balancer web-clb"}) || ts[1].Instance != *i1 || len(ts[1].Held) != 0 {
		t.Errorf("terminations %+v: want %s held by both, then %s by none", ts, *i2, *i1)
	}
	// The replacements come into service registered, as Auto Scaling
	// registers them.
	if err := f.s.WaitStable(f.ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	g, _ := f.s.Group("ng1")
	got := targets()
	for _, in := range g.Instances {
		if in.Lifecycle == LifecycleInService && got[in.ID] != "healthy" {
			t.Errorf("new instance %s is %q in the target group: %v", in.ID, got[in.ID], got)
		}
	}
}

// CreateAutoScalingGroup attaches the load balancers it names, as the
// blue/green strategy's green group needs; one that does not exist fails
// the call before the group is made.
func TestCreateGroupAttachesLoadBalancers(t *testing.T) {
	f := start(t, 1)
	arn := f.s.CreateTargetGroup("web", 8080, time.Second)
	f.s.CreateClassicLoadBalancer("web-clb", time.Second)
	create := func(name string, arns, names []string) error {
		_, err := f.asg.CreateAutoScalingGroup(f.ctx, &autoscaling.CreateAutoScalingGroupInput{
			AutoScalingGroupName: aws.String(name),
			LaunchTemplate:       &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(f.ltID), Version: aws.String("1")},
			MinSize:              aws.Int32(0), MaxSize: aws.Int32(2), DesiredCapacity: aws.Int32(1),
			AvailabilityZones: []string{"us-east-1a"},
			TargetGroupARNs:   arns, LoadBalancerNames: names,
		})
		return err
	}
	for _, tc := range []struct {
		name        string
		arns, names []string
		wantErr     bool
	}{
		{name: "green", arns: []string{arn}, names: []string{"web-clb"}},
		{name: "missing-tg", arns: []string{arn + "-missing"}, wantErr: true},
		{name: "missing-clb", names: []string{"gone-clb"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := create(tc.name, tc.arns, tc.names)
			if tc.wantErr {
				if err == nil {
					t.Fatal("created with a load balancer that does not exist")
				}
				if _, ok := f.s.Group(tc.name); ok {
					t.Fatal("the failed call left the group behind")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ag := describeGroup(t, f, tc.name)
			if !slices.Equal(ag.TargetGroupARNs, tc.arns) || !slices.Equal(ag.LoadBalancerNames, tc.names) {
				t.Fatalf("group lists target groups %v and load balancers %v, want %v and %v", ag.TargetGroupARNs, ag.LoadBalancerNames, tc.arns, tc.names)
			}
		})
	}
}
