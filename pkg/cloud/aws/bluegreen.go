package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/smithy-go"
)

// The tags that mark a green group: which blue group it was cloned from,
// so a re-run recognises its own group and never adopts someone else's.
const (
	TagBlue   = "nodeupgrade.dev/blue"
	TagRole   = "nodeupgrade.dev/role"
	RoleGreen = "green"
)

// Auto Scaling's limits on a group's name and tags.
const (
	maxGroupName = 255
	maxGroupTags = 50
)

// GreenName is the default name of the green group cloned from blue to
// launch version: "<blue>-v<version>". Blue is shortened when needed so
// the name fits Auto Scaling's limit and keeps its version suffix, which
// is what tells the greens of two targets apart.
func GreenName(blue, version string) string {
	suffix := "-v" + version
	if keep := maxGroupName - len(suffix); len(blue) > keep {
		// Cut at a character boundary; bytes are counted, which is never
		// more than the limit in characters.
		for keep > 0 && !utf8.RuneStart(blue[keep]) {
			keep--
		}
		blue = blue[:keep]
	}
	return blue + suffix
}

// CheckGroupQuota fails, with an error for the user, when the region
// already holds as many Auto Scaling groups as the account may have, so a
// blue/green run stops before it changes anything. A re-run whose green
// group exists already (GroupExists) should not call it: that group is
// counted.
func (p *Client) CheckGroupQuota(ctx context.Context) error {
	out, err := p.asg.DescribeAccountLimits(ctx, &autoscaling.DescribeAccountLimitsInput{})
	if err != nil {
		return wrap(err, "describe the Auto Scaling account limits in region %q", p.region)
	}
	if out.MaxNumberOfAutoScalingGroups == nil {
		return nil // no limit reported: nothing to hold the run back
	}
	n, limit := sdkaws.ToInt32(out.NumberOfAutoScalingGroups), sdkaws.ToInt32(out.MaxNumberOfAutoScalingGroups)
	if n >= limit {
		return inputErrorf("region %q has %d Auto Scaling groups, the account's quota of %d, and blue/green needs one more; delete an unused group or have the quota raised, or use another --strategy", p.region, n, limit)
	}
	return nil
}

// GroupExists reports whether the group exists; one being deleted still
// does (Group tells, in Deleting).
func (p *Client) GroupExists(ctx context.Context, name string) (bool, error) {
	ag, err := p.describeGroup(ctx, name)
	return ag != nil, err
}

// CloneGroup creates the green group, green, as a copy of blue that
// launches version (a number) of blue's launch template, and returns it
// described. Sizes are taken from blue as given, so the caller may pass
// the sizes it recorded before pinning blue. Blue's target groups and
// Classic Load Balancers are attached to green. Tags are copied with their
// PropagateAtLaunch, except the aws: ones Auto Scaling reserves, and
// TagBlue and TagRole mark the group as green.
//
// A green group an earlier, interrupted call made (it carries TagBlue with
// blue's name and launches the same version) is returned unchanged; any
// other group of that name is refused. Everything the input can get wrong
// fails before the group is created.
func (p *Client) CloneGroup(ctx context.Context, blue *AutoScalingGroup, green, version string) (*AutoScalingGroup, error) {
	in, err := cloneInput(blue, green, version)
	if err != nil {
		return nil, err
	}
	// Green follows blue's $Default or $Latest where that launches version.
	spec := followSpec(blue, version)
	in.LaunchTemplate.Version = sdkaws.String(spec)
	if g, err := p.ownGreen(ctx, blue, green, version, spec); g != nil || err != nil {
		return g, err
	}
	if blue.Deleting {
		return nil, inputErrorf("auto scaling group %q is being deleted, so there is nothing to clone; check --asg", blue.Name)
	}
	if _, err := p.asg.CreateAutoScalingGroup(ctx, in); err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			switch ae.ErrorCode() {
			case "AlreadyExists":
				// Made by this very call when the SDK retried after a lost
				// answer, or by someone else since the look above: the
				// tags tell which.
				if g, err := p.ownGreen(ctx, blue, green, version, spec); g != nil || err != nil {
					return g, err
				}
			case "LimitExceeded":
				return nil, &Error{msg: fmt.Sprintf("cannot create Auto Scaling group %q: %s: %s; delete an unused group or have the quota raised, or use another --strategy", green, ae.ErrorCode(), oneLine(ae.ErrorMessage())), err: err, input: true}
			}
		}
		return nil, wrap(err, "create Auto Scaling group %q as a copy of %q", green, blue.Name)
	}
	ag, err := p.describeGroup(ctx, green)
	if err != nil {
		return nil, err
	}
	if ag == nil {
		// Possible just after the create; the next run finds the group by
		// its tags.
		return nil, fmt.Errorf("created Auto Scaling group %q, but Auto Scaling does not describe it yet; run again to continue with it", green)
	}
	return p.groupFrom(ctx, ag)
}

// cloneInput checks blue, green and version and builds the request that
// creates green.
func cloneInput(blue *AutoScalingGroup, green, version string) (*autoscaling.CreateAutoScalingGroupInput, error) {
	switch {
	case green == "":
		return nil, inputErrorf("no name for the green Auto Scaling group; use --green-asg")
	case green == blue.Name:
		return nil, inputErrorf("green Auto Scaling group %q is the blue group itself; choose another name with --green-asg", green)
	case utf8.RuneCountInString(green) > maxGroupName:
		return nil, inputErrorf("green Auto Scaling group name %q is longer than %d characters; choose a shorter one with --green-asg", green, maxGroupName)
	case !isNumber(version):
		return nil, inputErrorf("invalid launch template version %q for green Auto Scaling group %q: want a number; check --launch-template-version", version, green)
	case blue.LaunchTemplateID == "":
		return nil, inputErrorf("auto scaling group %q uses a launch configuration, not a launch template; only launch templates are supported", blue.Name)
	case blue.mixed:
		// Copying only the template would drop the instance types and
		// the On-Demand/Spot split.
		return nil, inputErrorf("auto scaling group %q takes its launch template from a mixed instances policy, which a green group cannot copy; use another --strategy", blue.Name)
	}
	in := &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(green),
		LaunchTemplate: &astypes.LaunchTemplateSpecification{
			LaunchTemplateId: sdkaws.String(blue.LaunchTemplateID),
			Version:          sdkaws.String(version),
		},
		MinSize:                          sdkaws.Int32(blue.Min),
		DesiredCapacity:                  sdkaws.Int32(blue.Desired),
		MaxSize:                          sdkaws.Int32(blue.Max),
		HealthCheckGracePeriod:           sdkaws.Int32(blue.HealthCheckGracePeriod),
		DefaultCooldown:                  sdkaws.Int32(blue.DefaultCooldown),
		TerminationPolicies:              blue.TerminationPolicies,
		CapacityRebalance:                sdkaws.Bool(blue.CapacityRebalance),
		NewInstancesProtectedFromScaleIn: sdkaws.Bool(blue.NewInstancesProtectedFromScaleIn),
		// Green serves blue's load balancers: without them, deleting blue
		// would leave them no instance behind.
		TargetGroupARNs:   blue.TargetGroups,
		LoadBalancerNames: blue.LoadBalancers,
	}
	// Subnets decide the zones in a VPC; the zones alone only outside one.
	if blue.VPCZoneIdentifier != "" {
		in.VPCZoneIdentifier = sdkaws.String(blue.VPCZoneIdentifier)
	} else {
		in.AvailabilityZones = blue.Zones
	}
	if blue.HealthCheckType != "" {
		in.HealthCheckType = sdkaws.String(blue.HealthCheckType)
	}
	in.Tags = greenTags(blue, green)
	if len(in.Tags) > maxGroupTags {
		return nil, inputErrorf("auto scaling group %q has %d tags to copy; with the 2 that mark the green group that is %d, over Auto Scaling's %d; remove some from %q or use another --strategy", blue.Name, len(in.Tags)-2, len(in.Tags), maxGroupTags, blue.Name)
	}
	return in, nil
}

// greenTags are blue's tags for green, sorted, and the two that mark it
// green.
func greenTags(blue *AutoScalingGroup, green string) []astypes.Tag {
	keys := make([]string, 0, len(blue.Tags))
	for k := range blue.Tags {
		// aws: keys are Auto Scaling's to set; TagBlue and TagRole of a
		// blue that was itself a green are replaced below.
		if !strings.HasPrefix(k, "aws:") && k != TagBlue && k != TagRole {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // a stable request, for the logs and the tests
	tag := func(k, v string, propagate bool) astypes.Tag {
		return astypes.Tag{
			ResourceId: sdkaws.String(green), ResourceType: sdkaws.String("auto-scaling-group"),
			Key: sdkaws.String(k), Value: sdkaws.String(v), PropagateAtLaunch: sdkaws.Bool(propagate),
		}
	}
	tags := make([]astypes.Tag, 0, len(keys)+2)
	for _, k := range keys {
		tags = append(tags, tag(k, blue.Tags[k].Value, blue.Tags[k].PropagateAtLaunch))
	}
	return append(tags, tag(TagBlue, blue.Name, true), tag(TagRole, RoleGreen, true))
}

// ownGreen returns green when an earlier call cloned it from blue for
// version (set to spec); nil when there is no such group; an error for
// the user when the name is taken otherwise.
func (p *Client) ownGreen(ctx context.Context, blue *AutoScalingGroup, green, version, spec string) (*AutoScalingGroup, error) {
	ag, err := p.describeGroup(ctx, green)
	if err != nil || ag == nil {
		return nil, err
	}
	from := ""
	for _, t := range ag.Tags {
		if sdkaws.ToString(t.Key) == TagBlue {
			from = sdkaws.ToString(t.Value)
		}
	}
	if from != blue.Name {
		return nil, inputErrorf("auto scaling group %q already exists and is not a green group of %q; delete it or choose another name with --green-asg", green, blue.Name)
	}
	if sdkaws.ToString(ag.Status) == statusDeleting {
		return nil, inputErrorf("green Auto Scaling group %q is being deleted; run again once it is gone, or choose another name with --green-asg", green)
	}
	id, v := "", ""
	if lt := ag.LaunchTemplate; lt != nil {
		id, v = sdkaws.ToString(lt.LaunchTemplateId), sdkaws.ToString(lt.Version)
	}
	if id != blue.LaunchTemplateID || v != version && v != spec {
		// An earlier run with another target: using it would roll out
		// the wrong version.
		return nil, inputErrorf("green Auto Scaling group %q, made earlier from %q, launches launch template %q version %q, not version %q of %q; delete it or choose another name with --green-asg", green, blue.Name, id, v, version, blue.LaunchTemplateID)
	}
	return p.groupFrom(ctx, ag)
}

// DeleteGroup deletes the group and terminates its instances without
// waiting for them. A group that is gone or already being deleted counts
// as deleted, so an interrupted run can repeat the call.
func (p *Client) DeleteGroup(ctx context.Context, name string) error {
	// Looked at first: a second delete of a group on its way out is not
	// documented to succeed.
	ag, err := p.describeGroup(ctx, name)
	if err != nil {
		return err
	}
	if ag == nil || sdkaws.ToString(ag.Status) == statusDeleting {
		return nil
	}
	_, err = p.asg.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(name),
		ForceDelete:          sdkaws.Bool(true), // the workload has left; its instances go with it
	})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" &&
			(strings.Contains(ae.ErrorMessage(), "not found") || strings.Contains(ae.ErrorMessage(), "pending delete")) {
			return nil // deleted or being deleted since the look above
		}
		return wrap(err, "delete Auto Scaling group %q", name)
	}
	return nil
}

// SetSizes sets the group's min, desired and max in one call: equal, they
// pin blue so that nothing scales it during the run; the recorded ones
// restore it.
func (p *Client) SetSizes(ctx context.Context, group string, min, desired, max int32) error {
	_, err := p.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(group),
		MinSize:              sdkaws.Int32(min),
		DesiredCapacity:      sdkaws.Int32(desired),
		MaxSize:              sdkaws.Int32(max),
	})
	if err != nil {
		return wrap(err, "set Auto Scaling group %q to min %d, desired %d, max %d", group, min, desired, max)
	}
	return nil
}
