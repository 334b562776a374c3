package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Policy is where the permissions are documented.
const Policy = "docs/providers/aws.md#permissions"

// action is one IAM action a run may use, what it is for, and which
// capability's strategies use it (0: every run).
type action struct {
	name, call string
	need       plan.Capability
}

// groupActions are the actions of a run on an Auto Scaling group, as
// deploy/iam-policy.json grants them (TestProbedActionsAreThePolicy holds
// the two together). ec2:RunInstances and ec2:CreateTags are checked by
// Auto Scaling on the caller's behalf when a group is pointed at a launch
// template version. iam:PassRole is left out: it is conditioned on the
// service the role is passed to, which a simulation over "*" cannot show.
var groupActions = []action{
	{"autoscaling:DescribeAutoScalingGroups", "read the group", 0},
	{"autoscaling:DescribeAutoScalingInstances", "read the group's instances", 0},
	{"autoscaling:DescribeLifecycleHooks", "read the group's lifecycle hooks", 0},
	{"autoscaling:DescribeWarmPool", "read the group's warm pool", 0},
	{"ec2:DescribeInstances", "read the instances", 0},
	{"ec2:DescribeLaunchTemplateVersions", "read the launch template", 0},
	{"ec2:DescribeImages", "read the image", 0},
	{"elasticloadbalancing:DescribeTargetGroupAttributes", "read the target groups' deregistration delay", 0},
	{"elasticloadbalancing:DescribeTargetHealth", "follow a node's deregistration", 0},
	{"elasticloadbalancing:DescribeLoadBalancerAttributes", "read the Classic Load Balancers' connection draining", 0},
	{"elasticloadbalancing:DescribeInstanceHealth", "follow a node's deregistration from a Classic Load Balancer", 0},
	{"autoscaling:UpdateAutoScalingGroup", "pin the version, set the sizes", 0},
	{"autoscaling:TerminateInstanceInAutoScalingGroup", "terminate a drained node's instance", 0},
	{"autoscaling:SuspendProcesses", "hold zone rebalancing", 0},
	{"autoscaling:ResumeProcesses", "release zone rebalancing", 0},
	{"elasticloadbalancing:DeregisterTargets", "take a node out of its target groups", 0},
	{"elasticloadbalancing:DeregisterInstancesFromLoadBalancer", "take a node out of its Classic Load Balancers", 0},
	{"ec2:RunInstances", "UpdateAutoScalingGroup with a launch template version (checked by Auto Scaling)", 0},
	{"ec2:CreateTags", "UpdateAutoScalingGroup with a tagging launch template (checked by Auto Scaling)", 0},
	{"ec2:CreateLaunchTemplateVersion", "--ami's launch template version", capImage},
	{"ec2:ModifyLaunchTemplate", "--ami on a group that launches $Default", capImage},
	{"autoscaling:DescribeAccountLimits", "check room for green's group", plan.CapNewGroups},
	{"autoscaling:CreateAutoScalingGroup", "create green's group", plan.CapNewGroups},
	{"autoscaling:CreateOrUpdateTags", "tag green's group", plan.CapNewGroups},
	{"autoscaling:DeleteAutoScalingGroup", "delete blue's group", plan.CapNewGroups},
}

// managedActions are the actions of a run on an EKS managed node group.
var managedActions = []action{
	{"eks:DescribeCluster", "read the control plane's version", 0},
	{"eks:DescribeNodegroup", "read the node group", 0},
	{"eks:ListNodegroups", "find the node group", 0},
	{"eks:ListUpdates", "find an update under way", 0},
	{"eks:DescribeUpdate", "follow an update", 0},
	{"ssm:GetParameter", "read the latest release", 0},
	{"autoscaling:DescribeAutoScalingGroups", "read the group's Auto Scaling group", 0},
	{"ec2:DescribeLaunchTemplateVersions", "read the launch template", 0},
	{"eks:UpdateNodegroupConfig", "set the update settings and sizes", 0},
	{"ec2:CreateLaunchTemplateVersion", "--ami's launch template version", capImage},
	{"eks:UpdateNodegroupVersion", "start EKS's update", plan.CapManagedUpdate},
	{"autoscaling:TerminateInstanceInAutoScalingGroup", "abort: remove the nodes a failed update added", plan.CapManagedUpdate},
	{"eks:CreateNodegroup", "create green's node group", plan.CapNewGroups},
	{"eks:TagResource", "tag green's node group", plan.CapNewGroups},
	{"eks:DeleteNodegroup", "delete blue's node group", plan.CapNewGroups},
}

// capImage marks the actions only --ami uses; the probe asks for them
// only then, and the plan sees them as needed by every strategy.
const capImage plan.Capability = 1 << 31

// actionsFor are the actions to ask about: those of every run, the
// capabilities', and --ami's when image is set.
func actionsFor(all []action, image bool) []plan.MissingPermission {
	var out []plan.MissingPermission
	for _, a := range all {
		if a.need == capImage && !image {
			continue
		}
		f := a.need
		if f == capImage {
			f = 0
		}
		out = append(out, plan.MissingPermission{Permission: a.name, Call: a.call, For: f})
	}
	return out
}

var (
	_ cloud.PermissionProber = (*NodeGroup)(nil)
	_ cloud.PermissionProber = (*ManagedNodeGroup)(nil)
	_ cloud.PermissionProber = (*ManagedBlueGreen)(nil)
)

// ProbePermissions implements cloud.PermissionProber.
func (n *NodeGroup) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	return n.API.probe(ctx, actionsFor(groupActions, n.AMI != ""))
}

// ProbePermissions implements cloud.PermissionProber.
func (m *ManagedNodeGroup) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	return m.api.probe(ctx, actionsFor(managedActions, m.image != ""))
}

// ProbePermissions implements cloud.PermissionProber.
func (b *ManagedBlueGreen) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	return b.blue.ProbePermissions(ctx)
}

// probe asks IAM whether the caller may make each call
// (iam:SimulatePrincipalPolicy for the identity sts:GetCallerIdentity
// names; an assumed role's session is simulated as its role). A caller IAM
// will not simulate for, or who may not simulate, gets CannotAsk.
func (p *Client) probe(ctx context.Context, want []plan.MissingPermission) (*plan.Permissions, error) {
	out := &plan.Permissions{Policy: Policy}
	id, err := sts.NewFromConfig(p.cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return nil, wrap(err, "ask who the caller is (sts:GetCallerIdentity)")
	}
	caller := sdkaws.ToString(id.Arn)
	principal, why := simulatable(caller)
	out.Principal = principal
	if why != "" || strings.HasSuffix(principal, ":root") { // the account's root user may make every call
		out.CannotAsk = why
		return out, nil
	}
	names := make([]string, 0, len(want))
	for _, w := range want {
		if !slices.Contains(names, w.Permission) {
			names = append(names, w.Permission)
		}
	}
	denied, err := p.simulate(ctx, principal, names)
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "NoSuchEntity") {
		out.CannotAsk = wrap(err, "simulate the policies of %q (iam:SimulatePrincipalPolicy)", principal).Error()
		return out, nil
	}
	if err != nil {
		return nil, wrap(err, "simulate the policies of %q", principal)
	}
	for _, w := range want {
		if slices.Contains(denied, w.Permission) {
			out.Missing = append(out.Missing, w)
		}
	}
	return out, nil
}

// simulatable is the principal to simulate for the caller's ARN, or why
// IAM cannot: SimulatePrincipalPolicy takes a user, group or role, "not
// ... an assumed role, federated user, or a service principal"
// (api_op_SimulatePrincipalPolicy.go, CallerArn), so an assumed role's
// session is simulated as the role (the path is not in the session's ARN:
// a role under a path is not found, and the plan says it could not ask).
func simulatable(caller string) (principal, why string) {
	a, err := arn.Parse(caller)
	if err != nil {
		return caller, fmt.Sprintf("cannot simulate the policies of caller %q: not an ARN", caller)
	}
	switch kind, rest, _ := strings.Cut(a.Resource, "/"); kind {
	case "user", "role":
		return caller, ""
	case "assumed-role":
		role, _, _ := strings.Cut(rest, "/")
		a.Service, a.Region, a.Resource = "iam", "", "role/"+role
		return a.String(), ""
	case "root":
		return caller, ""
	default:
		return caller, fmt.Sprintf("cannot simulate the policies of caller %q: IAM simulates users and roles only", caller)
	}
}

// simulate returns the actions IAM's simulation does not allow the
// principal ("allowed" is the one EvalDecision that permits, the others
// being explicitDeny and implicitDeny).
func (p *Client) simulate(ctx context.Context, principal string, actions []string) ([]string, error) {
	var denied []string
	pages := iam.NewSimulatePrincipalPolicyPaginator(iam.NewFromConfig(p.cfg), &iam.SimulatePrincipalPolicyInput{
		PolicySourceArn: &principal, ActionNames: actions,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.EvaluationResults {
			if r.EvalDecision != "allowed" {
				denied = append(denied, sdkaws.ToString(r.EvalActionName))
			}
		}
	}
	return denied, nil
}
