package aws

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestManagedGreenName: green's name comes from blue's (the first blue's,
// for a green of a green) and the target alone, as EKS takes names, so an
// interrupted run finds the green it made and two targets never share one.
func TestManagedGreenName(t *testing.T) {
	long := strings.Repeat("b", 70)
	for _, tc := range []struct {
		name, version, image string
		tags                 map[string]string
		want                 string
	}{
		{name: "an AL2023 release", version: "1.31/1.31.2-20250201", want: "web-1-31-2-20250201"},
		{name: "a release that does not carry its version", version: "1.31/1.32.0-abc123", want: "web-1-31-1-32-0-abc123"},
		{name: "a launch template version", version: "7", want: "web-lt7"},
		{name: "an image, whatever version it made", version: "9", image: "ami-0abc1234", want: "web-ami-0abc1234"},
		{name: "a green of an earlier run", version: "1.31/1.31.3-20250301", tags: map[string]string{TagBlue: "web"}, want: "web-1-31-3-20250301"},
		{name: "a long blue, shortened to keep the target", version: "3", want: strings.Repeat("b", 59) + "-lt3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blue := "web"
			if strings.HasPrefix(tc.want, "bbb") {
				blue = long
			}
			b := &ManagedBlueGreen{blue: &ManagedNodeGroup{group: &EKSNodegroup{Name: blue, Tags: tc.tags}, image: tc.image}}
			got := b.GreenName(tc.version)
			if got != tc.want || len(got) > maxNodegroupName {
				t.Errorf("GreenName(%q) = %q, want %q (at most %d characters)", tc.version, got, tc.want, maxNodegroupName)
			}
		})
	}
}

// TestRefuseGreenTarget: what CreateNodegroup would refuse for green is
// an input error before anything is called.
func TestRefuseGreenTarget(t *testing.T) {
	at := func(version, ami string) *ManagedNodeGroup {
		return &ManagedNodeGroup{group: &EKSNodegroup{Name: "web", Cluster: "c1", Version: version, AMIType: ami}, clusterVersion: "1.31"}
	}
	opts := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		m       *ManagedNodeGroup
		t       plan.CloudTarget
		wantErr string
	}{
		{name: "the control plane's version", m: at("1.30", "AL2023_x86_64_STANDARD"), t: plan.CloudTarget{Options: opts(optKubernetesVersion, "1.31")}},
		{name: "blue at the control plane's version already", m: at("1.31", "AL2023_x86_64_STANDARD")},
		{name: "another version", m: at("1.30", "AL2023_x86_64_STANDARD"), t: plan.CloudTarget{Options: opts(optKubernetesVersion, "1.30")}, wantErr: `takes only the control plane's Kubernetes version "1.31"`},
		{name: "blue below the control plane, no version", m: at("1.30", "AL2023_x86_64_STANDARD"), wantErr: "add --kubernetes-version 1.31"},
		{name: "EKS's update strategy", m: at("1.31", "AL2023_x86_64_STANDARD"), t: plan.CloudTarget{Options: opts(optUpdateStrategy, "MINIMAL")}, wantErr: "--update-strategy"},
		{name: "a custom AMI without a target", m: at("1.30", "CUSTOM"), wantErr: "give green's with --ami or --launch-template-version"},
		{name: "a custom AMI with its image", m: at("1.30", "CUSTOM"), t: plan.CloudTarget{Image: "ami-0abc1234"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.t.Strategy = "blue-green"
			err := refuseGreenTarget(tc.m, tc.t)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ae *Error
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ae) || !ae.Input() {
				t.Errorf("error %v, want an input error with %q", err, tc.wantErr)
			}
		})
	}
}

// greenJSON is green ng1-g of blue ng1 in status, tagged as its green
// (or, with mine false, as nobody's).
func greenJSON(status string, mine bool) reply {
	r := ngJSON(status)
	tags := `"tags":{"env":"prod"}`
	if mine {
		tags = `"tags":{"` + TagBlue + `":"ng1","` + TagRole + `":"` + RoleGreen + `"}`
	}
	r.body = strings.NewReplacer(`"nodegroupName":"ng1"`, `"nodegroupName":"ng1-g"`, `"tags":{"env":"prod"}`, tags,
		`"eks-ng1-abc"`, `"eks-ng1-g-abc"`).Replace(r.body)
	return r
}

// blueGreenOf is blue/green on managed node group ng1 (Auto Scaling group
// ng1) of cluster c1, with EKS answering eks.
func blueGreenOf(t *testing.T, eks map[string][]reply) (*ManagedBlueGreen, *fakeEKS, *fakeAWS) {
	t.Helper()
	e, f := newTestEKS(t, eks)
	replies := baseReplies()
	replies["DescribeAutoScalingGroups"] = func(v url.Values) reply {
		if v.Get("AutoScalingGroupNames.member.1") == "eks-ng1-g-abc" {
			return reply{200, strings.Replace(greenXML, ">ng1-v2<", ">eks-ng1-g-abc<", 1)}
		}
		return reply{200, groupXML}
	}
	p, q := newTestProvider(t, replies, Options{})
	m := &ManagedNodeGroup{eks: e, api: p, asg: &AutoScalingGroup{Name: "ng1"}, clusterVersion: "1.31",
		group: &EKSNodegroup{Name: "ng1", Cluster: "c1", Version: "1.31", AMIType: "AL2023_x86_64_STANDARD"}}
	return &ManagedBlueGreen{blue: m}, f, q
}

// TestManagedBlueGreenCreateGreen: green is made from blue as EKS
// describes it, with the target and sizes given, marked as blue's, and
// waited ACTIVE; a group of green's name that is not blue's green is
// refused, one being deleted too.
func TestManagedBlueGreenCreateGreen(t *testing.T) {
	inUse := eksErr(409, "ResourceInUseException", "NodeGroup already exists")
	for _, tc := range []struct {
		name    string
		eks     map[string][]reply
		version string
		wantErr string
	}{
		{name: "a release", version: "1.31/1.31.2-20250201", eks: map[string][]reply{
			"eks:DescribeNodegroup": {ngJSON("ACTIVE"), greenJSON("CREATING", true), greenJSON("ACTIVE", true)},
			"eks:CreateNodegroup":   {greenJSON("CREATING", true)}}},
		{name: "a launch template version", version: "7", eks: map[string][]reply{
			"eks:DescribeNodegroup": {ngJSON("ACTIVE"), greenJSON("ACTIVE", true)},
			"eks:CreateNodegroup":   {greenJSON("CREATING", true)}}},
		{name: "someone else's", version: "7", wantErr: `managed node group "ng1-g" already exists and is not a green group of "ng1"`, eks: map[string][]reply{
			"eks:DescribeNodegroup": {ngJSON("ACTIVE"), greenJSON("ACTIVE", false)},
			"eks:CreateNodegroup":   {inUse}}},
		{name: "green being deleted", version: "7", wantErr: `green managed node group "ng1-g" is being deleted`, eks: map[string][]reply{
			"eks:DescribeNodegroup": {ngJSON("ACTIVE"), greenJSON("DELETING", true)},
			"eks:CreateNodegroup":   {inUse}}},
		{name: "green failed", version: "7", wantErr: `managed node group "ng1-g" is CREATE_FAILED`, eks: map[string][]reply{
			"eks:DescribeNodegroup": {ngJSON("ACTIVE"), greenJSON("CREATE_FAILED", true)},
			"eks:CreateNodegroup":   {greenJSON("CREATING", true)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, f, _ := blueGreenOf(t, tc.eks)
			err := b.CreateGreen(context.Background(), "ng1-g", tc.version, plan.Sizes{Min: 1, Desired: 3, Max: 4})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.called("eks:CreateNodegroup") != 1 || f.called("eks:TagResource") != 1 {
				t.Errorf("calls %v, want one CreateNodegroup with tags", f.calls)
			}
		})
	}
}

// TestManagedBlueGreenDeleteGroup: a group is deleted and waited gone; one
// EKS deletes already is waited for, one gone is done.
func TestManagedBlueGreenDeleteGroup(t *testing.T) {
	gone := eksErr(404, "ResourceNotFoundException", "No node group found")
	for _, tc := range []struct {
		name        string
		describe    []reply
		wantDeletes int
	}{
		{"active", []reply{greenJSON("ACTIVE", true), greenJSON("DELETING", true), gone}, 1},
		{"deleting", []reply{greenJSON("DELETING", true), gone}, 0},
		{"gone", []reply{gone}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, f, _ := blueGreenOf(t, map[string][]reply{"eks:DescribeNodegroup": tc.describe, "eks:DeleteNodegroup": {greenJSON("DELETING", true)}})
			if err := b.DeleteGroup(context.Background(), "ng1-g"); err != nil {
				t.Fatal(err)
			}
			if n := f.called("eks:DeleteNodegroup"); n != tc.wantDeletes {
				t.Errorf("%d DeleteNodegroup calls, want %d", n, tc.wantDeletes)
			}
		})
	}
}

// TestManagedBlueGreenPool: sizes are EKS's, set through
// UpdateNodegroupConfig; machines are blue's, and green's once used.
func TestManagedBlueGreenPool(t *testing.T) {
	ctx := context.Background()
	b, f, _ := blueGreenOf(t, map[string][]reply{
		"eks:DescribeNodegroup":     {ngJSON("ACTIVE")},
		"eks:UpdateNodegroupConfig": {updateJSON("u1", "ConfigUpdate", "InProgress", "")},
		"eks:DescribeUpdate":        {updateJSON("u1", "ConfigUpdate", "Successful", "")},
	})
	if s, err := b.Sizes(ctx); err != nil || s != (plan.Sizes{Min: 1, Desired: 3, Max: 5}) {
		t.Errorf("sizes %+v, %v", s, err)
	}
	if err := b.SetGroupSizes(ctx, "ng1", plan.Sizes{Min: 1, Desired: 4, Max: 6}); err != nil || f.called("eks:UpdateNodegroupConfig") != 1 {
		t.Errorf("set sizes: %v, calls %v", err, f.calls)
	}
	if b.Name() != Name || b.GroupName() != "ng1" || !strings.Contains(b.Describe(), `"ng1"`) {
		t.Errorf("names %q %q %q", b.Name(), b.GroupName(), b.Describe())
	}
	nodes := []*corev1.Node{awsNode("n1", "i-1"), awsNode("n7", "i-7")}
	byNode, _, err := b.Machines(ctx, nodes)
	if err != nil || len(byNode) != 1 {
		t.Fatalf("blue's machines %v, %v; want n1's", byNode, err)
	}
	b2, _, _ := blueGreenOf(t, map[string][]reply{"eks:DescribeNodegroup": {greenJSON("ACTIVE", true)}})
	b2.UseGreen("ng1-g")
	if byNode, _, err := b2.Machines(ctx, nodes); err != nil || len(byNode) != 2 {
		t.Errorf("blue's and green's machines %v, %v; want n1's and n7's", byNode, err)
	}
	if !b.Current(plan.Machine{Version: "3"}, "3") || b.Current(plan.Machine{Version: "2"}, "3") {
		t.Error("Current compares versions")
	}
}
