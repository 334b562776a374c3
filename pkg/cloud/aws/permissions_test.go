package aws

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func callerXML(arn string) string {
	return `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>` + arn +
		`</Arn><UserId>AROA:s</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`
}

// simulation answers SimulatePrincipalPolicy for principal, denying
// denied; another principal is not found, as IAM answers.
func simulation(principal string, denied ...string) func(url.Values) reply {
	return func(v url.Values) reply {
		if v.Get("PolicySourceArn") != principal {
			return reply{404, `<ErrorResponse><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>The entity cannot be found</Message></Error></ErrorResponse>`}
		}
		var b strings.Builder
		for i := 1; v.Get(fmt.Sprintf("ActionNames.member.%d", i)) != ""; i++ {
			a, decision := v.Get(fmt.Sprintf("ActionNames.member.%d", i)), "allowed"
			if slices.Contains(denied, a) {
				decision = "implicitDeny"
			}
			fmt.Fprintf(&b, "<member><EvalActionName>%s</EvalActionName><EvalResourceName>*</EvalResourceName><EvalDecision>%s</EvalDecision></member>", a, decision)
		}
		return reply{200, `<SimulatePrincipalPolicyResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><SimulatePrincipalPolicyResult><EvaluationResults>` +
			b.String() + `</EvaluationResults><IsTruncated>false</IsTruncated></SimulatePrincipalPolicyResult></SimulatePrincipalPolicyResponse>`}
	}
}

func TestProbePermissions(t *testing.T) {
	const role = "arn:aws:iam::123456789012:role/upgrader"
	session := "arn:aws:sts::123456789012:assumed-role/upgrader/alice"
	denied := `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User is not authorized to perform: iam:SimulatePrincipalPolicy</Message></Error></ErrorResponse>`
	for _, tc := range []struct {
		name, caller  string
		simulate      func(url.Values) reply
		ami           bool
		wantPrincipal string
		wantMissing   []string
		wantCannotAsk string
	}{
		{name: "an assumed role with every permission", caller: session, simulate: simulation(role), wantPrincipal: role},
		{name: "an assumed role lacking one", caller: session, simulate: simulation(role, "autoscaling:TerminateInstanceInAutoScalingGroup"),
			wantPrincipal: role, wantMissing: []string{"autoscaling:TerminateInstanceInAutoScalingGroup"}},
		{name: "a user lacking --ami's", caller: "arn:aws:iam::123456789012:user/bob", ami: true,
			simulate:      simulation("arn:aws:iam::123456789012:user/bob", "ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate"),
			wantPrincipal: "arn:aws:iam::123456789012:user/bob", wantMissing: []string{"ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate"}},
		{name: "--ami's are not asked without it", caller: session, simulate: simulation(role, "ec2:CreateLaunchTemplateVersion"), wantPrincipal: role},
		{name: "a caller who may not simulate", caller: session, simulate: fixed(403, denied), wantPrincipal: role,
			wantCannotAsk: `cannot simulate the policies of "` + role + `" (iam:SimulatePrincipalPolicy): AccessDenied`},
		{name: "a federated user", caller: "arn:aws:sts::123456789012:federated-user/carol", wantPrincipal: "arn:aws:sts::123456789012:federated-user/carol",
			wantCannotAsk: "IAM simulates users and roles only"},
		{name: "the root user", caller: "arn:aws:iam::123456789012:root", wantPrincipal: "arn:aws:iam::123456789012:root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := map[string]func(url.Values) reply{"GetCallerIdentity": fixed(200, callerXML(tc.caller))}
			if tc.simulate != nil {
				replies["SimulatePrincipalPolicy"] = tc.simulate
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
			var missing []string
			for _, m := range perms.Missing {
				missing = append(missing, m.Permission)
			}
			if perms.Principal != tc.wantPrincipal || !slices.Equal(missing, tc.wantMissing) || !strings.Contains(perms.CannotAsk, tc.wantCannotAsk) || (tc.wantCannotAsk == "") != (perms.CannotAsk == "") {
				t.Errorf("got principal %q, missing %v, cannot ask %q; want %q, %v, %q", perms.Principal, missing, perms.CannotAsk, tc.wantPrincipal, tc.wantMissing, tc.wantCannotAsk)
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

// TestProbedActionsAreThePolicy holds the probe's actions to
// deploy/iam-policy.json: every action asked is granted by the policy, and
// every action the policy grants is asked on one of the two paths (but
// iam:PassRole, see groupActions, and the simulation's own).
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
		if g != "iam:PassRole" && g != "iam:SimulatePrincipalPolicy" && !slices.Contains(asked, g) {
			t.Errorf("deploy/iam-policy.json grants %s, which the probe never asks about", g)
		}
	}
}

// TestManagedProbeNeeds checks the capability each managed action is
// asked for: blue/green alone creates and deletes node groups.
func TestManagedProbeNeeds(t *testing.T) {
	all := actionsFor(managedActions, false)
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
