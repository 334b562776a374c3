package awsfake

import (
	"regexp"

	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// Where the rules below come from, shortened in each rule's source:
//   - "asg:Op" is aws-sdk-go-v2 service/autoscaling@v1.79.4 api_op_Op.go
//     (its doc comment or, for required members, validators.go
//     validateOpOpInput); "asg:types" its types/enums.go.
//   - "ASG API: Shape" is the Amazon EC2 Auto Scaling API Reference page of
//     the shape (Length Constraints and Pattern, which the Go model does
//     not carry); "ASG UG" the Auto Scaling User Guide.
//   - "ec2:Op", "elb:Op", "elbv2:Op" likewise for service/ec2@v1.344.1,
//     elasticloadbalancing@v1.41.8 and elasticloadbalancingv2@v1.63.8;
//     "EC2 API: Op" the Amazon EC2 API Reference.

// asgName is an Auto Scaling group name as a request names one: 1 to 255
// characters (ASG API: AutoScalingGroup, AutoScalingGroupName).
var asgName = length(1, 255)

// asgNewName is the name CreateAutoScalingGroup gives a group: any ASCII
// character 33 to 126 and no colon (asg:CreateAutoScalingGroup,
// AutoScalingGroupName), 1 to 255 of them.
var asgNewName = all(length(1, 255), matches(regexp.MustCompile(`^[!-9;-~]*$`)))

// Tags of a group: keys of 1 to 128, values of 0 to 256 characters (ASG
// API: Tag); neither may start with aws:, which is reserved for AWS use,
// and a group has at most 50, of which a call adds at most 25 (ASG UG,
// ec2-auto-scaling-tagging, Tag naming and usage restrictions: "The
// maximum number of tags per resource is 50", "The maximum number of tags
// that you can add or remove using a single call is 25").
var (
	tagParams = []paramRule{
		{"Tags.member.#.Key", all(length(1, 128), notReserved), "ASG API: Tag, Key; ASG UG: the aws: prefix is reserved"},
		{"Tags.member.#.Value", all(length(0, 256), notReserved), "ASG API: Tag, Value; ASG UG: the aws: prefix is reserved"},
		{"Tags.member.#.ResourceType", oneOf("auto-scaling-group"), "asg:types Tag.ResourceType: the only supported value"},
		{"Tags.member.#.ResourceId", asgName, "ASG API: Tag, ResourceId"},
	}
	tagLimit = listRule{"Tags.member", 50, "ASG UG, Tag naming and usage restrictions: 50 tags per resource"}
)

// launchTemplateParams are LaunchTemplateSpecification's (ASG API:
// LaunchTemplateSpecification): id 1 to 255, name 3 to 255 of
// [a-zA-Z0-9\(\)\.\-/_]+, version 1 to 255.
var launchTemplateParams = []paramRule{
	{"LaunchTemplate.LaunchTemplateId", length(1, 255), "ASG API: LaunchTemplateSpecification, LaunchTemplateId"},
	{"LaunchTemplate.LaunchTemplateName", all(length(3, 255), matches(regexp.MustCompile(`^[a-zA-Z0-9().\-/_]+$`))), "ASG API: LaunchTemplateSpecification, LaunchTemplateName"},
	{"LaunchTemplate.Version", length(1, 255), "ASG API: LaunchTemplateSpecification, Version"},
}

// groupParams are what CreateAutoScalingGroup and UpdateAutoScalingGroup
// share.
var groupParams = append([]paramRule{
	{"HealthCheckType", all(length(1, 32), oneOf("EC2", "EBS", "ELB", "VPC_LATTICE")), "asg:CreateAutoScalingGroup HealthCheckType: EC2, EBS, ELB, VPC_LATTICE; ASG API: 1 to 32"},
	{"VPCZoneIdentifier", length(1, 5000), "ASG API: CreateAutoScalingGroup, VPCZoneIdentifier"},
	{"TerminationPolicies.member.#", matches(regexp.MustCompile(`^(Default|AllocationStrategy|ClosestToNextInstanceHour|NewestInstance|OldestInstance|OldestLaunchConfiguration|OldestLaunchTemplate|arn:aws:lambda:.+)$`)),
		"asg:CreateAutoScalingGroup TerminationPolicies: Valid values"},
	{"MaxInstanceLifetime", lifetime, "asg:CreateAutoScalingGroup MaxInstanceLifetime: either 0 or a number equal to or greater than 86,400 seconds"},
}, launchTemplateParams...)

// lifetime is MaxInstanceLifetime: 0, or a day or more.
func lifetime(v string) string {
	if v == "0" {
		return ""
	}
	return intRange(86400, 1<<31-1)(v)
}

// lifecycleResult is CONTINUE or ABANDON (asg:PutLifecycleHook
// DefaultResult, asg:CompleteLifecycleAction LifecycleActionResult).
var lifecycleResult = oneOf("CONTINUE", "ABANDON")

// hookName is 1 to 255 of [A-Za-z0-9\-_\/]+ (ASG API: PutLifecycleHook,
// LifecycleHookName).
var hookName = all(length(1, 255), matches(regexp.MustCompile(`^[A-Za-z0-9\-_/]+$`)))

// asgInstanceID is an instance id, 1 to 19 characters (ASG API: every InstanceId).
var asgInstanceID = length(1, 19)

// autoScalingModel holds the Auto Scaling operations the fake serves.
var autoScalingModel = map[string]opModel{
	"CreateAutoScalingGroup": {
		required: []string{"AutoScalingGroupName", "MinSize", "MaxSize"},
		params:   append(append([]paramRule{{"AutoScalingGroupName", asgNewName, "asg:CreateAutoScalingGroup AutoScalingGroupName"}}, groupParams...), tagParams...),
		lists: []listRule{tagLimit,
			{"TargetGroupARNs.member", 10, "asg:AttachLoadBalancerTargetGroups: up to 10 target groups"},
			{"LoadBalancerNames.member", 10, "asg:AttachLoadBalancers: up to 10 load balancers"}},
	},
	"UpdateAutoScalingGroup": {
		required: []string{"AutoScalingGroupName"},
		params:   append([]paramRule{{"AutoScalingGroupName", asgName, "ASG API: UpdateAutoScalingGroup"}}, groupParams...),
	},
	"DescribeAutoScalingGroups": {
		params: []paramRule{{"MaxRecords", intRange(1, 100), "asg:DescribeAutoScalingGroups MaxRecords: the maximum value is 100"},
			{"AutoScalingGroupNames.member.#", asgName, "ASG API: DescribeAutoScalingGroups"}},
		lists: []listRule{{"AutoScalingGroupNames.member", 50, "asg:DescribeAutoScalingGroups AutoScalingGroupNames: up to 50 names"}},
	},
	"DescribeAutoScalingInstances": {
		params: []paramRule{{"MaxRecords", intRange(1, 50), "asg:DescribeAutoScalingInstances MaxRecords: the maximum value is 50"},
			{"InstanceIds.member.#", asgInstanceID, "ASG API: DescribeAutoScalingInstances"}},
		lists: []listRule{{"InstanceIds.member", 50, "asg:DescribeAutoScalingInstances InstanceIds: Maximum number of 50 items"}},
	},
	"SetDesiredCapacity": {
		required: []string{"AutoScalingGroupName", "DesiredCapacity"},
		params:   []paramRule{{"AutoScalingGroupName", asgName, "ASG API: SetDesiredCapacity"}},
	},
	"TerminateInstanceInAutoScalingGroup": {
		required: []string{"InstanceId", "ShouldDecrementDesiredCapacity"},
		params: []paramRule{{"InstanceId", asgInstanceID, "ASG API: TerminateInstanceInAutoScalingGroup"},
			{"ShouldDecrementDesiredCapacity", oneOf("true", "false"), "asg:TerminateInstanceInAutoScalingGroup: a boolean"}},
	},
	"DeleteAutoScalingGroup": {
		required: []string{"AutoScalingGroupName"},
		params:   []paramRule{{"AutoScalingGroupName", asgName, "ASG API: DeleteAutoScalingGroup"}},
	},
	"CreateOrUpdateTags": {required: []string{"Tags"}, params: tagParams,
		lists: []listRule{{"Tags.member", 25, "ASG UG, Tag naming and usage restrictions: 25 tags added in a single call"}}},
	"SuspendProcesses": processesModel,
	"ResumeProcesses":  processesModel,
	"PutLifecycleHook": {
		required: []string{"LifecycleHookName", "AutoScalingGroupName"},
		params: []paramRule{
			{"LifecycleHookName", hookName, "ASG API: PutLifecycleHook, LifecycleHookName"},
			{"AutoScalingGroupName", asgName, "ASG API: PutLifecycleHook"},
			{"LifecycleTransition", oneOf(TransitionLaunching, TransitionTerminating), "asg:PutLifecycleHook LifecycleTransition"},
			{"DefaultResult", lifecycleResult, "asg:PutLifecycleHook DefaultResult: Valid values: CONTINUE | ABANDON"},
			{"HeartbeatTimeout", intRange(30, 7200), "asg:PutLifecycleHook HeartbeatTimeout: The range is from 30 to 7200 seconds"},
		},
	},
	"CompleteLifecycleAction": {
		required: []string{"LifecycleHookName", "AutoScalingGroupName", "LifecycleActionResult"},
		params: []paramRule{
			{"LifecycleHookName", hookName, "ASG API: CompleteLifecycleAction"},
			{"LifecycleActionResult", lifecycleResult, "asg:CompleteLifecycleAction LifecycleActionResult: either CONTINUE or ABANDON"},
			{"LifecycleActionToken", length(36, 36), "ASG API: CompleteLifecycleAction, LifecycleActionToken (a UUID)"},
			{"InstanceId", asgInstanceID, "ASG API: CompleteLifecycleAction"},
		},
	},
	"RecordLifecycleActionHeartbeat": {
		required: []string{"LifecycleHookName", "AutoScalingGroupName"},
		params: []paramRule{{"LifecycleHookName", hookName, "ASG API: RecordLifecycleActionHeartbeat"},
			{"LifecycleActionToken", length(36, 36), "ASG API: RecordLifecycleActionHeartbeat, LifecycleActionToken"}},
	},
	"DescribeLifecycleHooks": {required: []string{"AutoScalingGroupName"}},
	"PutWarmPool": {
		required: []string{"AutoScalingGroupName"},
		params: []paramRule{
			{"PoolState", oneOf(enumValues(astypes.WarmPoolState("").Values())...), "asg:types WarmPoolState"},
			{"MinSize", intRange(0, 1<<31-1), "ASG API: PutWarmPool, MinSize: minimum value of 0"},
			{"MaxGroupPreparedCapacity", intRange(-1, 1<<31-1), "ASG API: PutWarmPool, MaxGroupPreparedCapacity: minimum value of -1"},
		},
	},
	"DescribeWarmPool": {required: []string{"AutoScalingGroupName"}},
	"DeleteWarmPool":   {required: []string{"AutoScalingGroupName"}},
	"SetInstanceProtection": {
		required: []string{"InstanceIds", "AutoScalingGroupName", "ProtectedFromScaleIn"},
		params:   []paramRule{{"InstanceIds.member.#", asgInstanceID, "ASG API: SetInstanceProtection"}},
		lists:    []listRule{{"InstanceIds.member", 50, "asg:SetInstanceProtection InstanceIds: up to 50 instances"}},
	},
	"AttachLoadBalancerTargetGroups": {
		required: []string{"AutoScalingGroupName", "TargetGroupARNs"},
		params:   []paramRule{{"TargetGroupARNs.member.#", length(1, 511), "ASG API: AttachLoadBalancerTargetGroups, TargetGroupARNs"}},
		lists:    []listRule{{"TargetGroupARNs.member", 10, "asg:AttachLoadBalancerTargetGroups: up to 10 target groups"}},
	},
	"AttachLoadBalancers": {
		required: []string{"AutoScalingGroupName", "LoadBalancerNames"},
		params:   []paramRule{{"LoadBalancerNames.member.#", length(1, 255), "ASG API: AttachLoadBalancers, LoadBalancerNames"}},
		lists:    []listRule{{"LoadBalancerNames.member", 10, "asg:AttachLoadBalancers: up to 10 load balancers"}},
	},
	"DescribeLoadBalancerTargetGroups": {required: []string{"AutoScalingGroupName"}},
	"DescribeLoadBalancers":            {required: []string{"AutoScalingGroupName"}},
}

// processesModel is SuspendProcesses' and ResumeProcesses': the processes
// are those the doc comment lists (asg:SuspendProcesses ScalingProcesses).
var processesModel = opModel{
	required: []string{"AutoScalingGroupName"},
	params: []paramRule{{"AutoScalingGroupName", asgName, "ASG API: SuspendProcesses"},
		{"ScalingProcesses.member.#", oneOf(scalingProcesses...), "asg:SuspendProcesses ScalingProcesses"}},
}

// ltName is a launch template name: 3 to 128 of [a-zA-Z0-9\(\)\.\-/_]+
// (EC2 API: CreateLaunchTemplateVersion, LaunchTemplateName).
var ltName = all(length(3, 128), matches(regexp.MustCompile(`^[a-zA-Z0-9().\-/_]+$`)))

// ec2Model holds the EC2 operations the fake serves.
var ec2Model = map[string]opModel{
	"CreateLaunchTemplateVersion": {
		required: []string{"LaunchTemplateData"},
		params: []paramRule{
			{"LaunchTemplateName", ltName, "EC2 API: CreateLaunchTemplateVersion, LaunchTemplateName"},
			{"VersionDescription", length(0, 255), "EC2 API: CreateLaunchTemplateVersion, VersionDescription: maximum length of 255"},
			{"ClientToken", length(0, 128), "ec2:CreateLaunchTemplateVersion ClientToken: Maximum 128 ASCII characters"},
		},
	},
	"DescribeLaunchTemplateVersions": {params: []paramRule{
		{"LaunchTemplateName", ltName, "EC2 API: DescribeLaunchTemplateVersions, LaunchTemplateName"},
		{"MaxResults", intRange(1, 200), "ec2:DescribeLaunchTemplateVersions MaxResults: between 1 and 200"},
	}},
	"ModifyLaunchTemplate": {params: []paramRule{{"LaunchTemplateName", ltName, "EC2 API: ModifyLaunchTemplate, LaunchTemplateName"}}},
	"DescribeInstances": {params: []paramRule{{"MaxResults", intRange(5, 1000), "EC2 API: DescribeInstances, MaxResults: 5 to 1000"}},
		whole: filterValues},
	"DescribeImages": {params: []paramRule{{"MaxResults", intRange(5, 1000), "EC2 API: DescribeImages, MaxResults: 5 to 1000"}}},
}

// maxFilterValues is how many filter values EC2 takes in one call, all
// filters together: more is refused 400 FilterLimitExceeded, "The
// request uses too many filters or too many filter values" (EC2 API:
// Error codes), "The maximum number of filter values specified on a
// single call is 200" (EC2's answer; pkg/cloud/aws describes instances
// 200 at a time for it). The model has no bound on Filter or its Values.
const maxFilterValues = 200

// filterValues refuses a request with more than maxFilterValues filter
// values (Filter.N.Value.M).
func filterValues(f form) error {
	n := 0
	for _, at := range instances(f, "Filter.#.Value") {
		n += len(memberIndexes(f, at))
	}
	if n > maxFilterValues {
		return ec2Err("FilterLimitExceeded", "The maximum number of filter values specified on a single call is %d", maxFilterValues)
	}
	return nil
}

// elbModel and elbv2Model hold the load balancer operations the fake
// serves: the members validators.go requires.
var (
	elbModel = map[string]opModel{
		"DescribeLoadBalancerAttributes":      {required: []string{"LoadBalancerName"}},
		"DescribeInstanceHealth":              {required: []string{"LoadBalancerName"}},
		"DeregisterInstancesFromLoadBalancer": {required: []string{"LoadBalancerName", "Instances"}},
	}
	elbv2Model = map[string]opModel{
		"DescribeTargetHealth":          {required: []string{"TargetGroupArn"}},
		"DeregisterTargets":             {required: []string{"TargetGroupArn", "Targets"}},
		"DescribeTargetGroupAttributes": {required: []string{"TargetGroupArn"}},
	}
)

// enumValues are an SDK enum's values as strings.
func enumValues[T ~string](vals []T) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out
}
