package motobridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// answer is a call's outcome in a comparable form: "ok" or the error code.
func answer(err error) string {
	if err == nil {
		return "ok"
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return "failed: " + err.Error()
}

// probed is one endpoint with a way to make a fresh group on it: a group
// of 2 instances (min 1, max 3) over zones, launching version 1 of its own
// launch template, whose ID it returns.
type probed struct {
	name     string
	cfg      aws.Config
	newGroup func(t *testing.T, ctx context.Context, name string) string
}

// call is a call the provider makes, on which the endpoints were probed:
// do makes it on a fresh group and returns the answer, and documented is
// the answer AWS's API reference gives (doc quotes it). motoDeviates marks
// where moto 5.2.1, even corrected by moto_server.py, answers otherwise;
// the project's endpoint must always answer as documented.
type call struct {
	name, doc    string
	do           func(ctx context.Context, e probed, group, template string) (string, error)
	documented   string
	motoDeviates bool
}

var calls = []call{
	{
		// The run reads why launches fail from them (LaunchRefused).
		name:       "DescribeScalingActivities of a group that launched its 2 instances",
		doc:        "When scaling events occur, you see a record of the scaling activity in the scaling activities. If the scaling event succeeds, the value of the StatusCode element in the response is Successful",
		documented: "2 Successful", motoDeviates: true,
		do: func(ctx context.Context, e probed, group, _ string) (string, error) {
			out, err := autoscaling.NewFromConfig(e.cfg).DescribeScalingActivities(ctx, &autoscaling.DescribeScalingActivitiesInput{AutoScalingGroupName: aws.String(group)})
			if err != nil {
				return answer(err), nil
			}
			n := 0
			for _, a := range out.Activities {
				if a.StatusCode == astypes.ScalingActivityStatusCodeSuccessful {
					n++
				}
			}
			return fmt.Sprintf("%d Successful", n), nil
		},
	},
	{
		name:       "UpdateAutoScalingGroup with a desired capacity above max",
		doc:        "DesiredCapacity: this number must be greater than or equal to the minimum size of the group and less than or equal to the maximum size of the group",
		documented: "ValidationError", motoDeviates: true,
		do: func(ctx context.Context, e probed, group, _ string) (string, error) {
			_, err := autoscaling.NewFromConfig(e.cfg).UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(9)})
			return answer(err), nil
		},
	},
	{
		name:       "UpdateAutoScalingGroup with a desired capacity below min",
		doc:        "DesiredCapacity: this number must be greater than or equal to the minimum size of the group and less than or equal to the maximum size of the group",
		documented: "ValidationError", motoDeviates: true,
		do: func(ctx context.Context, e probed, group, _ string) (string, error) {
			_, err := autoscaling.NewFromConfig(e.cfg).UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(0)})
			return answer(err), nil
		},
	},
	{
		// The blue/green clone counts on it to find the group an
		// interrupted run created.
		name:       "CreateAutoScalingGroup with the name of an existing group",
		doc:        "AlreadyExists: you already have an Auto Scaling group or launch configuration with this name",
		documented: "AlreadyExists", motoDeviates: true,
		do: func(ctx context.Context, e probed, group, template string) (string, error) {
			_, err := autoscaling.NewFromConfig(e.cfg).CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
				AutoScalingGroupName: aws.String(group), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), AvailabilityZones: zones[:1],
				LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(template), Version: aws.String("1")},
			})
			return answer(err), nil
		},
	},
	{
		name:       "DeleteAutoScalingGroup of a group with instances, without ForceDelete",
		doc:        "if the group has instances or scaling activities in progress, you must specify the option to force the deletion in order for it to succeed (ResourceInUse)",
		documented: "ResourceInUse", motoDeviates: true,
		do: func(ctx context.Context, e probed, group, _ string) (string, error) {
			_, err := autoscaling.NewFromConfig(e.cfg).DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(group)})
			return answer(err), nil
		},
	},
	{
		// Blue/green checks the group quota with it.
		name:       "DescribeAccountLimits",
		doc:        "describes the current Amazon EC2 Auto Scaling resource quotas for your account",
		documented: "ok", motoDeviates: true,
		do: func(ctx context.Context, e probed, _, _ string) (string, error) {
			// Once: the SDK would retry moto's HTTP 500.
			_, err := autoscaling.NewFromConfig(e.cfg).DescribeAccountLimits(ctx, &autoscaling.DescribeAccountLimitsInput{}, func(o *autoscaling.Options) { o.RetryMaxAttempts = 1 })
			return answer(err), nil
		},
	},
	{
		// How the provider finds the version a killed run made; moto
		// lists MinVersion itself too, which the provider tolerates by
		// keeping only versions numbered after the source.
		name:       "DescribeLaunchTemplateVersions with MinVersion lists the later versions only",
		doc:        "MinVersion: the version number after which to describe launch template versions",
		documented: "[2 3]", motoDeviates: true,
		do: func(ctx context.Context, e probed, _, template string) (string, error) {
			c := ec2.NewFromConfig(e.cfg)
			for range 2 {
				if _, err := c.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
					LaunchTemplateId: aws.String(template), SourceVersion: aws.String("1"),
					LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123456789abcdef0")},
				}); err != nil {
					return "", err
				}
			}
			out, err := c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(template), MinVersion: aws.String("1")})
			if err != nil {
				return answer(err), nil
			}
			var numbers []int64
			for _, v := range out.LaunchTemplateVersions {
				numbers = append(numbers, aws.ToInt64(v.VersionNumber))
			}
			slices.Sort(numbers)
			return fmt.Sprint(numbers), nil
		},
	},
	{
		// A run on a group that launches $Default makes its version the
		// default; moto reads another parameter (corrected, e).
		name:       "ModifyLaunchTemplate with DefaultVersion makes it the default",
		doc:        "DefaultVersion (query parameter SetDefaultVersion): the version number of the launch template to set as the default version",
		documented: "2",
		do: func(ctx context.Context, e probed, _, template string) (string, error) {
			c := ec2.NewFromConfig(e.cfg)
			if _, err := c.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
				LaunchTemplateId: aws.String(template), SourceVersion: aws.String("1"),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123456789abcdef0")},
			}); err != nil {
				return "", err
			}
			if _, err := c.ModifyLaunchTemplate(ctx, &ec2.ModifyLaunchTemplateInput{LaunchTemplateId: aws.String(template), DefaultVersion: aws.String("2")}); err != nil {
				return answer(err), nil
			}
			out, err := c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(template), Versions: []string{"$Default"}})
			if err != nil || len(out.LaunchTemplateVersions) != 1 {
				return answer(err), err
			}
			return fmt.Sprint(aws.ToInt64(out.LaunchTemplateVersions[0].VersionNumber)), nil
		},
	},
	{
		// The plan's offering proof: the zones of the group that offer
		// its instance type.
		name:       "DescribeInstanceTypeOfferings by availability zone lists the zones that offer the type",
		doc:        "LocationType availability-zone; Filters instance-type, location: the instance types offered in the location",
		documented: "[us-east-1a us-east-1b us-east-1c]",
		do: func(ctx context.Context, e probed, _, _ string) (string, error) {
			out, err := ec2.NewFromConfig(e.cfg).DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
				LocationType: ec2types.LocationTypeAvailabilityZone,
				Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.large"}},
					{Name: aws.String("location"), Values: zones}}})
			if err != nil {
				return answer(err), nil
			}
			var locs []string
			for _, o := range out.InstanceTypeOfferings {
				locs = append(locs, aws.ToString(o.Location))
			}
			slices.Sort(locs)
			return fmt.Sprint(locs), nil
		},
	},
	{
		// The plan's subnet proof asks for the group's subnets by ID.
		name:       "DescribeSubnets of a subnet that does not exist",
		doc:        "EC2 error codes: InvalidSubnetID.NotFound, the specified subnet does not exist",
		documented: "InvalidSubnetID.NotFound",
		do: func(ctx context.Context, e probed, _, _ string) (string, error) {
			_, err := ec2.NewFromConfig(e.cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}})
			return answer(err), nil
		},
	},
}

func probeAWSFake(t *testing.T, ctx context.Context) probed {
	t.Helper()
	srv, err := awsfake.Start(ctx, awsfake.Options{Region: region, LaunchDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return probed{name: "awsfake", cfg: aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), BaseEndpoint: aws.String(srv.URL)}, newGroup: func(t *testing.T, ctx context.Context, name string) string {
		t.Helper()
		lt := srv.CreateLaunchTemplate(name, "ami-0old", "m5.large")
		if err := srv.CreateGroup(awsfake.GroupSpec{Name: name, Min: 1, Max: 3, Desired: 2, Zones: zones, LaunchTemplateID: lt, LaunchTemplateVersion: "1"}); err != nil {
			t.Fatal(err)
		}
		if err := srv.WaitStable(ctx, name); err != nil {
			t.Fatal(err)
		}
		return lt
	}}
}

func probeMoto(t *testing.T) probed {
	t.Helper()
	cfg := start(t, Options{})
	return probed{name: "moto", cfg: cfg, newGroup: func(t *testing.T, ctx context.Context, name string) string {
		t.Helper()
		g, err := CreateNodeGroup(ctx, cfg, NodeGroupSpec{Name: name, Zones: zones, Min: 1, Desired: 2, Max: 3, VersionSpec: "1"})
		if err != nil {
			t.Fatal(err)
		}
		return g.LaunchTemplateID
	}}
}

// TestMotoDisagreements makes the calls on which moto and the project's
// endpoint were found to disagree, on both: the project's endpoint must
// answer as AWS documents, and moto as it did when probed, so that a moto
// that changes is noticed (and its correction or this list revisited).
func TestMotoDisagreements(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, e := range []probed{probeAWSFake(t, ctx), probeMoto(t)} {
		t.Run(e.name, func(t *testing.T) {
			for i, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					group := fmt.Sprintf("probe-%d", i)
					template := e.newGroup(t, ctx, group)
					got, err := c.do(ctx, e, group, template)
					if err != nil {
						t.Fatal(err)
					}
					wantDocumented := e.name != "moto" || !c.motoDeviates
					if documented := got == c.documented; documented != wantDocumented {
						t.Errorf("answered %q; AWS documents %q (%s); want the documented answer: %v", got, c.documented, c.doc, wantDocumented)
					}
				})
			}
		})
	}
}
