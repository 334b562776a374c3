package motobridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

const region = "us-east-1"

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

func start(t *testing.T, o Options) aws.Config {
	t.Helper()
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if strings.Contains(s.Stderr(), "Traceback") {
			t.Logf("moto stderr:\n%s", s.Stderr())
		}
	})
	return s.Config(region)
}

// endpoint is what the behaviour checks share on one server.
type endpoint struct {
	cfg   aws.Config
	asg   *autoscaling.Client
	ec2   *ec2.Client
	group NodeGroup
}

func (e *endpoint) describe(ctx context.Context) (astypes.AutoScalingGroup, error) {
	out, err := e.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{e.group.Name}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		return astypes.AutoScalingGroup{}, fmt.Errorf("describe group: %v (%d found)", err, len(out.AutoScalingGroups))
	}
	return out.AutoScalingGroups[0], nil
}

// behaviour is one documented behaviour of AWS that moto 5.2.1 deviates
// from; conforms says whether the server behaves as documented and what
// it saw. They run in order on one group.
type behaviour struct {
	name     string
	conforms func(ctx context.Context, e *endpoint) (bool, string, error)
}

var behaviours = []behaviour{
	{
		// "Auto Scaling maintains an equal number of instances across
		// enabled Availability Zones."
		name: "a: instances spread over the group's zones",
		conforms: func(ctx context.Context, e *endpoint) (bool, string, error) {
			g, err := e.describe(ctx)
			if err != nil {
				return false, "", err
			}
			perZone := map[string]int{}
			for _, in := range g.Instances {
				perZone[aws.ToString(in.AvailabilityZone)]++
			}
			counts := []int{}
			for _, z := range zones {
				counts = append(counts, perZone[z])
			}
			return slices.Max(counts)-slices.Min(counts) <= 1, fmt.Sprintf("instances per zone %v", perZone), nil
		},
	},
	{
		// "If you specify this parameter, the new version inherits the
		// launch parameters from the source version."
		name: "c: a new version inherits its source version's parameters",
		conforms: func(ctx context.Context, e *endpoint) (bool, string, error) {
			out, err := e.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
				LaunchTemplateId: aws.String(e.group.LaunchTemplateID),
				SourceVersion:    aws.String("1"),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
					ImageId: aws.String(e.group.NewImage),
				},
			})
			if err != nil {
				return false, "", err
			}
			data := out.LaunchTemplateVersion.LaunchTemplateData
			got := fmt.Sprintf("version %d: image %s, instance type %q", aws.ToInt64(out.LaunchTemplateVersion.VersionNumber), aws.ToString(data.ImageId), data.InstanceType)
			return aws.ToString(data.ImageId) == e.group.NewImage && data.InstanceType == "m5.large", got, nil
		},
	},
	{
		// A group launches the version it names, and reports each
		// instance's launch template.
		name: "b: instances launch the version the group is pinned to",
		conforms: func(ctx context.Context, e *endpoint) (bool, string, error) {
			before, err := e.describe(ctx)
			if err != nil {
				return false, "", err
			}
			_, err = e.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
				AutoScalingGroupName: aws.String(e.group.Name),
				LaunchTemplate:       &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(e.group.LaunchTemplateID), Version: aws.String("2")},
				DesiredCapacity:      aws.Int32(aws.ToInt32(before.DesiredCapacity) + 1),
			})
			if err != nil {
				return false, "", err
			}
			after, err := e.describe(ctx)
			if err != nil {
				return false, "", err
			}
			var added []astypes.Instance
			for _, in := range after.Instances {
				if !slices.ContainsFunc(before.Instances, func(o astypes.Instance) bool { return aws.ToString(o.InstanceId) == aws.ToString(in.InstanceId) }) {
					added = append(added, in)
				}
			}
			if len(added) != 1 {
				return false, "", fmt.Errorf("%d instances launched, want 1", len(added))
			}
			id := aws.ToString(added[0].InstanceId)
			out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
			if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
				return false, "", fmt.Errorf("describe instance %s: %v", id, err)
			}
			ei := out.Reservations[0].Instances[0]
			tag := ""
			for _, t := range ei.Tags {
				if aws.ToString(t.Key) == templateVersionTag {
					tag = aws.ToString(t.Value)
				}
			}
			reported := aws.ToString(added[0].LaunchTemplate.Version)
			got := fmt.Sprintf("new instance: EC2 tag version %q, Auto Scaling reports version %q, image %s", tag, reported, aws.ToString(ei.ImageId))
			return tag == "2" && reported == "2" && aws.ToString(ei.ImageId) == e.group.NewImage, got, nil
		},
	},
	{
		// Auto Scaling answers a client error for an instance it does not
		// manage: ValidationError "Instance Id not found".
		name: "d: terminating an instance already gone is a ValidationError",
		conforms: func(ctx context.Context, e *endpoint) (bool, string, error) {
			g, err := e.describe(ctx)
			if err != nil {
				return false, "", err
			}
			in := &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: g.Instances[0].InstanceId, ShouldDecrementDesiredCapacity: aws.Bool(true)}
			if _, err := e.asg.TerminateInstanceInAutoScalingGroup(ctx, in); err != nil {
				return false, "", err
			}
			// Once: the SDK would retry a 500 three times.
			_, err = e.asg.TerminateInstanceInAutoScalingGroup(ctx, in, func(o *autoscaling.Options) { o.RetryMaxAttempts = 1 })
			var ae smithy.APIError
			if !errors.As(err, &ae) {
				return false, fmt.Sprintf("second termination: %v", err), nil
			}
			got := fmt.Sprintf("second termination: %s: %s", ae.ErrorCode(), ae.ErrorMessage())
			return ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "not found"), got, nil
		},
	},
	{
		// Every IAM action answers in IAM's own shape (API Reference,
		// SimulatePrincipalPolicy: its errors are client errors or
		// PolicyEvaluation); moto 5.2.1 fails it with HTTP 500 as not
		// implemented. Corrected, it is refused as for a caller whose
		// policies do not allow it.
		name: "f: iam:SimulatePrincipalPolicy answers in IAM's shape",
		conforms: func(ctx context.Context, e *endpoint) (bool, string, error) {
			_, err := iam.NewFromConfig(e.cfg).SimulatePrincipalPolicy(ctx, &iam.SimulatePrincipalPolicyInput{
				PolicySourceArn: aws.String("arn:aws:iam::123456789012:role/nodeupgrade"), ActionNames: []string{"autoscaling:UpdateAutoScalingGroup"},
			}, func(o *iam.Options) { o.RetryMaxAttempts = 1 })
			var re interface{ HTTPStatusCode() int }
			if !errors.As(err, &re) {
				return false, fmt.Sprintf("simulation: %v", err), nil
			}
			var ae smithy.APIError
			code := ""
			if errors.As(err, &ae) {
				code = ae.ErrorCode()
			}
			return re.HTTPStatusCode() < 500, fmt.Sprintf("simulation: HTTP %d %s", re.HTTPStatusCode(), code), nil
		},
	},
}

// TestCorrections shows each deviation of moto 5.2.1 as installed and that
// the launcher corrects it.
func TestCorrections(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		conforms bool
	}{
		{name: "as installed", opts: Options{AsInstalled: true}, conforms: false},
		{name: "corrected", opts: Options{}, conforms: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := start(t, tc.opts)
			group, err := CreateNodeGroup(ctx, cfg, NodeGroupSpec{Name: "conformance", Zones: zones, Min: 1, Desired: 6, Max: 8, VersionSpec: "1"})
			if err != nil {
				t.Fatal(err)
			}
			e := &endpoint{cfg: cfg, asg: autoscaling.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), group: group}
			for _, b := range behaviours {
				ok, got, err := b.conforms(ctx, e)
				if err != nil {
					t.Fatalf("%s: %v", b.name, err)
				}
				t.Logf("%s: %s", b.name, got)
				if ok != tc.conforms {
					t.Errorf("%s: conforms to AWS's documentation = %v, want %v (%s)", b.name, ok, tc.conforms, got)
				}
			}
		})
	}
}

func TestMirrorMakesANodePerRunningInstance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := start(t, Options{})
	group, err := CreateNodeGroup(ctx, cfg, NodeGroupSpec{Name: "mirrored", Zones: zones, Min: 1, Desired: 3, Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientset()
	b := Mirror(cfg, c, MirrorOptions{Interval: 50 * time.Millisecond})
	e := &endpoint{cfg: cfg, asg: autoscaling.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), group: group}
	g, err := e.describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// nodes waits until the nodes are those of the wanted instances.
	nodes := func(want []astypes.Instance) {
		t.Helper()
		wantIDs := map[string]string{}
		for _, in := range want {
			wantIDs[awsfake.ProviderID(awsfake.Instance{Zone: aws.ToString(in.AvailabilityZone), ID: aws.ToString(in.InstanceId)})] = aws.ToString(in.AvailabilityZone)
		}
		for {
			list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, n := range list.Items {
				got[n.Spec.ProviderID] = n.Labels[scenario.ZoneLabel]
				for key, value := range map[string]string{
					awsfake.NodeGroupLabel:     group.Name,
					awsfake.ImageLabel:         group.OldImage,
					awsfake.SourceLTIDLabel:    group.LaunchTemplateID,
					awsfake.SourceLTVersionLbl: "1",
				} {
					if n.Labels[key] != value {
						t.Fatalf("node %s: label %s=%q, want %q", n.Name, key, n.Labels[key], value)
					}
				}
			}
			if fmt.Sprint(got) == fmt.Sprint(wantIDs) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("nodes by provider ID and zone %v, want %v (bridge: %v)", got, wantIDs, b.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	nodes(g.Instances)
	if _, err := e.asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: g.Instances[0].InstanceId, ShouldDecrementDesiredCapacity: aws.Bool(true),
	}); err != nil {
		t.Fatal(err)
	}
	nodes(g.Instances[1:])
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	nodes(nil)
}
