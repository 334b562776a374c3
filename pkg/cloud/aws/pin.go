package aws

import (
	"context"
	"fmt"
	"strconv"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// The moving versions a group may launch instead of a number.
const (
	specDefault = "$Default"
	specLatest  = "$Latest"
)

var _ cloud.DefaultFollower = (*NodeGroup)(nil)

// TemplateDefault implements cloud.DefaultFollower: Group resolves the
// group's $Default to the template's default version.
func (n *NodeGroup) TemplateDefault(ctx context.Context) (bool, string, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil || g.spec != specDefault || g.LaunchTemplateID == "" {
		return false, "", err
	}
	return true, g.LaunchTemplateVersion, nil
}

// SetTemplateDefault implements cloud.DefaultFollower.
func (n *NodeGroup) SetTemplateDefault(ctx context.Context, version string) error {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return err
	}
	return n.API.SetDefaultVersion(ctx, g.LaunchTemplateID, version)
}

// SetDefaultVersion makes version the launch template's default, what a
// group launching $Default launches from then on.
func (p *Client) SetDefaultVersion(ctx context.Context, template, version string) error {
	_, err := p.ec2.ModifyLaunchTemplate(ctx, &ec2.ModifyLaunchTemplateInput{
		LaunchTemplateId: sdkaws.String(template),
		DefaultVersion:   sdkaws.String(version),
	})
	if err != nil {
		return wrap(err, "make version %s the default of launch template %q", version, template)
	}
	return nil
}

// latestVersion reads the template's latest version number now.
func (p *Client) latestVersion(ctx context.Context, template string) (string, error) {
	res := resolver{p: p, cache: map[[2]string]ec2types.LaunchTemplateVersion{}}
	v, err := res.version(ctx, template, "", specLatest)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(sdkaws.ToInt64(v.VersionNumber), 10), nil
}

// keepsFollowing reports whether the group may stay on its moving version
// and still launch target: $Default always (the run makes target the
// default, see cloud.DefaultFollower), $Latest when target is the latest
// version (read now, so a version someone made after the target pins the
// group to the target instead).
func (p *Client) keepsFollowing(ctx context.Context, g *AutoScalingGroup, target string) (bool, error) {
	switch g.spec {
	case specDefault:
		return true, nil
	case specLatest:
		latest, err := p.latestVersion(ctx, g.LaunchTemplateID)
		return latest == target, err
	}
	return false, nil
}

// followSpec is what a group cloned from g to launch version is set to:
// g's moving version where it resolves to version now, else the number.
func followSpec(g *AutoScalingGroup, version string) string {
	if (g.spec == specDefault || g.spec == specLatest) && g.LaunchTemplateVersion == version {
		return g.spec
	}
	return version
}

// launchesAfter says, for the plan, what the group launches after a run
// to target: the same moving version where it follows one (a group read
// by Group has it resolved in LaunchTemplateVersion), or the number it is
// pinned to.
func launchesAfter(g *AutoScalingGroup, target Target) string {
	what := "version " + target.Version
	if target.Create {
		what = "the new version"
	}
	switch {
	case g.mixed:
		return fmt.Sprintf("%s (the mixed instances policy's; left as it is)", g.spec)
	case g.spec == specDefault && target.Create || g.spec == specDefault && target.Version != g.LaunchTemplateVersion:
		return fmt.Sprintf("%s -> %s (made the template's default; abort and rollback make version %s the default again)", specDefault, what, g.LaunchTemplateVersion)
	case g.spec == specDefault:
		return fmt.Sprintf("%s (%s, the template's default)", specDefault, what)
	case g.spec == specLatest && (target.Create || target.Version == g.LaunchTemplateVersion):
		return fmt.Sprintf("%s (%s, the latest)", specLatest, what)
	case g.spec == specLatest:
		return fmt.Sprintf("%s pinned (%s is version %s)", what, specLatest, g.LaunchTemplateVersion)
	}
	return what + " pinned"
}
