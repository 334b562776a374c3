package aws

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

var amiPattern = regexp.MustCompile(`^ami-[0-9a-zA-Z]+$`)

// ValidImageID reports whether s has the form of an AMI ID.
func ValidImageID(s string) bool { return amiPattern.MatchString(s) }

// Target is the launch template version an upgrade moves the group to.
type Target struct {
	// Version is the version number; empty when the run will create it
	// (Create), as a copy of SourceVersion with Image. SourceVersion is
	// also set for a copy an earlier run made, and for a version given
	// that differs from the group's current one in the image alone.
	Version       string
	Image         string
	Create        bool
	SourceVersion string
	// source is SourceVersion as described, to find a copy made by a
	// create whose answer was lost (findCopy)
	source *ec2types.LaunchTemplateVersion
}

// ResolveTarget works out, changing nothing, what SetTarget will do: with
// ami, a new version of the group's launch template copied from its current
// one with only the image changed (none when the current one already has
// that image, as after an interrupted run, or when such a copy exists, as
// after a run killed before it pointed the group at its copy); with
// version, that existing version; with neither, the group's current one.
// Bad flags and missing images or versions are caught here, before
// anything changes.
func (p *Client) ResolveTarget(ctx context.Context, g *AutoScalingGroup, ami, version string) (Target, error) {
	if ami != "" && version != "" {
		return Target{}, inputErrorf("--ami and --launch-template-version cannot be used together")
	}
	if ami != "" && !ValidImageID(ami) {
		return Target{}, inputErrorf("invalid AMI ID %q: want ami- followed by letters and digits; check --ami", ami)
	}
	if version != "" && version != "$Latest" && version != "$Default" && !isNumber(version) {
		return Target{}, inputErrorf("invalid launch template version %q: want a number, $Latest or $Default; check --launch-template-version", version)
	}
	if g.LaunchTemplateID == "" {
		return Target{}, inputErrorf("auto scaling group %q uses a launch configuration, not a launch template; only launch templates are supported", g.Name)
	}
	if (ami != "" || version != "") && g.mixed {
		return Target{}, inputErrorf("auto scaling group %q takes its launch template from a mixed instances policy, which cannot be changed here; update it yourself and run without --ami and --launch-template-version", g.Name)
	}
	res := resolver{p: p, cache: map[[2]string]ec2types.LaunchTemplateVersion{}}
	want := g.LaunchTemplateVersion
	if version != "" {
		want = version
	}
	v, err := res.version(ctx, g.LaunchTemplateID, "", want)
	if err != nil {
		var ae smithy.APIError
		if version != "" && (errors.As(err, &ae) && strings.Contains(ae.ErrorCode(), "VersionNotFound") || isNotFound(err)) {
			return Target{}, &Error{msg: fmt.Sprintf("launch template %q has no version %q; check --launch-template-version", g.LaunchTemplateID, version), err: err, input: true}
		}
		return Target{}, err
	}
	t := Target{Version: strconv.FormatInt(sdkaws.ToInt64(v.VersionNumber), 10)}
	if v.LaunchTemplateData != nil {
		t.Image = sdkaws.ToString(v.LaunchTemplateData.ImageId)
	}
	if ami == "" || t.Image == ami {
		if t.Version != g.LaunchTemplateVersion {
			t.SourceVersion, err = res.sameButImage(ctx, g, v)
		}
		return t, err
	}
	if err := p.checkImage(ctx, ami); err != nil {
		return Target{}, err
	}
	// A run killed between making the version and pointing the group at
	// it left the version behind: it is the target, not a reason for one
	// more.
	made, err := p.findCopy(ctx, v, ami)
	if err != nil {
		return Target{}, err
	}
	if made != "" {
		return Target{Version: made, Image: ami, SourceVersion: t.Version}, nil
	}
	return Target{Image: ami, Create: true, SourceVersion: t.Version, source: &v}, nil
}

// checkImage makes sure the AMI exists in the region, so a typo fails
// before a launch template version is made from it.
func (p *Client) checkImage(ctx context.Context, ami string) error {
	out, err := p.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{ami}})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && strings.HasPrefix(ae.ErrorCode(), "InvalidAMIID") {
			return &Error{msg: fmt.Sprintf("image %q not found in region %q; check --ami and --region", ami, p.region), err: err, input: true}
		}
		return wrap(err, "describe image %q", ami)
	}
	for _, im := range out.Images {
		if sdkaws.ToString(im.ImageId) == ami {
			return nil
		}
	}
	return inputErrorf("image %q not found in region %q; check --ami and --region", ami, p.region)
}

// SetTarget makes the group launch the target that ResolveTarget describes
// and returns its launch template version number.
func (p *Client) SetTarget(ctx context.Context, g *AutoScalingGroup, ami, version string) (string, error) {
	t, err := p.ResolveTarget(ctx, g, ami, version)
	if err != nil {
		return "", err
	}
	target := t.Version
	if t.Create {
		if target, err = p.createVersion(ctx, g, t, ami); err != nil {
			return "", err
		}
	}
	// A group on $Default or $Latest stays on it when that launches the
	// target (see keepsFollowing), so infrastructure as code that follows
	// it is not left behind; otherwise it is pinned to the number.
	// A mixed instances policy is left as it is: pinning there would
	// replace the policy with a plain launch template.
	follow, err := p.keepsFollowing(ctx, g, target)
	if err != nil {
		return "", err
	}
	if g.spec != target && !g.mixed && !follow {
		_, err := p.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
			AutoScalingGroupName: sdkaws.String(g.Name),
			LaunchTemplate: &astypes.LaunchTemplateSpecification{
				LaunchTemplateId: sdkaws.String(g.LaunchTemplateID),
				Version:          sdkaws.String(target),
			},
		})
		if err != nil {
			return "", wrap(err, "point Auto Scaling group %q at launch template %q version %s", g.Name, g.LaunchTemplateID, target)
		}
	}
	if !follow {
		g.spec = target
	}
	g.LaunchTemplateVersion = target
	return target, nil
}
