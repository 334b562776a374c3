package awsfake

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const account = "123456789012"

// simulatePrincipalPolicy answers SimulatePrincipalPolicy for the role or
// user the caller is (IAM API Reference, SimulatePrincipalPolicy; the
// lengths and ranges of api_op_SimulatePrincipalPolicy.go and the
// reference: PolicySourceArn 20–2048 characters, ActionNames each 3–128,
// ResourceArns each 1–2048, ContextKeyName 5–256, MaxItems 1–1000;
// NoSuchEntity (404) for an entity that does not exist). "Each API in the
// ActionNames parameter is evaluated for each resource"; without
// ResourceArns the resource is "*". Called with s.mu held.
func (s *Server) simulatePrincipalPolicy(f form) ([]*node, error) {
	src := f.get("PolicySourceArn")
	if len(src) < 20 || len(src) > 2048 {
		return nil, validation("1 validation error detected: Value at 'policySourceArn' failed to satisfy constraint: Member must have length between 20 and 2048")
	}
	if src != s.principalOf(s.callerARN()) {
		return nil, &apiError{status: http.StatusNotFound, code: "NoSuchEntity", message: fmt.Sprintf("The entity %s cannot be found", src)}
	}
	if m := f.get("MaxItems"); m != "" {
		if n, err := strconv.Atoi(m); err != nil || n < 1 || n > 1000 {
			return nil, validation("1 validation error detected: Value at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000")
		}
	}
	actions, resources, ctx, err := simulationInput(f)
	if err != nil {
		return nil, err
	}
	results := make([]*node, 0, len(actions))
	for _, a := range actions {
		results = append(results, s.evaluationResult(a, resources, ctx))
	}
	return []*node{el("EvaluationResults", results...), boolean("IsTruncated", false)}, nil
}

// simulationInput reads ActionNames, ResourceArns and ContextEntries.
func simulationInput(f form) (actions, resources []string, ctx map[string][]string, err error) {
	for i := 1; f.get(fmt.Sprintf("ActionNames.member.%d", i)) != ""; i++ {
		a := f.get(fmt.Sprintf("ActionNames.member.%d", i))
		if len(a) < 3 || len(a) > 128 {
			return nil, nil, nil, validation("1 validation error detected: Value at 'actionNames' failed to satisfy constraint: Member must have length between 3 and 128")
		}
		actions = append(actions, a)
	}
	if len(actions) == 0 {
		return nil, nil, nil, validation("1 validation error detected: Value null at 'actionNames' failed to satisfy constraint: Member must not be null")
	}
	for i := 1; f.get(fmt.Sprintf("ResourceArns.member.%d", i)) != ""; i++ {
		r := f.get(fmt.Sprintf("ResourceArns.member.%d", i))
		if len(r) > 2048 {
			return nil, nil, nil, validation("1 validation error detected: Value at 'resourceArns' failed to satisfy constraint: Member must have length between 1 and 2048")
		}
		resources = append(resources, r)
	}
	ctx = map[string][]string{}
	for i := 1; f.get(fmt.Sprintf("ContextEntries.member.%d.ContextKeyName", i)) != ""; i++ {
		k := f.get(fmt.Sprintf("ContextEntries.member.%d.ContextKeyName", i))
		if len(k) < 5 || len(k) > 256 {
			return nil, nil, nil, validation("1 validation error detected: Value at 'contextEntries.%d.member.contextKeyName' failed to satisfy constraint: Member must have length between 5 and 256", i)
		}
		var values []string
		for j := 1; f[fmt.Sprintf("ContextEntries.member.%d.ContextKeyValues.member.%d", i, j)] != nil; j++ {
			values = append(values, f.get(fmt.Sprintf("ContextEntries.member.%d.ContextKeyValues.member.%d", i, j)))
		}
		ctx[k] = values
	}
	return actions, resources, ctx, nil
}

// evaluationResult is one EvaluationResult: without resources, the
// decision on "*"; with them, one ResourceSpecificResult a resource (its
// "MissingContextValues ... is used when a list of ARNs is included") and
// the top-level result "the most restrictive decision ... across all
// requested resources" with "the deduplicated set of missing context
// values" (types.EvaluationResult). EvalResourceName is "*": the fake
// knows no ARN templates.
func (s *Server) evaluationResult(action string, resources []string, ctx map[string][]string) *node {
	if len(resources) == 0 {
		d, missing := s.decide(Request{Action: action, Resource: "*", Context: ctx})
		return el("member", append([]*node{txt("EvalActionName", action), txt("EvalResourceName", "*"), txt("EvalDecision", string(d))}, keysNode(missing)...)...)
	}
	top, all := Allowed, []string(nil)
	var per []*node
	for _, r := range resources {
		d, missing := s.decide(Request{Action: action, Resource: r, Context: ctx})
		if d == ExplicitDeny || (d == ImplicitDeny && top == Allowed) {
			top = d
		}
		for _, k := range missing {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
		per = append(per, el("member", append([]*node{txt("EvalResourceName", r), txt("EvalResourceDecision", string(d))}, keysNode(missing)...)...))
	}
	kids := append([]*node{txt("EvalActionName", action), txt("EvalResourceName", "*"), txt("EvalDecision", string(top))}, keysNode(all)...)
	return el("member", append(kids, el("ResourceSpecificResults", per...))...)
}

// decide is the caller's decision on req: an action Deny took away is
// implicitly denied; without SetPolicy every other action is allowed.
func (s *Server) decide(req Request) (Decision, []string) {
	if slices.Contains(s.iam.denied, req.Action) {
		return ImplicitDeny, nil
	}
	if s.iam.policies == nil {
		return Allowed, nil
	}
	return Evaluate(s.iam.policies, req)
}

// keysNode is MissingContextValues, none without keys.
func keysNode(keys []string) []*node {
	if len(keys) == 0 {
		return nil
	}
	members := make([]*node, 0, len(keys))
	for _, k := range keys {
		members = append(members, txt("member", k))
	}
	return []*node{el("MissingContextValues", members...)}
}

// roleName is GetRole's RoleName constraint (IAM API Reference, GetRole:
// "Length Constraints: Minimum length of 1. Maximum length of 64.
// Pattern: [\w+=,.@-]+").
var roleName = regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)

// getRole answers GetRole: the Role's Path, RoleName, RoleId, Arn and
// CreateDate (the members the API Reference's Role marks required).
// Called with s.mu held.
func (s *Server) getRole(f form) ([]*node, error) {
	name := f.get("RoleName")
	if !roleName.MatchString(name) {
		return nil, validation("1 validation error detected: Value '%s' at 'roleName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+", name)
	}
	arn := s.roleNamed(name)
	if arn == "" {
		return nil, &apiError{status: http.StatusNotFound, code: "NoSuchEntity", message: fmt.Sprintf("The role with name %s cannot be found.", name)}
	}
	_, res, _ := strings.Cut(arn, ":role")
	path := res[:strings.LastIndex(res, "/")+1]
	return []*node{el("Role", txt("Path", path), txt("RoleName", name), txt("RoleId", "AROAEXAMPLE"+strings.ToUpper(name[:min(len(name), 8)])),
		txt("Arn", arn), txt("CreateDate", "2025-01-01T00:00:00Z"))}, nil
}

// roleNamed is the ARN of the account's role named name: one AddRole
// added, else the caller's own role at "/"; "" when there is none.
func (s *Server) roleNamed(name string) string {
	for _, r := range s.iam.roles {
		if strings.HasSuffix(r, "/"+name) {
			return r
		}
	}
	if role, ok := assumedRole(s.callerARN()); ok && role == name {
		return "arn:aws:iam::" + account + ":role/" + name
	}
	return ""
}

// assumedRole is the role name of an assumed role's session ARN
// (arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION).
func assumedRole(caller string) (string, bool) {
	_, res, ok := strings.Cut(caller, ":assumed-role/")
	if !ok {
		return "", false
	}
	role, _, _ := strings.Cut(res, "/")
	return role, true
}

// principalOf is the IAM entity behind a caller's ARN: an assumed role's
// session is its role's, path included. Called with s.mu held.
func (s *Server) principalOf(caller string) string {
	role, ok := assumedRole(caller)
	if !ok {
		return caller
	}
	return s.roleNamed(role)
}

// authorisedOn is the request IAM authorises a call on: its action, the
// resource the Service Authorization Reference gives the action (Auto
// Scaling's group, the launch template, the target group, the role) and
// the context keys of that resource's tags (Auto Scaling User Guide,
// "Control access based on tags": aws:ResourceTag and
// autoscaling:ResourceTag; aws:RequestTag and aws:TagKeys for the tags a
// request carries). Describe actions take no resource ("*"). ok is false
// for a call whose resource the fake does not name (EKS, SSM, EC2's
// launches on Auto Scaling's behalf): it is judged by Deny alone.
// Called with s.mu held.
func (s *Server) authorisedOn(action string, r *http.Request) (Request, bool) {
	f := form(r.PostForm)
	service, op, _ := strings.Cut(action, ":")
	req := Request{Action: action, Resource: "*", Context: map[string][]string{}}
	switch {
	case strings.HasPrefix(op, "Describe"):
		return req, service != "eks"
	case service == "autoscaling":
		return s.groupRequest(req, op, f)
	case op == "CreateLaunchTemplateVersion", op == "ModifyLaunchTemplate":
		req.Resource = fmt.Sprintf("arn:aws:ec2:%s:%s:launch-template/%s", s.opts.Region, account, f.get("LaunchTemplateId"))
		return req, f.get("LaunchTemplateId") != ""
	case op == "DeregisterTargets":
		req.Resource = f.get("TargetGroupArn")
		return req, true
	case op == "DeregisterInstancesFromLoadBalancer":
		req.Resource = fmt.Sprintf("arn:aws:elasticloadbalancing:%s:%s:loadbalancer/%s", s.opts.Region, account, f.get("LoadBalancerName"))
		return req, true
	case action == "iam:SimulatePrincipalPolicy":
		req.Resource = f.get("PolicySourceArn")
		return req, true
	case action == "iam:GetRole":
		req.Resource = cmp.Or(s.roleNamed(f.get("RoleName")), "arn:aws:iam::"+account+":role/"+f.get("RoleName"))
		return req, true
	}
	return req, false
}

// groupRequest is an Auto Scaling call's request: on the group it names
// (by AutoScalingGroupName, the instance's group, or the tag's resource)
// with its tags, and the tags the call adds.
func (s *Server) groupRequest(req Request, op string, f form) (Request, bool) {
	name := f.get("AutoScalingGroupName")
	if in := s.instances[f.get("InstanceId")]; name == "" && in != nil {
		name = in.Group
	}
	if name == "" {
		name = f.get("Tags.member.1.ResourceId")
	}
	if name == "" {
		return req, op == "DescribeAccountLimits"
	}
	req.Resource = s.arn(&group{GroupSpec: GroupSpec{Name: name}})
	if g := s.groups[name]; g != nil && op != "CreateAutoScalingGroup" {
		for k, v := range g.Tags {
			req.Context["aws:ResourceTag/"+k] = []string{v}
			req.Context["autoscaling:ResourceTag/"+k] = []string{v}
		}
	}
	for i := 1; f.get(fmt.Sprintf("Tags.member.%d.Key", i)) != ""; i++ {
		k := f.get(fmt.Sprintf("Tags.member.%d.Key", i))
		req.Context["aws:RequestTag/"+k] = []string{f.get(fmt.Sprintf("Tags.member.%d.Value", i))}
		req.Context["aws:TagKeys"] = append(req.Context["aws:TagKeys"], k)
	}
	return req, true
}
