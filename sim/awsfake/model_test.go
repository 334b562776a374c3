package awsfake

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// post sends a raw query-protocol request, as a caller other than the SDK
// (whose validators would stop some of these on the client) would.
func post(t *testing.T, s *Server, params url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(s.URL, params)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, html.UnescapeString(string(b))
}

// asgRequest is a request of action with params, Auto Scaling's version.
func asgRequest(action string, kv ...string) url.Values {
	v := url.Values{"Action": {action}, "Version": {autoScalingVersion}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// withTags adds n tags to v, key k1, k2, ...
func withTags(v url.Values, n int) url.Values {
	for i := 1; i <= n; i++ {
		p := "Tags.member." + strconv.Itoa(i) + "."
		v.Set(p+"Key", fmt.Sprintf("k%d", i))
		v.Set(p+"Value", "v")
		v.Set(p+"ResourceId", "g1")
		v.Set(p+"ResourceType", "auto-scaling-group")
	}
	return v
}

// queryCase is a request, and the error code and member of its refusal
// ("" if it is within the model).
type queryCase struct {
	name         string
	req          url.Values
	code, member string
}

// queryCases are TestQueryModelRefuses' requests; lt is a launch template.
func queryCases(lt string) []queryCase {
	create := func(kv ...string) url.Values {
		return asgRequest("CreateAutoScalingGroup", append([]string{"MinSize", "0", "MaxSize", "1", "DesiredCapacity", "0",
			"LaunchTemplate.LaunchTemplateId", lt, "AvailabilityZones.member.1", "us-east-1a"}, kv...)...)
	}
	long := strings.Repeat("a", 256)
	return []queryCase{
		{"a group within the model", create("AutoScalingGroupName", "ok-1"), "", ""},
		{"50 tags", withTags(create("AutoScalingGroupName", "ok-2"), 50), "", ""},
		{"51 tags", withTags(create("AutoScalingGroupName", "g1"), 51), "ValidationError", "'tags.member'"},
		{"a colon in a new name", create("AutoScalingGroupName", "a:b"), "ValidationError", "'autoScalingGroupName'"},
		{"a space in a new name", create("AutoScalingGroupName", "a b"), "ValidationError", "'autoScalingGroupName'"},
		{"a name of 256", create("AutoScalingGroupName", long), "ValidationError", "length less than or equal to 255"},
		{"no MaxSize", asgRequest("CreateAutoScalingGroup", "AutoScalingGroupName", "g1", "MinSize", "0"), "ValidationError", "'maxSize'"},
		{"an unknown health check", create("AutoScalingGroupName", "g1", "HealthCheckType", "TCP"), "ValidationError", "'healthCheckType'"},
		{"an unknown termination policy", create("AutoScalingGroupName", "g1", "TerminationPolicies.member.1", "Random"), "ValidationError", "'terminationPolicies.1.member'"},
		{"a lifetime under a day", create("AutoScalingGroupName", "g1", "MaxInstanceLifetime", "3600"), "ValidationError", "greater than or equal to 86400"},
		{"11 target groups", withList(create("AutoScalingGroupName", "g1"), "TargetGroupARNs.member", 11), "ValidationError", "less than or equal to 10"},
		{"26 tags in one call", withTags(asgRequest("CreateOrUpdateTags"), 26), "ValidationError", "less than or equal to 25"},
		{"an aws: tag key", asgRequest("CreateOrUpdateTags", "Tags.member.1.Key", "aws:cloudformation:stack-name", "Tags.member.1.ResourceId", "ok-1", "Tags.member.1.ResourceType", "auto-scaling-group"), "ValidationError", "'tags.1.member.key'"},
		{"an AWS: tag value", asgRequest("CreateOrUpdateTags", "Tags.member.1.Key", "k", "Tags.member.1.Value", "AWS:x", "Tags.member.1.ResourceId", "ok-1", "Tags.member.1.ResourceType", "auto-scaling-group"), "ValidationError", "'tags.1.member.value'"},
		{"a tag key of 129", asgRequest("CreateOrUpdateTags", "Tags.member.1.Key", long[:129], "Tags.member.1.ResourceId", "ok-1", "Tags.member.1.ResourceType", "auto-scaling-group"), "ValidationError", "length less than or equal to 128"},
		{"a tag value of 257", asgRequest("CreateOrUpdateTags", "Tags.member.1.Key", "k", "Tags.member.1.Value", long+"a", "Tags.member.1.ResourceId", "ok-1", "Tags.member.1.ResourceType", "auto-scaling-group"), "ValidationError", "length less than or equal to 256"},
		{"no desired capacity", asgRequest("SetDesiredCapacity", "AutoScalingGroupName", "ok-1"), "ValidationError", "'desiredCapacity'"},
		{"101 records", asgRequest("DescribeAutoScalingGroups", "MaxRecords", "101"), "ValidationError", "'maxRecords'"},
		{"51 instances", withList(asgRequest("DescribeAutoScalingInstances"), "InstanceIds.member", 51), "ValidationError", "'instanceIds.member'"},
		{"an unknown process", asgRequest("SuspendProcesses", "AutoScalingGroupName", "ok-1", "ScalingProcesses.member.1", "Fly"), "ValidationError", "'scalingProcesses.1.member'"},
		{"a heartbeat of 7201", asgRequest("PutLifecycleHook", "AutoScalingGroupName", "ok-1", "LifecycleHookName", "h", "HeartbeatTimeout", "7201"), "ValidationError", "'heartbeatTimeout'"},
		{"a heartbeat of 29", asgRequest("PutLifecycleHook", "AutoScalingGroupName", "ok-1", "LifecycleHookName", "h", "HeartbeatTimeout", "29"), "ValidationError", "'heartbeatTimeout'"},
		{"a hook name with a space", asgRequest("PutLifecycleHook", "AutoScalingGroupName", "ok-1", "LifecycleHookName", "my hook"), "ValidationError", "'lifecycleHookName'"},
		{"an unknown default result", asgRequest("PutLifecycleHook", "AutoScalingGroupName", "ok-1", "LifecycleHookName", "h", "DefaultResult", "RETRY"), "ValidationError", "'defaultResult'"},
		{"an unknown pool state", asgRequest("PutWarmPool", "AutoScalingGroupName", "ok-1", "PoolState", "Frozen"), "ValidationError", "'poolState'"},
		{"a pool min of -1", asgRequest("PutWarmPool", "AutoScalingGroupName", "ok-1", "MinSize", "-1"), "ValidationError", "'minSize'"},
		{"an ec2 description of 256", url.Values{"Action": {"CreateLaunchTemplateVersion"}, "Version": {ec2Version}, "LaunchTemplateId": {lt},
			"LaunchTemplateData.ImageId": {"ami-2"}, "VersionDescription": {long}}, "InvalidParameterValue", "VersionDescription"},
		{"an ec2 version without data", url.Values{"Action": {"CreateLaunchTemplateVersion"}, "Version": {ec2Version}, "LaunchTemplateId": {lt}}, "MissingParameter", "LaunchTemplateData"},
		{"ec2 MaxResults of 4", url.Values{"Action": {"DescribeInstances"}, "Version": {ec2Version}, "MaxResults": {"4"}}, "InvalidParameterValue", "MaxResults"},
		{"200 filter values", filterRequest(200), "", ""},
		{"201 filter values", filterRequest(201), "FilterLimitExceeded", "is 200"},
		{"targets left out", url.Values{"Action": {"DeregisterTargets"}, "Version": {elbv2Version}, "TargetGroupArn": {"arn:x"}}, "ValidationError", "'targets'"},
	}
}

// TestQueryModelRefuses: a request that breaks the published model of its
// operation is refused in its service's shape before anything is done,
// and the same request within the model gets past the check.
func TestQueryModelRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{LaunchDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	lt := s.CreateLaunchTemplate("ng1", "ami-1", "")
	for _, tc := range queryCases(lt) {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, s, tc.req)
			if tc.code == "" {
				if status != http.StatusOK {
					t.Fatalf("refused: %d %s", status, body)
				}
				return
			}
			if status != http.StatusBadRequest || !strings.Contains(body, "<Code>"+tc.code+"</Code>") || !strings.Contains(body, tc.member) {
				t.Errorf("got %d %s, want 400 %s naming %s", status, body, tc.code, tc.member)
			}
		})
	}
	if groups := s.Groups(); strings.Join(groups, ",") != "ok-1,ok-2" {
		t.Errorf("groups %v: a refused create made one", groups)
	}
}

// withList adds n members to list in v.
func withList(v url.Values, list string, n int) url.Values {
	for i := 1; i <= n; i++ {
		v.Set(list+"."+strconv.Itoa(i), fmt.Sprintf("i-%017d", i))
	}
	return v
}

// TestEKSModelRefuses: CreateNodegroup and UpdateNodegroupConfig bodies
// that break EKS's model are refused with InvalidParameterException and
// nothing made or changed.
func TestEKSModelRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{LaunchDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.CreateEKSCluster("c1", "1.31")
	s.AddRelease(Release{KubernetesVersion: "1.31", ReleaseVersion: "1.31.2-20250201", ImageID: "ami-131"})
	ng := `"subnets":["subnet-us-east-1a"],"nodeRole":"arn:aws:iam::123456789012:role/n"`
	taints := make([]string, 51)
	for i := range taints {
		taints[i] = fmt.Sprintf(`{"key":"k%d","effect":"NO_SCHEDULE"}`, i)
	}
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name, path, body string
		code             string // "" means accepted
	}{
		{"a group within the model", "/clusters/c1/node-groups", `{"nodegroupName":"ok",` + ng + `,"labels":{"a":"b"},"taints":[{"key":"k","effect":"NO_EXECUTE"}]}`, ""},
		{"a name of 64", "/clusters/c1/node-groups", `{"nodegroupName":"` + long + `",` + ng + `}`, "InvalidParameterException"},
		{"a name starting with a hyphen", "/clusters/c1/node-groups", `{"nodegroupName":"-ng",` + ng + `}`, "InvalidParameterException"},
		{"an unknown AMI type", "/clusters/c1/node-groups", `{"nodegroupName":"g2",` + ng + `,"amiType":"AL3_x86_64"}`, "InvalidParameterException"},
		{"an unknown capacity type", "/clusters/c1/node-groups", `{"nodegroupName":"g2",` + ng + `,"capacityType":"CHEAP"}`, "InvalidParameterException"},
		{"a label key of 64", "/clusters/c1/node-groups", `{"nodegroupName":"g2",` + ng + `,"labels":{"` + long + `":"v"}}`, "InvalidParameterException"},
		{"an empty label value", "/clusters/c1/node-groups", `{"nodegroupName":"g2",` + ng + `,"labels":{"k":""}}`, "InvalidParameterException"},
		{"51 taints", "/clusters/c1/node-groups", `{"nodegroupName":"g2",` + ng + `,"taints":[` + strings.Join(taints, ",") + `]}`, "InvalidParameterException"},
		{"a Kubernetes taint effect", "/clusters/c1/node-groups/ok/update-config", `{"taints":{"addOrUpdateTaints":[{"key":"k","effect":"NoSchedule"}]}}`, "InvalidParameterException"},
		{"a taint value of 64", "/clusters/c1/node-groups/ok/update-config", `{"taints":{"addOrUpdateTaints":[{"key":"k","value":"` + long + `","effect":"NO_SCHEDULE"}]}}`, "InvalidParameterException"},
		{"an unknown strategy", "/clusters/c1/node-groups/ok/update-config", `{"updateConfig":{"maxUnavailable":1,"updateStrategy":"FAST"}}`, "InvalidParameterException"},
		{"a label to remove of 64", "/clusters/c1/node-groups/ok/update-config", `{"labels":{"removeLabels":["` + long + `"]}}`, "InvalidParameterException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(s.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := resp.Header.Get("X-Amzn-ErrorType")
			if tc.code == "" && resp.StatusCode != http.StatusOK {
				t.Fatalf("refused: %d %s %s", resp.StatusCode, got, b)
			}
			if tc.code != "" && (resp.StatusCode != http.StatusBadRequest || got != tc.code) {
				t.Errorf("got %d %s %s, want 400 %s", resp.StatusCode, got, b, tc.code)
			}
		})
	}
	if ngs := s.Nodegroups("c1"); strings.Join(ngs, ",") != "ok" {
		t.Errorf("node groups %v: a refused create made one", ngs)
	}
	if u := s.EKSUpdates("c1", "ok"); len(u) != 0 {
		t.Errorf("updates %v: a refused config update started one", u)
	}
}

// filterRequest is DescribeInstances with n values of the instance-id
// filter.
func filterRequest(n int) url.Values {
	v := url.Values{"Action": {"DescribeInstances"}, "Version": {ec2Version}, "Filter.1.Name": {"instance-id"}}
	for i := 1; i <= n; i++ {
		v.Set("Filter.1.Value."+strconv.Itoa(i), fmt.Sprintf("i-%d", i))
	}
	return v
}
