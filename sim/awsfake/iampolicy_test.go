package awsfake

import (
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
)

const asgARN = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:00000000-0000-4000-8000-000000000000:autoScalingGroupName/ng1"

// leastPrivilege grants Auto Scaling's changes on groups named ng1* tagged
// team=blue, Describe on "*", PassRole to EC2 only, and denies deleting
// anything tagged keep=true.
const leastPrivilege = `{
  "Version": "2012-10-17",
  "Statement": [
    {"Sid": "Read", "Effect": "Allow", "Action": "autoscaling:Describe*", "Resource": "*"},
    {"Sid": "Change", "Effect": "Allow", "Action": ["autoscaling:UpdateAutoScalingGroup", "AUTOSCALING:DeleteAutoScalingGroup"],
     "Resource": "arn:aws:autoscaling:*:*:autoScalingGroup:*:autoScalingGroupName/ng1*",
     "Condition": {"StringEquals": {"autoscaling:ResourceTag/team": "blue"}}},
    {"Sid": "Keep", "Effect": "Deny", "Action": "autoscaling:DeleteAutoScalingGroup", "Resource": "*",
     "Condition": {"StringLike": {"aws:ResourceTag/keep": "t*"}}},
    {"Sid": "Pass", "Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::*:role/nodes/*",
     "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "eks.amazonaws.com"]}}},
    {"Sid": "NotOwn", "Effect": "Allow", "NotAction": "iam:*", "Resource": "arn:aws:ec2:*:*:launch-template/lt-?"}
  ]
}`

func TestEvaluate(t *testing.T) {
	p, err := ParsePolicy(leastPrivilege)
	if err != nil {
		t.Fatal(err)
	}
	blue := map[string][]string{"autoscaling:ResourceTag/team": {"blue"}}
	for _, tc := range []struct {
		name        string
		req         Request
		want        Decision
		wantMissing []string
	}{
		{"a Describe on *", Request{Action: "autoscaling:DescribeAutoScalingGroups", Resource: "*"}, Allowed, nil},
		{"actions match case-insensitively", Request{Action: "autoscaling:deleteautoscalinggroup", Resource: asgARN, Context: blue}, Allowed, []string{"aws:ResourceTag/keep"}},
		{"the group's ARN and tag", Request{Action: "autoscaling:UpdateAutoScalingGroup", Resource: asgARN, Context: blue}, Allowed, nil},
		{"another tag value", Request{Action: "autoscaling:UpdateAutoScalingGroup", Resource: asgARN,
			Context: map[string][]string{"autoscaling:ResourceTag/team": {"red"}}}, ImplicitDeny, nil},
		{"no tag given: the key is missing", Request{Action: "autoscaling:UpdateAutoScalingGroup", Resource: asgARN}, ImplicitDeny, []string{"autoscaling:ResourceTag/team"}},
		{"another group's ARN", Request{Action: "autoscaling:UpdateAutoScalingGroup", Context: blue,
			Resource: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:00000000-0000-4000-8000-000000000000:autoScalingGroupName/web"}, ImplicitDeny, nil},
		{"a scoped grant asked on *", Request{Action: "autoscaling:UpdateAutoScalingGroup", Resource: "*", Context: blue}, ImplicitDeny, nil},
		{"an explicit deny wins", Request{Action: "autoscaling:DeleteAutoScalingGroup", Resource: asgARN,
			Context: map[string][]string{"autoscaling:ResourceTag/team": {"blue"}, "aws:ResourceTag/keep": {"true"}}}, ExplicitDeny, nil},
		{"PassRole to EC2", Request{Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/nodes/worker",
			Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}}, Allowed, nil},
		{"PassRole to Lambda", Request{Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/nodes/worker",
			Context: map[string][]string{"iam:PassedToService": {"lambda.amazonaws.com"}}}, ImplicitDeny, nil},
		{"PassRole of a role off the path", Request{Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/admin",
			Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}}, ImplicitDeny, nil},
		{"? is one character", Request{Action: "ec2:CreateLaunchTemplateVersion", Resource: "arn:aws:ec2:us-east-1:123456789012:launch-template/lt-1"}, Allowed, nil},
		{"? is no more", Request{Action: "ec2:CreateLaunchTemplateVersion", Resource: "arn:aws:ec2:us-east-1:123456789012:launch-template/lt-12"}, ImplicitDeny, nil},
		{"NotAction leaves out what it names", Request{Action: "iam:GetRole", Resource: "arn:aws:ec2:us-east-1:123456789012:launch-template/lt-1"}, ImplicitDeny, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, missing := Evaluate([]*Policy{p}, tc.req)
			if d != tc.want || !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("got %s missing %v, want %s missing %v", d, missing, tc.want, tc.wantMissing)
			}
		})
	}
}

func TestConditionOperators(t *testing.T) {
	for _, tc := range []struct {
		op      string
		policy  []string
		values  []string // nil: the key is absent
		present bool
		want    bool
	}{
		{"StringEquals", []string{"a", "b"}, []string{"b"}, true, true},
		{"StringEquals", []string{"a"}, nil, false, false},
		{"StringNotEquals", []string{"a"}, nil, false, true},
		{"StringNotEquals", []string{"a", "b"}, []string{"b"}, true, false},
		{"StringEqualsIfExists", []string{"a"}, nil, false, true},
		{"StringLike", []string{"team-*"}, []string{"team-x"}, true, true},
		{"StringNotLike", []string{"team-*"}, []string{"team-x"}, true, false},
		{"StringEqualsIgnoreCase", []string{"BLUE"}, []string{"blue"}, true, true},
		{"ForAllValues:StringEquals", []string{"a", "b"}, []string{"a", "b"}, true, true},
		{"ForAllValues:StringEquals", []string{"a"}, []string{"a", "c"}, true, false},
		{"ForAllValues:StringEquals", []string{"a"}, nil, false, true},
		{"ForAnyValue:StringEquals", []string{"a"}, []string{"c", "a"}, true, true},
		{"ForAnyValue:StringEquals", []string{"a"}, nil, false, false},
		{"Null", []string{"true"}, nil, false, true},
		{"Null", []string{"false"}, nil, false, false},
		{"ArnLike", []string{"arn:aws:iam::*:role/x/*"}, []string{"arn:aws:iam::1:role/x/y"}, true, true},
	} {
		t.Run(tc.op, func(t *testing.T) {
			op, ok := conditionOp(tc.op)
			if !ok {
				t.Fatalf("operator %s unknown", tc.op)
			}
			if got := op.holds(tc.values, tc.present, tc.policy); got != tc.want {
				t.Errorf("%s %v on %v (present %v): %v, want %v", tc.op, tc.policy, tc.values, tc.present, got, tc.want)
			}
		})
	}
	if _, err := ParsePolicy(`{"Statement": {"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}}`); err == nil {
		t.Errorf("a condition operator the fake does not evaluate was taken")
	}
}

const (
	ssoRole    = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_NodeUpgrade_0123abcd"
	ssoSession = "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_NodeUpgrade_0123abcd/alice"
)

// TestRoleKeepsItsPath: GetRole answers an IAM Identity Center role with
// its path, and the role is simulated by that ARN only.
func TestRoleKeepsItsPath(t *testing.T) {
	f := start(t, 1)
	f.s.AddRole(ssoRole)
	f.s.SetCaller(ssoSession)
	client := iam.NewFromConfig(sdkConfig(f.s))
	role, err := client.GetRole(f.ctx, &iam.GetRoleInput{RoleName: aws.String("AWSReservedSSO_NodeUpgrade_0123abcd")})
	if err != nil || aws.ToString(role.Role.Arn) != ssoRole || aws.ToString(role.Role.Path) != "/aws-reserved/sso.amazonaws.com/eu-west-1/" {
		t.Fatalf("GetRole: %v %+v, want %s", err, role, ssoRole)
	}
	for arn, want := range map[string]string{"arn:aws:iam::123456789012:role/AWSReservedSSO_NodeUpgrade_0123abcd": "NoSuchEntity", ssoRole: ""} {
		_, err := client.SimulatePrincipalPolicy(f.ctx, &iam.SimulatePrincipalPolicyInput{PolicySourceArn: aws.String(arn), ActionNames: []string{"ec2:DescribeImages"}})
		if (want == "" && err != nil) || (want != "" && !isCode(err, want)) {
			t.Errorf("simulating %s: %v, want %q", arn, err, want)
		}
	}
}

// TestSimulateUnderAPolicy holds SimulatePrincipalPolicy and the calls
// themselves to the caller's policy.
func TestSimulateUnderAPolicy(t *testing.T) {
	f := start(t, 1)
	asg := autoscaling.NewFromConfig(sdkConfig(f.s))
	if _, err := asg.CreateOrUpdateTags(f.ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: []astypes.Tag{{ResourceId: aws.String("ng1"),
		ResourceType: aws.String("auto-scaling-group"), Key: aws.String("team"), Value: aws.String("blue")}}}); err != nil {
		t.Fatal(err)
	}
	f.s.AddRole(ssoRole)
	f.s.SetCaller(ssoSession)
	if err := f.s.SetPolicy(leastPrivilege, `{"Statement": [{"Effect": "Allow", "Action": "iam:SimulatePrincipalPolicy", "Resource": "arn:aws:iam::*:role/aws-reserved/sso.amazonaws.com/*"}]}`); err != nil {
		t.Fatal(err)
	}
	client := iam.NewFromConfig(sdkConfig(f.s))
	tag := iamtypes.ContextEntry{ContextKeyName: aws.String("autoscaling:ResourceTag/team"), ContextKeyType: iamtypes.ContextKeyTypeEnumString, ContextKeyValues: []string{"blue"}}
	for _, tc := range []struct {
		name        string
		resources   []string
		context     []iamtypes.ContextEntry
		want        iamtypes.PolicyEvaluationDecisionType
		wantMissing []string
	}{
		{"on *", nil, nil, "implicitDeny", nil},
		{"on the group with its tag", []string{asgARN}, []iamtypes.ContextEntry{tag}, "allowed", nil},
		{"on the group without its tag", []string{asgARN}, nil, "implicitDeny", []string{"autoscaling:ResourceTag/team"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := client.SimulatePrincipalPolicy(f.ctx, &iam.SimulatePrincipalPolicyInput{PolicySourceArn: aws.String(ssoRole),
				ActionNames: []string{"autoscaling:UpdateAutoScalingGroup"}, ResourceArns: tc.resources, ContextEntries: tc.context})
			if err != nil {
				t.Fatal(err)
			}
			r := out.EvaluationResults[0]
			var missing []string
			for _, rs := range r.ResourceSpecificResults {
				missing = append(missing, rs.MissingContextValues...)
			}
			if r.EvalDecision != tc.want || !slices.Equal(missing, tc.wantMissing) || !slices.Equal(r.MissingContextValues, tc.wantMissing) {
				t.Errorf("got %s missing %v (top %v), want %s missing %v", r.EvalDecision, missing, r.MissingContextValues, tc.want, tc.wantMissing)
			}
		})
	}
	if _, err := asg.UpdateAutoScalingGroup(f.ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("ng1"), MaxSize: aws.Int32(4)}); err != nil {
		t.Errorf("an allowed change was refused: %v", err)
	}
	if _, err := asg.SuspendProcesses(f.ctx, &autoscaling.SuspendProcessesInput{AutoScalingGroupName: aws.String("ng1")}); !isCode(err, "AccessDenied") {
		t.Errorf("a change no statement allows: %v, want AccessDenied", err)
	}
}

func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
