package aws

import (
	"context"
	"errors"
	"fmt"
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

// action is one IAM action a run may use, what it is for, which
// capability's strategies use it (0: every run), and the resource IAM
// authorises it on (the Service Authorization Reference's "Resource
// types" of the action, whose ARN the probe builds after Open).
type action struct {
	name, call string
	need       plan.Capability
	on         resourceKind
}

// groupActions are the actions of a run on an Auto Scaling group, as
// deploy/iam-policy.json grants them (TestProbedActionsAreThePolicy holds
// the two together). ec2:RunInstances and ec2:CreateTags are checked by
// Auto Scaling on the caller's behalf when a group is pointed at a launch
// template version. iam:PassRole is left out: Auto Scaling passes the
// launch template's instance profile role only when it launches, which
// no simulation of the caller's calls shows. Blue/green's green group is
// blue's clone with blue's tags and no ARN before it exists: its actions
// are simulated on blue's.
var groupActions = []action{
	{"autoscaling:DescribeAutoScalingGroups", "read the group", 0, anyResource},
	{"autoscaling:DescribeAutoScalingInstances", "read the group's instances", 0, anyResource},
	{"autoscaling:DescribeLifecycleHooks", "read the group's lifecycle hooks", 0, anyResource},
	{"autoscaling:DescribeWarmPool", "read the group's warm pool", 0, anyResource},
	{"autoscaling:DescribeScalingActivities", "read why the group's launches failed", 0, anyResource},
	{"ec2:DescribeInstances", "read the instances", 0, anyResource},
	{"ec2:DescribeLaunchTemplateVersions", "read the launch template", 0, anyResource},
	{"ec2:DescribeImages", "read the image", 0, anyResource},
	{"ec2:DescribeInstanceTypes", "read the vCPUs and network interfaces of the instances the run adds", 0, anyResource},
	{"ec2:DescribeInstanceTypeOfferings", "read the zones that offer the instance type", 0, anyResource},
	{"ec2:DescribeSubnets", "read the group's subnets' free addresses", 0, anyResource},
	{"servicequotas:GetServiceQuota", "read the vCPU quota the instances the run adds count against", 0, onEC2Quotas},
	{"elasticloadbalancing:DescribeTargetGroupAttributes", "read the target groups' deregistration delay", 0, anyResource},
	{"elasticloadbalancing:DescribeTargetHealth", "follow a node's deregistration", 0, anyResource},
	{"elasticloadbalancing:DescribeLoadBalancerAttributes", "read the Classic Load Balancers' connection draining", 0, anyResource},
	{"elasticloadbalancing:DescribeInstanceHealth", "follow a node's deregistration from a Classic Load Balancer", 0, anyResource},
	{"autoscaling:UpdateAutoScalingGroup", "pin the version, set the sizes", 0, onGroup},
	{"autoscaling:TerminateInstanceInAutoScalingGroup", "terminate a drained node's instance", 0, onGroup},
	{"autoscaling:SuspendProcesses", "hold zone rebalancing", 0, onGroup},
	{"autoscaling:ResumeProcesses", "release zone rebalancing", 0, onGroup},
	{"elasticloadbalancing:DeregisterTargets", "take a node out of its target groups", 0, onTargetGroups},
	{"elasticloadbalancing:DeregisterInstancesFromLoadBalancer", "take a node out of its Classic Load Balancers", 0, onClassicLBs},
	{"ec2:RunInstances", "UpdateAutoScalingGroup with a launch template version (checked by Auto Scaling)", 0, onTemplate},
	{"ec2:CreateTags", "UpdateAutoScalingGroup with a tagging launch template (checked by Auto Scaling)", 0, onNewInstances},
	{"ec2:CreateLaunchTemplateVersion", "--ami's launch template version", capImage, onTemplate},
	{"ec2:ModifyLaunchTemplate", "--ami on a group that launches $Default", capImage, onTemplate},
	{"ec2:DescribeCapacityReservations", "--reserve-surge: find the run's capacity reservations", capReserve, anyResource},
	{"ec2:CreateCapacityReservation", "--reserve-surge: reserve the scale-up", capReserve, onReservations},
	{"ec2:CreateTags", "--reserve-surge: tag the reservation with the run's token", capReserve, onNewReservations},
	{"ec2:CancelCapacityReservation", "--reserve-surge: release the reservation", capReserve, onReservations},
	{"autoscaling:DescribeAccountLimits", "check room for green's group", plan.CapNewGroups, anyResource},
	{"autoscaling:CreateAutoScalingGroup", "create green's group", plan.CapNewGroups, onGroup},
	{"autoscaling:CreateOrUpdateTags", "tag green's group", plan.CapNewGroups, onGroup},
	{"autoscaling:DeleteAutoScalingGroup", "delete blue's group", plan.CapNewGroups, onGroup},
}

// managedActions are the actions of a run on an EKS managed node group.
// EKS authorises the update calls on the cluster (ListUpdates,
// DescribeUpdate, CreateNodegroup: "cluster*") or the node group.
var managedActions = []action{
	{"eks:DescribeCluster", "read the control plane's version", 0, onCluster},
	{"eks:DescribeNodegroup", "read the node group", 0, onNodegroup},
	{"eks:ListNodegroups", "find the node group", 0, onCluster},
	{"eks:ListUpdates", "find an update under way", 0, onCluster},
	{"eks:DescribeUpdate", "follow an update", 0, onCluster},
	{"ssm:GetParameter", "read the latest release", 0, onParameter},
	{"autoscaling:DescribeAutoScalingGroups", "read the group's Auto Scaling group", 0, anyResource},
	{"ec2:DescribeLaunchTemplateVersions", "read the launch template", 0, anyResource},
	{"eks:UpdateNodegroupConfig", "set the update settings and sizes", 0, onNodegroup},
	{"ec2:CreateLaunchTemplateVersion", "--ami's launch template version", capImage, onTemplate},
	{"eks:UpdateNodegroupVersion", "start EKS's update", plan.CapManagedUpdate, onNodegroup},
	{"autoscaling:TerminateInstanceInAutoScalingGroup", "abort: remove the nodes a failed update added", plan.CapManagedUpdate, onGroup},
	{"eks:CreateNodegroup", "create green's node group", plan.CapNewGroups, onNewNodegroup},
	{"eks:TagResource", "tag green's node group", plan.CapNewGroups, onNodegroup},
	{"eks:DeleteNodegroup", "delete blue's node group", plan.CapNewGroups, onNodegroup},
}

// capImage marks the actions only --ami uses, capReserve those only
// --reserve-surge uses; the probe asks for them only then, and the plan
// sees them as needed by every strategy.
const (
	capImage   plan.Capability = 1 << 31
	capReserve plan.Capability = 1 << 30
)

// actionsFor are the actions to ask about: those of every run, the
// capabilities', --ami's when image is set and --reserve-surge's when
// reserve is.
func actionsFor(all []action, image, reserve bool) []action {
	var out []action
	for _, a := range all {
		if on := map[plan.Capability]bool{capImage: image, capReserve: reserve}; a.need == capImage || a.need == capReserve {
			if !on[a.need] {
				continue
			}
			a.need = 0
		}
		out = append(out, a)
	}
	return out
}

func (a action) permission(keys []string) plan.MissingPermission {
	return plan.MissingPermission{Permission: a.name, Call: a.call, For: a.need, Keys: keys}
}

var (
	_ cloud.PermissionProber = (*NodeGroup)(nil)
	_ cloud.PermissionProber = (*ManagedNodeGroup)(nil)
	_ cloud.PermissionProber = (*ManagedBlueGreen)(nil)
)

// ProbePermissions implements cloud.PermissionProber: the actions are
// simulated on the group's own resources.
func (n *NodeGroup) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return nil, err
	}
	return n.API.probe(ctx, actionsFor(groupActions, n.AMI != "", n.Surge), func(s scope) map[resourceKind]resource { return s.groupResources(g) })
}

// ProbePermissions implements cloud.PermissionProber.
func (m *ManagedNodeGroup) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	return m.api.probe(ctx, actionsFor(managedActions, m.image != "", false), func(s scope) map[resourceKind]resource { return s.managedResources(m) })
}

// ProbePermissions implements cloud.PermissionProber.
func (b *ManagedBlueGreen) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	return b.blue.ProbePermissions(ctx)
}

// probe asks IAM whether the caller may make each call
// (iam:SimulatePrincipalPolicy for the identity sts:GetCallerIdentity
// names; an assumed role's session is simulated as its role, whose ARN
// with its path iam:GetRole gives) on the resources resources names. An
// action IAM denies is Missing; one it could not decide for want of
// context values is Uncertain; a caller IAM will not simulate for, or who
// may not simulate, gets CannotAsk.
func (p *Client) probe(ctx context.Context, want []action, resources func(scope) map[resourceKind]resource) (*plan.Permissions, error) {
	out := &plan.Permissions{Policy: Policy}
	id, err := sts.NewFromConfig(p.cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return nil, wrap(err, "ask who the caller is (sts:GetCallerIdentity)")
	}
	caller := sdkaws.ToString(id.Arn)
	principal, role, why := simulatable(caller)
	out.Principal = principal
	if why != "" || strings.HasSuffix(principal, ":root") { // the account's root user may make every call
		out.CannotAsk = why
		return out, nil
	}
	var roleErr error
	if role != "" {
		if out.Principal, roleErr = p.roleARN(ctx, role); roleErr != nil {
			out.Principal = principal // a role with no path is found all the same
		}
	}
	a, _ := arn.Parse(caller)
	verdicts, err := p.simulateAll(ctx, out.Principal, want, resources(scope{partition: a.Partition, region: p.region, account: sdkaws.ToString(id.Account)}))
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "NoSuchEntity") {
		out.CannotAsk = wrap(err, "simulate the policies of %q (iam:SimulatePrincipalPolicy)", out.Principal).Error()
		if roleErr != nil {
			out.CannotAsk = roleErr.Error() + "; " + out.CannotAsk
		}
		return out, nil
	}
	if err != nil {
		return nil, wrap(err, "simulate the policies of %q", out.Principal)
	}
	for _, w := range want {
		switch v, asked := verdicts[w.name]; {
		case !asked || v.allowed():
		case v.denied:
			out.Missing = append(out.Missing, w.permission(nil))
		default:
			out.Uncertain = append(out.Uncertain, w.permission(v.keys))
		}
	}
	return out, nil
}

// roleARN is the ARN of the named role with its path (IAM Identity
// Center's roles are under /aws-reserved/sso.amazonaws.com/), which an
// assumed role's session ARN leaves out; iam:GetRole answers it.
func (p *Client) roleARN(ctx context.Context, name string) (string, error) {
	out, err := iam.NewFromConfig(p.cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: &name})
	if err != nil {
		return "", wrap(err, "read role %q, whose path the simulation needs (iam:GetRole)", name)
	}
	return sdkaws.ToString(out.Role.Arn), nil
}

// simulatable is the principal to simulate for the caller's ARN, the
// role's name where the caller is an assumed role's session, or why IAM
// cannot: SimulatePrincipalPolicy takes a user, group or role, "not ...
// an assumed role, federated user, or a service principal"
// (api_op_SimulatePrincipalPolicy.go, CallerArn). The session's ARN
// carries no path: principal is the role's ARN were it at "/", which
// roleARN corrects.
func simulatable(caller string) (principal, role, why string) {
	a, err := arn.Parse(caller)
	if err != nil {
		return caller, "", fmt.Sprintf("cannot simulate the policies of caller %q: not an ARN", caller)
	}
	switch kind, rest, _ := strings.Cut(a.Resource, "/"); kind {
	case "user", "role", "root":
		return caller, "", ""
	case "assumed-role":
		role, _, _ = strings.Cut(rest, "/")
		a.Service, a.Region, a.Resource = "iam", "", "role/"+role
		return a.String(), role, ""
	default:
		return caller, "", fmt.Sprintf("cannot simulate the policies of caller %q: IAM simulates users and roles only", caller)
	}
}
