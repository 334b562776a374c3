package aws

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func callerXML(arn string) string {
	return `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>` + arn +
		`</Arn><UserId>AROA:s</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`
}

// roleXML is GetRole's answer for the role at arn.
func roleXML(arn string) string {
	path, name := "/", arn[strings.LastIndex(arn, "/")+1:]
	if _, rest, _ := strings.Cut(arn, ":role"); strings.Count(rest, "/") > 1 {
		path = rest[:strings.LastIndex(rest, "/")+1]
	}
	return `<GetRoleResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><GetRoleResult><Role><Path>` + path + `</Path><RoleName>` + name +
		`</RoleName><RoleId>AROAEXAMPLE</RoleId><Arn>` + arn + `</Arn><CreateDate>2025-01-01T00:00:00Z</CreateDate></Role></GetRoleResult></GetRoleResponse>`
}

const (
	groupARN = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:6f1c2e0a-0000-4000-8000-000000000001:autoScalingGroupName/ng1"
	// taggedGroupXML is ng1 with its ARN, tag team=blue and a target group.
	taggedGroupXML = `<DescribeAutoScalingGroupsResponse ` + asgNS + `><DescribeAutoScalingGroupsResult><AutoScalingGroups><member>
<AutoScalingGroupName>ng1</AutoScalingGroupName><AutoScalingGroupARN>` + groupARN + `</AutoScalingGroupARN>
<LaunchTemplate><LaunchTemplateId>lt-1</LaunchTemplateId><Version>2</Version></LaunchTemplate>
<MinSize>1</MinSize><MaxSize>4</MaxSize><DesiredCapacity>0</DesiredCapacity>
<Tags><member><Key>team</Key><Value>blue</Value><ResourceId>ng1</ResourceId><ResourceType>auto-scaling-group</ResourceType><PropagateAtLaunch>true</PropagateAtLaunch></member></Tags>
<TargetGroupARNs><member>` + webTG + `</member></TargetGroupARNs>
</member></AutoScalingGroups></DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>`
	accessDeniedXML = `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User is not authorized to perform: iam:SimulatePrincipalPolicy</Message></Error></ErrorResponse>`
	noSuchEntityXML = `<ErrorResponse><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>The entity cannot be found</Message></Error></ErrorResponse>`
)

// decide is a policy's decision on an action over a resource ("" when
// none was given: "*") with the context entries given, and the context
// keys it lacked.
type decide func(action, resource string, context map[string]string) (decision string, missing []string)

// allowAll allows every action but denied, on any resource.
func allowAll(denied ...string) decide {
	return func(action, _ string, _ map[string]string) (string, []string) {
		if slices.Contains(denied, action) {
			return "implicitDeny", nil
		}
		return "allowed", nil
	}
}

// simulation answers SimulatePrincipalPolicy for principal as policy
// decides, one EvaluationResult an action and, where ResourceArns are
// given, one ResourceSpecificResult a resource (types.EvaluationResult);
// another principal is not found, as IAM answers.
func simulation(principal string, policy decide) func(url.Values) reply {
	return func(v url.Values) reply {
		if v.Get("PolicySourceArn") != principal {
			return reply{404, noSuchEntityXML}
		}
		context := map[string]string{}
		for i := 1; v.Has(fmt.Sprintf("ContextEntries.member.%d.ContextKeyName", i)); i++ {
			context[v.Get(fmt.Sprintf("ContextEntries.member.%d.ContextKeyName", i))] = v.Get(fmt.Sprintf("ContextEntries.member.%d.ContextKeyValues.member.1", i))
		}
		var resources []string
		for i := 1; v.Has(fmt.Sprintf("ResourceArns.member.%d", i)); i++ {
			resources = append(resources, v.Get(fmt.Sprintf("ResourceArns.member.%d", i)))
		}
		var b strings.Builder
		for i := 1; v.Get(fmt.Sprintf("ActionNames.member.%d", i)) != ""; i++ {
			a := v.Get(fmt.Sprintf("ActionNames.member.%d", i))
			if len(resources) == 0 {
				d, missing := policy(a, "", context)
				fmt.Fprintf(&b, "<member><EvalActionName>%s</EvalActionName><EvalResourceName>*</EvalResourceName><EvalDecision>%s</EvalDecision>%s</member>", a, d, keysXML(missing))
				continue
			}
			var per strings.Builder
			top := "allowed"
			for _, r := range resources {
				d, missing := policy(a, r, context)
				if d != "allowed" {
					top = d
				}
				fmt.Fprintf(&per, "<member><EvalResourceName>%s</EvalResourceName><EvalResourceDecision>%s</EvalResourceDecision>%s</member>", r, d, keysXML(missing))
			}
			fmt.Fprintf(&b, "<member><EvalActionName>%s</EvalActionName><EvalResourceName>*</EvalResourceName><EvalDecision>%s</EvalDecision><ResourceSpecificResults>%s</ResourceSpecificResults></member>", a, top, per.String())
		}
		return reply{200, `<SimulatePrincipalPolicyResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><SimulatePrincipalPolicyResult><EvaluationResults>` +
			b.String() + `</EvaluationResults><IsTruncated>false</IsTruncated></SimulatePrincipalPolicyResult></SimulatePrincipalPolicyResponse>`}
	}
}

func keysXML(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return "<MissingContextValues><member>" + strings.Join(keys, "</member><member>") + "</member></MissingContextValues>"
}

// scopedToGroup is a least-privilege policy: the group's actions on
// its ARN only where its tag team is blue (autoscaling:ResourceTag),
// the launch template's on lt-1 where ec2:ResourceTag/team is blue,
// the rest on any resource.
func scopedToGroup(action, resource string, context map[string]string) (string, []string) {
	switch {
	case strings.HasPrefix(action, "autoscaling:Describe"), strings.HasPrefix(action, "ec2:Describe"), strings.HasPrefix(action, "elasticloadbalancing:"),
		action == "ec2:RunInstances" && strings.HasSuffix(resource, ":launch-template/lt-1"),
		action == "ec2:CreateTags" && context["ec2:CreateAction"] == "RunInstances",
		action == "servicequotas:GetServiceQuota" && strings.Contains(resource, ":servicequotas:") && strings.Contains(resource, ":ec2/L-"):
		return "allowed", nil
	case strings.HasPrefix(action, "autoscaling:") && resource == groupARN:
		if v, ok := context["autoscaling:ResourceTag/team"]; !ok {
			return "implicitDeny", []string{"autoscaling:ResourceTag/team"}
		} else if v == "blue" {
			return "allowed", nil
		}
	case strings.HasPrefix(action, "ec2:") && strings.HasSuffix(resource, ":launch-template/lt-1"):
		if _, ok := context["ec2:ResourceTag/team"]; !ok {
			return "implicitDeny", []string{"ec2:ResourceTag/team"}
		}
	}
	return "implicitDeny", nil
}

func TestProbePermissions(t *testing.T) {
	const role = "arn:aws:iam::123456789012:role/upgrader"
	const sso = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_NodeUpgrade_0123456789abcdef"
	session := "arn:aws:sts::123456789012:assumed-role/upgrader/alice"
	ssoSession := "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_NodeUpgrade_0123456789abcdef/alice@example.com"
	for _, tc := range []struct {
		name, caller  string
		getRole       func(url.Values) reply
		simulate      func(url.Values) reply
		ami           bool
		wantPrincipal string
		wantMissing   []string
		wantUncertain []string // permission: keys
		wantCannotAsk string
	}{
		{name: "an assumed role with every permission", caller: session, getRole: fixed(200, roleXML(role)), simulate: simulation(role, allowAll()), wantPrincipal: role},
		{name: "an assumed role lacking one", caller: session, getRole: fixed(200, roleXML(role)), simulate: simulation(role, allowAll("autoscaling:TerminateInstanceInAutoScalingGroup")),
			wantPrincipal: role, wantMissing: []string{"autoscaling:TerminateInstanceInAutoScalingGroup"}},
		{name: "an IAM Identity Center role, under its path", caller: ssoSession, getRole: fixed(200, roleXML(sso)), simulate: simulation(sso, allowAll()), wantPrincipal: sso},
		{name: "a role at / the caller may not read", caller: session, getRole: fixed(403, accessDeniedXML), simulate: simulation(role, allowAll()), wantPrincipal: role},
		{name: "a role under a path the caller may not read", caller: ssoSession, getRole: fixed(403, accessDeniedXML), simulate: simulation(sso, allowAll()),
			wantPrincipal: "arn:aws:iam::123456789012:role/AWSReservedSSO_NodeUpgrade_0123456789abcdef", wantCannotAsk: "(iam:GetRole): AccessDenied"},
		{name: "a policy scoped to the group's ARN and tag", caller: session, getRole: fixed(200, roleXML(role)), simulate: simulation(role, scopedToGroup), wantPrincipal: role},
		{name: "a condition on the launch template's tags cannot be told", caller: session, getRole: fixed(200, roleXML(role)), simulate: simulation(role, scopedToGroup), ami: true,
			wantPrincipal: role, wantUncertain: []string{"ec2:CreateLaunchTemplateVersion: ec2:ResourceTag/team", "ec2:ModifyLaunchTemplate: ec2:ResourceTag/team"}},
		{name: "a user lacking --ami's", caller: "arn:aws:iam::123456789012:user/bob", ami: true,
			simulate:      simulation("arn:aws:iam::123456789012:user/bob", allowAll("ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate")),
			wantPrincipal: "arn:aws:iam::123456789012:user/bob", wantMissing: []string{"ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate"}},
		{name: "--ami's are not asked without it", caller: session, getRole: fixed(200, roleXML(role)), simulate: simulation(role, allowAll("ec2:CreateLaunchTemplateVersion")), wantPrincipal: role},
		{name: "a caller who may not simulate", caller: session, getRole: fixed(200, roleXML(role)), simulate: fixed(403, accessDeniedXML), wantPrincipal: role,
			wantCannotAsk: `cannot simulate the policies of "` + role + `" (iam:SimulatePrincipalPolicy): AccessDenied`},
		{name: "a federated user", caller: "arn:aws:sts::123456789012:federated-user/carol", wantPrincipal: "arn:aws:sts::123456789012:federated-user/carol",
			wantCannotAsk: "IAM simulates users and roles only"},
		{name: "the root user", caller: "arn:aws:iam::123456789012:root", wantPrincipal: "arn:aws:iam::123456789012:root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeAutoScalingGroups"] = fixed(200, taggedGroupXML)
			replies["GetCallerIdentity"] = fixed(200, callerXML(tc.caller))
			if tc.simulate != nil {
				replies["SimulatePrincipalPolicy"] = tc.simulate
			}
			if tc.getRole != nil {
				replies["GetRole"] = tc.getRole
			}
			p, f := newTestProvider(t, replies, Options{})
			n := &NodeGroup{API: p, ASG: "ng1"}
			if tc.ami {
				n.AMI = "ami-new"
			}
			perms, err := n.ProbePermissions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var missing, uncertain []string
			for _, m := range perms.Missing {
				missing = append(missing, m.Permission)
			}
			for _, m := range perms.Uncertain {
				uncertain = append(uncertain, m.Permission+": "+strings.Join(m.Keys, ","))
			}
			if perms.Principal != tc.wantPrincipal || !slices.Equal(missing, tc.wantMissing) || !slices.Equal(uncertain, tc.wantUncertain) ||
				!strings.Contains(perms.CannotAsk, tc.wantCannotAsk) || (tc.wantCannotAsk == "") != (perms.CannotAsk == "") {
				t.Errorf("got principal %q, missing %v, uncertain %v, cannot ask %q; want %q, %v, %v, %q", perms.Principal, missing, uncertain, perms.CannotAsk,
					tc.wantPrincipal, tc.wantMissing, tc.wantUncertain, tc.wantCannotAsk)
			}
			if perms.Policy != Policy {
				t.Errorf("policy %q, want %q", perms.Policy, Policy)
			}
			if sim := f.callsOf("SimulatePrincipalPolicy"); tc.simulate != nil && len(sim) > 0 && !sim[0].Has("ActionNames.member.1") {
				t.Errorf("the simulation asked about no action")
			}
		})
	}
}

// TestProbeAsksOnTheResources checks what each simulation is given: an
// action on the group is asked on the group's ARN with its tags as
// context, a Describe on "*", a Classic Load Balancer's action not at all
// where the group has none.
func TestProbeAsksOnTheResources(t *testing.T) {
	replies := baseReplies()
	replies["DescribeAutoScalingGroups"] = fixed(200, taggedGroupXML)
	replies["GetCallerIdentity"] = fixed(200, callerXML("arn:aws:iam::123456789012:user/bob"))
	replies["SimulatePrincipalPolicy"] = simulation("arn:aws:iam::123456789012:user/bob", allowAll())
	p, f := newTestProvider(t, replies, Options{})
	if _, err := (&NodeGroup{API: p, ASG: "ng1"}).ProbePermissions(context.Background()); err != nil {
		t.Fatal(err)
	}
	asked := map[string]url.Values{}
	for _, c := range f.callsOf("SimulatePrincipalPolicy") {
		for i := 1; c.Has(fmt.Sprintf("ActionNames.member.%d", i)); i++ {
			asked[c.Get(fmt.Sprintf("ActionNames.member.%d", i))] = c
		}
	}
	for _, tc := range []struct {
		action, resource string
		context          []string // key=value
	}{
		{"autoscaling:UpdateAutoScalingGroup", groupARN, []string{"aws:ResourceTag/team=blue", "autoscaling:ResourceTag/team=blue", "aws:RequestTag/team=blue"}},
		{"autoscaling:DescribeAutoScalingGroups", "", nil},
		{"ec2:RunInstances", "arn:aws:ec2:us-east-1:123456789012:launch-template/lt-1", nil},
		{"ec2:CreateTags", "arn:aws:ec2:us-east-1:123456789012:instance/*", []string{"ec2:CreateAction=RunInstances"}},
		{"elasticloadbalancing:DeregisterTargets", webTG, nil},
	} {
		t.Run(tc.action, func(t *testing.T) {
			c := asked[tc.action]
			if c == nil {
				t.Fatalf("%s was not asked", tc.action)
			}
			if got := c.Get("ResourceArns.member.1"); got != tc.resource || c.Has("ResourceArns.member.2") {
				t.Errorf("asked on %q, want %q alone", got, tc.resource)
			}
			var context []string
			for i := 1; c.Has(fmt.Sprintf("ContextEntries.member.%d.ContextKeyName", i)); i++ {
				context = append(context, c.Get(fmt.Sprintf("ContextEntries.member.%d.ContextKeyName", i))+"="+c.Get(fmt.Sprintf("ContextEntries.member.%d.ContextKeyValues.member.1", i)))
			}
			for _, want := range tc.context {
				if !slices.Contains(context, want) {
					t.Errorf("context %v lacks %s", context, want)
				}
			}
		})
	}
	if _, ok := asked["elasticloadbalancing:DeregisterInstancesFromLoadBalancer"]; ok {
		t.Errorf("a Classic Load Balancer's action was asked of a group with none")
	}
}

// TestProbedActionsAreThePolicy holds the probe's actions to
// deploy/iam-policy.json: every action asked is granted by the policy, and
// every action the policy grants is asked on one of the two paths (but
// iam:PassRole, see groupActions, and the probe's own, iam:GetRole and
// iam:SimulatePrincipalPolicy).
func TestProbedActionsAreThePolicy(t *testing.T) {
	pol := readPolicy(t)
	granted := pol.actions("")
	var asked []string
	for _, a := range append(slices.Clone(groupActions), managedActions...) {
		if !slices.Contains(granted, a.name) {
			t.Errorf("the probe asks %s, which deploy/iam-policy.json does not grant", a.name)
		}
		asked = append(asked, a.name)
	}
	for _, g := range granted {
		if g != "iam:PassRole" && g != "iam:SimulatePrincipalPolicy" && g != "iam:GetRole" && !slices.Contains(asked, g) {
			t.Errorf("deploy/iam-policy.json grants %s, which the probe never asks about", g)
		}
	}
}

// TestManagedProbeNeeds checks the capability each managed action is
// asked for: blue/green alone creates and deletes node groups.
func TestManagedProbeNeeds(t *testing.T) {
	var all []plan.MissingPermission
	for _, a := range actionsFor(managedActions, false, false) {
		all = append(all, a.permission(nil))
	}
	perms := &plan.Permissions{Missing: all}
	for _, tc := range []struct {
		need     plan.Capability
		has, not string
	}{
		{plan.CapManagedUpdate, "eks:UpdateNodegroupVersion", "eks:CreateNodegroup"},
		{plan.CapNewGroups, "eks:DeleteNodegroup", "eks:UpdateNodegroupVersion"},
	} {
		var got []string
		for _, m := range perms.NeededBy(tc.need) {
			got = append(got, m.Permission)
		}
		if !slices.Contains(got, tc.has) || slices.Contains(got, tc.not) || !slices.Contains(got, "eks:DescribeNodegroup") {
			t.Errorf("need %v: %v; want %s and eks:DescribeNodegroup, not %s", tc.need, got, tc.has, tc.not)
		}
	}
	if slices.ContainsFunc(all, func(m plan.MissingPermission) bool { return m.Permission == "ec2:CreateLaunchTemplateVersion" }) {
		t.Errorf("--ami's action asked without --ami")
	}
}

// TestManagedResources checks the ARNs and context a managed node
// group's actions are simulated on: the cluster's from the node group's
// ARN, the node group's with its tags, green's creation on the cluster
// with the tags it carries, the release parameter without an account.
func TestManagedResources(t *testing.T) {
	const ng = "arn:aws:eks:eu-west-1:123456789012:nodegroup/prod/workers/0ac8f2c4-1111-2222-3333-444455556666"
	m := &ManagedNodeGroup{
		group: &EKSNodegroup{Cluster: "prod", Name: "workers", ARN: ng, Tags: map[string]string{"team": "blue"},
			AMIType: "AL2023_x86_64_STANDARD", Version: "1.31", LaunchTemplate: &TemplateRef{ID: "lt-9"}},
		asg: &AutoScalingGroup{Name: "eks-workers-1", Tags: map[string]Tag{"eks:nodegroup-name": {Value: "workers"}}},
	}
	got := scope{partition: "aws", region: "eu-west-1", account: "123456789012"}.managedResources(m)
	context := func(r resource) []string {
		var out []string
		for _, c := range r.context {
			out = append(out, sdkaws.ToString(c.ContextKeyName)+"="+strings.Join(c.ContextKeyValues, ","))
		}
		return out
	}
	for _, tc := range []struct {
		kind     resourceKind
		arn      string
		contains []string
	}{
		{onCluster, "arn:aws:eks:eu-west-1:123456789012:cluster/prod", nil},
		{onNodegroup, ng, []string{"aws:ResourceTag/team=blue"}},
		{onNewNodegroup, "arn:aws:eks:eu-west-1:123456789012:cluster/prod", []string{"aws:RequestTag/team=blue", "aws:TagKeys=team"}},
		{onGroup, "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:*:autoScalingGroupName/eks-workers-1", []string{"autoscaling:ResourceTag/eks:nodegroup-name=workers"}},
		{onTemplate, "arn:aws:ec2:eu-west-1:123456789012:launch-template/lt-9", nil},
		{onParameter, "arn:aws:ssm:eu-west-1::parameter/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/release_version", nil},
	} {
		r := got[tc.kind]
		if len(r.arns) != 1 || r.arns[0] != tc.arn {
			t.Errorf("kind %d: ARNs %v, want %s", tc.kind, r.arns, tc.arn)
		}
		for _, c := range tc.contains {
			if !slices.Contains(context(r), c) {
				t.Errorf("kind %d: context %v lacks %s", tc.kind, context(r), c)
			}
		}
	}
}
