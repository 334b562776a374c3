package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

const (
	createASGXML = `<CreateAutoScalingGroupResponse ` + asgNS + `><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></CreateAutoScalingGroupResponse>`
	deleteASGXML = `<DeleteAutoScalingGroupResponse ` + asgNS + `><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DeleteAutoScalingGroupResponse>`
)

func limitsXML(n, max int) string {
	return fmt.Sprintf(`<DescribeAccountLimitsResponse %s><DescribeAccountLimitsResult>
<MaxNumberOfAutoScalingGroups>%d</MaxNumberOfAutoScalingGroups><NumberOfAutoScalingGroups>%d</NumberOfAutoScalingGroups>
<MaxNumberOfLaunchConfigurations>200</MaxNumberOfLaunchConfigurations><NumberOfLaunchConfigurations>0</NumberOfLaunchConfigurations>
</DescribeAccountLimitsResult></DescribeAccountLimitsResponse>`, asgNS, max, n)
}

// memberXML is g as DescribeAutoScalingGroups describes it (no instances).
func memberXML(g AutoScalingGroup) string {
	var b strings.Builder
	el := func(name, v string) { fmt.Fprintf(&b, "<%s>%s</%s>", name, v, name) }
	list := func(name string, vs []string) {
		if len(vs) > 0 {
			b.WriteString("<" + name + ">")
			for _, v := range vs {
				el("member", v)
			}
			b.WriteString("</" + name + ">")
		}
	}
	b.WriteString("<member>")
	el("AutoScalingGroupName", g.Name)
	if g.LaunchTemplateID != "" {
		lt := "<LaunchTemplateId>" + g.LaunchTemplateID + "</LaunchTemplateId><Version>" + g.spec + "</Version>"
		if g.mixed {
			el("MixedInstancesPolicy", "<LaunchTemplate><LaunchTemplateSpecification>"+lt+"</LaunchTemplateSpecification></LaunchTemplate>")
		} else {
			el("LaunchTemplate", lt)
		}
	}
	el("MinSize", strconv.Itoa(int(g.Min)))
	el("MaxSize", strconv.Itoa(int(g.Max)))
	el("DesiredCapacity", strconv.Itoa(int(g.Desired)))
	list("AvailabilityZones", g.Zones)
	if g.VPCZoneIdentifier != "" {
		el("VPCZoneIdentifier", g.VPCZoneIdentifier)
	}
	if g.HealthCheckType != "" {
		el("HealthCheckType", g.HealthCheckType)
	}
	el("HealthCheckGracePeriod", strconv.Itoa(int(g.HealthCheckGracePeriod)))
	el("DefaultCooldown", strconv.Itoa(int(g.DefaultCooldown)))
	list("TerminationPolicies", g.TerminationPolicies)
	list("TargetGroupARNs", g.TargetGroups)
	list("LoadBalancerNames", g.LoadBalancers)
	el("CapacityRebalance", strconv.FormatBool(g.CapacityRebalance))
	el("NewInstancesProtectedFromScaleIn", strconv.FormatBool(g.NewInstancesProtectedFromScaleIn))
	if g.Deleting {
		el("Status", statusDeleting)
	}
	if len(g.Tags) > 0 {
		b.WriteString("<Tags>")
		for _, k := range slices.Sorted(maps.Keys(g.Tags)) {
			t := g.Tags[k]
			fmt.Fprintf(&b, "<member><ResourceId>%s</ResourceId><ResourceType>auto-scaling-group</ResourceType><Key>%s</Key><Value>%s</Value><PropagateAtLaunch>%t</PropagateAtLaunch></member>",
				g.Name, k, t.Value, t.PropagateAtLaunch)
		}
		b.WriteString("</Tags>")
	}
	b.WriteString("</member>")
	return b.String()
}

// formGroup is the group a CreateAutoScalingGroup form asks for, as Auto
// Scaling would then describe it.
func formGroup(v url.Values) AutoScalingGroup {
	n := func(k string) int32 { i, _ := strconv.Atoi(v.Get(k)); return int32(i) }
	members := func(prefix string) []string {
		var out []string
		for i := 1; v.Has(prefix + strconv.Itoa(i)); i++ {
			out = append(out, v.Get(prefix+strconv.Itoa(i)))
		}
		return out
	}
	g := AutoScalingGroup{
		Name: v.Get("AutoScalingGroupName"), LaunchTemplateID: v.Get("LaunchTemplate.LaunchTemplateId"), spec: v.Get("LaunchTemplate.Version"),
		Min: n("MinSize"), Desired: n("DesiredCapacity"), Max: n("MaxSize"),
		Zones: members("AvailabilityZones.member."), VPCZoneIdentifier: v.Get("VPCZoneIdentifier"),
		HealthCheckType: v.Get("HealthCheckType"), HealthCheckGracePeriod: n("HealthCheckGracePeriod"), DefaultCooldown: n("DefaultCooldown"),
		TerminationPolicies: members("TerminationPolicies.member."),
		TargetGroups:        members("TargetGroupARNs.member."), LoadBalancers: members("LoadBalancerNames.member."),
		CapacityRebalance: v.Get("CapacityRebalance") == "true", NewInstancesProtectedFromScaleIn: v.Get("NewInstancesProtectedFromScaleIn") == "true",
	}
	for i := 1; v.Has("Tags.member." + strconv.Itoa(i) + ".Key"); i++ {
		p := "Tags.member." + strconv.Itoa(i) + "."
		if g.Tags == nil {
			g.Tags = map[string]Tag{}
		}
		g.Tags[v.Get(p+"Key")] = Tag{Value: v.Get(p + "Value"), PropagateAtLaunch: v.Get(p+"PropagateAtLaunch") == "true"}
	}
	return g
}

// fakeGroups is the Auto Scaling side of the fake for the blue/green calls:
// it describes the groups it holds (others go to the replies it was
// installed over), creates them from the form, and marks deleted ones
// "Delete in progress".
type fakeGroups struct {
	mu     sync.Mutex
	groups map[string]AutoScalingGroup
}

func (s *fakeGroups) install(r map[string]func(url.Values) reply) {
	describe := r["DescribeAutoScalingGroups"]
	r["DescribeAutoScalingGroups"] = func(v url.Values) reply {
		s.mu.Lock()
		g, ok := s.groups[v.Get("AutoScalingGroupNames.member.1")]
		s.mu.Unlock()
		if !ok {
			return describe(v)
		}
		return reply{200, `<DescribeAutoScalingGroupsResponse ` + asgNS + `><DescribeAutoScalingGroupsResult><AutoScalingGroups>` +
			memberXML(g) + `</AutoScalingGroups></DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>`}
	}
	r["CreateAutoScalingGroup"] = func(v url.Values) reply {
		s.mu.Lock()
		defer s.mu.Unlock()
		name := v.Get("AutoScalingGroupName")
		if _, ok := s.groups[name]; ok {
			return asgError("AlreadyExists", "AutoScalingGroup by this name already exists - A group with the name "+name+" already exists")
		}
		s.groups[name] = formGroup(v)
		return reply{200, createASGXML}
	}
	r["DeleteAutoScalingGroup"] = func(v url.Values) reply {
		s.mu.Lock()
		defer s.mu.Unlock()
		name := v.Get("AutoScalingGroupName")
		g, ok := s.groups[name]
		if !ok {
			return asgError("ValidationError", "AutoScalingGroup name not found - AutoScalingGroup '"+name+"' not found")
		}
		g.Deleting = true
		s.groups[name] = g
		return reply{200, deleteASGXML}
	}
	// Every version asked for exists, with its own number.
	r["DescribeLaunchTemplateVersions"] = func(v url.Values) reply {
		n := v.Get("LaunchTemplateVersion.1")
		if !isNumber(n) {
			n = "2"
		}
		return reply{200, `<DescribeLaunchTemplateVersionsResponse ` + ec2NS + `><launchTemplateVersionSet><item><launchTemplateId>lt-1</launchTemplateId><versionNumber>` +
			n + `</versionNumber><launchTemplateData><imageId>ami-new</imageId></launchTemplateData></item></launchTemplateVersionSet></DescribeLaunchTemplateVersionsResponse>`}
	}
	r["DescribeAccountLimits"] = fixed(200, limitsXML(12, 500))
}

// blueGroup is ng1 with everything a clone copies: it was itself the green
// of ng0, and CloudFormation made it.
func blueGroup() AutoScalingGroup {
	return AutoScalingGroup{
		Name: "ng1", Min: 1, Max: 4, Desired: 3, Zones: []string{"us-east-1a", "us-east-1b"},
		LaunchTemplateID: "lt-1", LaunchTemplateVersion: "2", spec: "2",
		VPCZoneIdentifier: "subnet-a,subnet-b", HealthCheckType: "ELB", HealthCheckGracePeriod: 120, DefaultCooldown: 60,
		TerminationPolicies: []string{"OldestLaunchTemplate", "Default"}, CapacityRebalance: true, NewInstancesProtectedFromScaleIn: true,
		TargetGroups:  []string{"arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef"},
		LoadBalancers: []string{"web-clb"},
		Tags: map[string]Tag{
			"Name":                              {Value: "ng1-node", PropagateAtLaunch: true},
			"k8s.io/cluster-autoscaler/enabled": {Value: "true"},
			"aws:cloudformation:stack-name":     {Value: "eks-ng1", PropagateAtLaunch: true},
			TagBlue:                             {Value: "ng0", PropagateAtLaunch: true},
			TagRole:                             {Value: RoleGreen, PropagateAtLaunch: true},
		},
	}
}

// greenGroup is the group CloneGroup makes from blueGroup for version 3.
func greenGroup() AutoScalingGroup {
	g := blueGroup()
	g.Name, g.LaunchTemplateVersion, g.spec, g.Zones = "ng1-v3", "3", "3", nil // zones come from the subnets
	g.Tags = map[string]Tag{
		"Name":                              {Value: "ng1-node", PropagateAtLaunch: true},
		"k8s.io/cluster-autoscaler/enabled": {Value: "true"},
		TagBlue:                             {Value: "ng1", PropagateAtLaunch: true},
		TagRole:                             {Value: RoleGreen, PropagateAtLaunch: true},
	}
	return g
}

func newGroupsProvider(t *testing.T, groups ...AutoScalingGroup) (*Client, *fakeAWS, map[string]func(url.Values) reply) {
	t.Helper()
	s := &fakeGroups{groups: map[string]AutoScalingGroup{}}
	for _, g := range groups {
		s.groups[g.Name] = g
	}
	r := baseReplies()
	r["DescribeAutoScalingGroups"] = fixed(200, noGroupXML) // only the groups given
	s.install(r)
	p, f := newTestProvider(t, r, Options{})
	return p, f, r
}

func wantError(t *testing.T, err error, want string, input bool) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
	var e *Error
	if got := errors.As(err, &e) && e.Input(); got != input {
		t.Fatalf("input error %v, want %v", got, input)
	}
}

func TestGroupReadsWhatACloneNeeds(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    AutoScalingGroup
	}{
		{"everything", blueGroup()},
		{"being deleted, no tags", AutoScalingGroup{Name: "ng1", Min: 0, Max: 2, LaunchTemplateID: "lt-1", LaunchTemplateVersion: "2", spec: "2", Deleting: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newGroupsProvider(t, tc.g)
			got, err := p.Group(context.Background(), "ng1")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.g) {
				t.Fatalf("group:\n got %+v\nwant %+v", *got, tc.g)
			}
		})
	}
}

func TestGreenName(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		name, blue, version, want string
	}{
		{"short", "ng1", "3", "ng1-v3"},
		{"a name alone, with no blue tag to go back to", "ng1-v3", "4", "ng1-v3-v4"},
		{"fits exactly", long[:252], "3", long[:252] + "-v3"},
		{"trimmed, suffix kept", long, "12", long[:251] + "-v12"},
		// 2-byte characters: the cut must not split one.
		{"trimmed at a character", "n" + strings.Repeat("é", 150), "3", "n" + strings.Repeat("é", 125) + "-v3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := GreenName(tc.blue, tc.version)
			if got != tc.want || len(got) > maxGroupName || !utf8.ValidString(got) {
				t.Fatalf("GreenName: got %q (%d bytes), want %q", got, len(got), tc.want)
			}
		})
	}
}

func TestCheckGroupQuota(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reply   reply
		wantErr string
		input   bool
	}{
		{name: "room", reply: reply{200, limitsXML(12, 500)}},
		{name: "one left", reply: reply{200, limitsXML(499, 500)}},
		{name: "full", reply: reply{200, limitsXML(500, 500)}, input: true,
			wantErr: `region "us-east-1" has 500 Auto Scaling groups, the account's quota of 500, and blue/green needs one more; delete an unused group or have the quota raised, or use another --strategy`},
		{name: "over", reply: reply{200, limitsXML(501, 500)}, input: true,
			wantErr: `region "us-east-1" has 501 Auto Scaling groups, the account's quota of 500, and blue/green needs one more; delete an unused group or have the quota raised, or use another --strategy`},
		{name: "no limit reported", reply: reply{200, `<DescribeAccountLimitsResponse ` + asgNS + `><DescribeAccountLimitsResult/></DescribeAccountLimitsResponse>`}},
		{name: "denied", reply: asgError("AccessDenied", "User is not authorized to perform: autoscaling:DescribeAccountLimits."),
			wantErr: `cannot describe the Auto Scaling account limits in region "us-east-1": AccessDenied: User is not authorized to perform: autoscaling:DescribeAccountLimits`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f, _ := newGroupsProvider(t)
			f.set("DescribeAccountLimits", fixed(tc.reply.status, tc.reply.body))
			err := p.CheckGroupQuota(context.Background())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, tc.wantErr, tc.input)
		})
	}
}

func TestCloneGroup(t *testing.T) {
	mixed := blueGroup()
	mixed.mixed = true
	launchConfig := blueGroup()
	launchConfig.LaunchTemplateID, launchConfig.LaunchTemplateVersion, launchConfig.spec = "", "", ""
	deleting := blueGroup()
	deleting.Deleting = true
	noVPC := blueGroup()
	noVPC.VPCZoneIdentifier, noVPC.Tags = "", nil
	noVPCGreen := greenGroup()
	noVPCGreen.VPCZoneIdentifier, noVPCGreen.Zones = "", noVPC.Zones
	noVPCGreen.Tags = map[string]Tag{TagBlue: {Value: "ng1", PropagateAtLaunch: true}, TagRole: {Value: RoleGreen, PropagateAtLaunch: true}}
	tooMany := blueGroup()
	for i := range 49 {
		tooMany.Tags[fmt.Sprintf("t%02d", i)] = Tag{Value: "x"}
	}
	someoneElses := greenGroup()
	delete(someoneElses.Tags, TagBlue)
	otherBlues := greenGroup()
	otherBlues.Tags[TagBlue] = Tag{Value: "ng2", PropagateAtLaunch: true}
	otherVersion := greenGroup()
	otherVersion.spec, otherVersion.LaunchTemplateVersion = "4", "4"
	greenDeleting := greenGroup()
	greenDeleting.Deleting = true

	created := []string{"DescribeAutoScalingGroups", "CreateAutoScalingGroup", "DescribeAutoScalingGroups", "DescribeLaunchTemplateVersions"}
	for _, tc := range []struct {
		name           string
		blue           AutoScalingGroup
		existing       []AutoScalingGroup
		create         func(url.Values) reply // instead of the fake's
		green, version string
		want           *AutoScalingGroup
		wantForm       url.Values // what CreateAutoScalingGroup is sent, exactly
		wantErr        string
		input          bool
		wantActions    []string // after blue is read
	}{
		{name: "copies blue", blue: blueGroup(), green: "ng1-v3", version: "3", want: ptr(greenGroup()), wantActions: created,
			wantForm: url.Values{
				"Action": {"CreateAutoScalingGroup"}, "Version": {"2011-01-01"},
				"AutoScalingGroupName": {"ng1-v3"}, "LaunchTemplate.LaunchTemplateId": {"lt-1"}, "LaunchTemplate.Version": {"3"},
				"MinSize": {"1"}, "DesiredCapacity": {"3"}, "MaxSize": {"4"},
				"VPCZoneIdentifier": {"subnet-a,subnet-b"}, // and no AvailabilityZones: the subnets decide
				"HealthCheckType":   {"ELB"}, "HealthCheckGracePeriod": {"120"}, "DefaultCooldown": {"60"},
				"TerminationPolicies.member.1": {"OldestLaunchTemplate"}, "TerminationPolicies.member.2": {"Default"},
				"CapacityRebalance": {"true"}, "NewInstancesProtectedFromScaleIn": {"true"},
				// Green serves blue's load balancers.
				"TargetGroupARNs.member.1":   {"arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef"},
				"LoadBalancerNames.member.1": {"web-clb"},
				// Sorted by key; aws: left out, blue's own green marks replaced.
				"Tags.member.1.Key": {"Name"}, "Tags.member.1.Value": {"ng1-node"}, "Tags.member.1.PropagateAtLaunch": {"true"},
				"Tags.member.1.ResourceId": {"ng1-v3"}, "Tags.member.1.ResourceType": {"auto-scaling-group"},
				"Tags.member.2.Key": {"k8s.io/cluster-autoscaler/enabled"}, "Tags.member.2.Value": {"true"}, "Tags.member.2.PropagateAtLaunch": {"false"},
				"Tags.member.2.ResourceId": {"ng1-v3"}, "Tags.member.2.ResourceType": {"auto-scaling-group"},
				"Tags.member.3.Key": {TagBlue}, "Tags.member.3.Value": {"ng1"}, "Tags.member.3.PropagateAtLaunch": {"true"},
				"Tags.member.3.ResourceId": {"ng1-v3"}, "Tags.member.3.ResourceType": {"auto-scaling-group"},
				"Tags.member.4.Key": {TagRole}, "Tags.member.4.Value": {RoleGreen}, "Tags.member.4.PropagateAtLaunch": {"true"},
				"Tags.member.4.ResourceId": {"ng1-v3"}, "Tags.member.4.ResourceType": {"auto-scaling-group"},
			}},
		{name: "zones without a VPC", blue: noVPC, green: "ng1-v3", version: "3", want: &noVPCGreen, wantActions: created},
		{name: "re-run finds its green", blue: blueGroup(), existing: []AutoScalingGroup{greenGroup()}, green: "ng1-v3", version: "3", want: ptr(greenGroup()),
			wantActions: []string{"DescribeAutoScalingGroups", "DescribeLaunchTemplateVersions"}},
		// The create went through but its answer was lost (the SDK's retry
		// meets AlreadyExists): the group is recognised by its tags.
		{name: "lost answer", blue: blueGroup(), green: "ng1-v3", version: "3", want: ptr(greenGroup()),
			create: func(url.Values) reply {
				return asgError("AlreadyExists", "AutoScalingGroup by this name already exists")
			},
			wantActions: []string{"DescribeAutoScalingGroups", "CreateAutoScalingGroup", "DescribeAutoScalingGroups", "DescribeLaunchTemplateVersions"}},
		{name: "name taken", blue: blueGroup(), existing: []AutoScalingGroup{someoneElses}, green: "ng1-v3", version: "3", input: true,
			wantErr:     `auto scaling group "ng1-v3" already exists and is not a green group of "ng1"; delete it or choose another name with --green-asg`,
			wantActions: []string{"DescribeAutoScalingGroups"}},
		{name: "another blue's green", blue: blueGroup(), existing: []AutoScalingGroup{otherBlues}, green: "ng1-v3", version: "3", input: true,
			wantErr:     `auto scaling group "ng1-v3" already exists and is not a green group of "ng1"; delete it or choose another name with --green-asg`,
			wantActions: []string{"DescribeAutoScalingGroups"}},
		{name: "green of another version", blue: blueGroup(), existing: []AutoScalingGroup{otherVersion}, green: "ng1-v3", version: "3", input: true,
			wantErr:     `green Auto Scaling group "ng1-v3", made earlier from "ng1", launches launch template "lt-1" version "4", not version "3" of "lt-1"; delete it or choose another name with --green-asg`,
			wantActions: []string{"DescribeAutoScalingGroups"}},
		{name: "green being deleted", blue: blueGroup(), existing: []AutoScalingGroup{greenDeleting}, green: "ng1-v3", version: "3", input: true,
			wantErr:     `green Auto Scaling group "ng1-v3" is being deleted; run again once it is gone, or choose another name with --green-asg`,
			wantActions: []string{"DescribeAutoScalingGroups"}},
		{name: "mixed instances", blue: mixed, green: "ng1-v3", version: "3", input: true,
			wantErr: `auto scaling group "ng1" takes its launch template from a mixed instances policy, which a green group cannot copy; use another --strategy`},
		{name: "launch configuration", blue: launchConfig, green: "ng1-v3", version: "3", input: true,
			wantErr: `auto scaling group "ng1" uses a launch configuration, not a launch template; only launch templates are supported`},
		{name: "blue being deleted", blue: deleting, green: "ng1-v3", version: "3", input: true,
			wantErr:     `auto scaling group "ng1" is being deleted, so there is nothing to clone; check --asg`,
			wantActions: []string{"DescribeAutoScalingGroups"}},
		{name: "version not a number", blue: blueGroup(), green: "ng1-vlatest", version: "$Latest", input: true,
			wantErr: `invalid launch template version "$Latest" for green Auto Scaling group "ng1-vlatest": want a number; check --launch-template-version`},
		{name: "green is blue", blue: blueGroup(), green: "ng1", version: "3", input: true,
			wantErr: `green Auto Scaling group "ng1" is the blue group itself; choose another name with --green-asg`},
		{name: "no green name", blue: blueGroup(), version: "3", input: true,
			wantErr: `no name for the green Auto Scaling group; use --green-asg`},
		{name: "green name too long", blue: blueGroup(), green: strings.Repeat("g", 256), version: "3", input: true,
			wantErr: `green Auto Scaling group name "` + strings.Repeat("g", 256) + `" is longer than 255 characters; choose a shorter one with --green-asg`},
		{name: "too many tags", blue: tooMany, green: "ng1-v3", version: "3", input: true,
			wantErr: `auto scaling group "ng1" has 51 tags to copy; with the 2 that mark the green group that is 53, over Auto Scaling's 50; remove some from "ng1" or use another --strategy`},
		{name: "quota reached meanwhile", blue: blueGroup(), green: "ng1-v3", version: "3", input: true,
			create:      func(url.Values) reply { return asgError("LimitExceeded", "You have reached your limit of 500 groups.") },
			wantErr:     `cannot create Auto Scaling group "ng1-v3": LimitExceeded: You have reached your limit of 500 groups; delete an unused group or have the quota raised, or use another --strategy`,
			wantActions: []string{"DescribeAutoScalingGroups", "CreateAutoScalingGroup"}},
		{name: "refused", blue: blueGroup(), green: "ng1-v3", version: "3",
			create:      func(url.Values) reply { return asgError("ValidationError", "The subnet ID 'subnet-a' does not exist") },
			wantErr:     `cannot create Auto Scaling group "ng1-v3" as a copy of "ng1": ValidationError: The subnet ID 'subnet-a' does not exist`,
			wantActions: []string{"DescribeAutoScalingGroups", "CreateAutoScalingGroup"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p, f, r := newGroupsProvider(t, append([]AutoScalingGroup{tc.blue}, tc.existing...)...)
			if tc.create != nil {
				made, answer := r["CreateAutoScalingGroup"], tc.create
				f.set("CreateAutoScalingGroup", func(v url.Values) reply {
					if tc.want != nil {
						made(v) // the group is there, whatever the answer
					}
					return answer(v)
				})
			}
			blue, err := p.Group(ctx, "ng1")
			if err != nil {
				t.Fatal(err)
			}
			before := len(f.actions())
			got, err := p.CloneGroup(ctx, blue, tc.green, tc.version)
			if tc.wantErr != "" {
				wantError(t, err, tc.wantErr, tc.input)
			} else if err != nil {
				t.Fatal(err)
			} else if !reflect.DeepEqual(*got, *tc.want) {
				t.Fatalf("green:\n got %+v\nwant %+v", *got, *tc.want)
			}
			if acts := f.actions()[before:]; !slices.Equal(acts, tc.wantActions) {
				t.Fatalf("calls %v, want %v", acts, tc.wantActions)
			}
			if tc.wantForm != nil {
				if form := f.last("CreateAutoScalingGroup"); !reflect.DeepEqual(form, tc.wantForm) {
					t.Fatalf("create form:\n got %v\nwant %v", sortedForm(form), sortedForm(tc.wantForm))
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func sortedForm(v url.Values) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s=%s", k, strings.Join(v[k], ","))
	}
	return b.String()
}

// A second call after a complete first one changes nothing and returns
// the same group.
func TestCloneGroupTwice(t *testing.T) {
	ctx := context.Background()
	p, f, _ := newGroupsProvider(t, blueGroup())
	blue, err := p.Group(ctx, "ng1")
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.CloneGroup(ctx, blue, GreenName(blue.Name, "3"), "3")
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.CloneGroup(ctx, blue, GreenName(blue.Name, "3"), "3")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("second clone:\n got %+v\nwant %+v", second, first)
	}
	var creates int
	for _, a := range f.actions() {
		if a == "CreateAutoScalingGroup" {
			creates++
		}
	}
	if creates != 1 {
		t.Fatalf("%d creates, want 1", creates)
	}
}

func TestDeleteGroup(t *testing.T) {
	deleting := blueGroup()
	deleting.Deleting = true
	for _, tc := range []struct {
		name        string
		existing    []AutoScalingGroup
		del         func(url.Values) reply // instead of the fake's
		describe    func(url.Values) reply // instead of the fake's
		wantErr     string
		wantActions []string
	}{
		{name: "deletes", existing: []AutoScalingGroup{blueGroup()}, wantActions: []string{"DescribeAutoScalingGroups", "DeleteAutoScalingGroup"}},
		{name: "missing", wantActions: []string{"DescribeAutoScalingGroups"}},
		{name: "being deleted", existing: []AutoScalingGroup{deleting}, wantActions: []string{"DescribeAutoScalingGroups"}},
		{name: "gone since the look", existing: []AutoScalingGroup{blueGroup()},
			del: func(url.Values) reply {
				return asgError("ValidationError", "AutoScalingGroup name not found - AutoScalingGroup 'ng1' not found")
			},
			wantActions: []string{"DescribeAutoScalingGroups", "DeleteAutoScalingGroup"}},
		{name: "deleted since the look", existing: []AutoScalingGroup{blueGroup()},
			del: func(url.Values) reply {
				return asgError("ValidationError", "The AutoScaling group may not be modified while it is pending delete")
			},
			wantActions: []string{"DescribeAutoScalingGroups", "DeleteAutoScalingGroup"}},
		{name: "busy", existing: []AutoScalingGroup{blueGroup()},
			del: func(url.Values) reply {
				return asgError("ScalingActivityInProgress", "You cannot delete an AutoScalingGroup while there are scaling activities in progress for that group.")
			},
			wantErr:     `cannot delete Auto Scaling group "ng1": ScalingActivityInProgress: You cannot delete an AutoScalingGroup while there are scaling activities in progress for that group`,
			wantActions: []string{"DescribeAutoScalingGroups", "DeleteAutoScalingGroup"}},
		{name: "cannot look", describe: func(url.Values) reply { return asgError("AccessDenied", "User is not authorized.") },
			wantErr:     `cannot describe Auto Scaling group "ng1": AccessDenied: User is not authorized`,
			wantActions: []string{"DescribeAutoScalingGroups"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f, r := newGroupsProvider(t, tc.existing...)
			f.set("DescribeAutoScalingGroups", replaceIf(r["DescribeAutoScalingGroups"], tc.describe))
			f.set("DeleteAutoScalingGroup", replaceIf(r["DeleteAutoScalingGroup"], tc.del))
			err := p.DeleteGroup(context.Background(), "ng1")
			if tc.wantErr != "" {
				wantError(t, err, tc.wantErr, false)
			} else if err != nil {
				t.Fatal(err)
			}
			if acts := f.actions(); !slices.Equal(acts, tc.wantActions) {
				t.Fatalf("calls %v, want %v", acts, tc.wantActions)
			}
			if d := f.last("DeleteAutoScalingGroup"); d != nil && (d.Get("AutoScalingGroupName") != "ng1" || d.Get("ForceDelete") != "true") {
				t.Fatalf("delete: %v", d)
			}
		})
	}
	// After a delete, a second call finds the group on its way out.
	t.Run("twice", func(t *testing.T) {
		p, f, _ := newGroupsProvider(t, blueGroup())
		for range 2 {
			if err := p.DeleteGroup(context.Background(), "ng1"); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"DescribeAutoScalingGroups", "DeleteAutoScalingGroup", "DescribeAutoScalingGroups"}
		if acts := f.actions(); !slices.Equal(acts, want) {
			t.Fatalf("calls %v, want %v", acts, want)
		}
	})
}

// set changes the reply to action once the fake is serving.
func (f *fakeAWS) set(action string, h func(url.Values) reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies[action] = h
}

func replaceIf(h, with func(url.Values) reply) func(url.Values) reply {
	if with != nil {
		return with
	}
	return h
}

func TestSetSizes(t *testing.T) {
	for _, tc := range []struct {
		name               string
		min, desired, max  int32
		update             func(url.Values) reply
		wantErr            string
		wantMin, wantD, wM string
	}{
		{name: "pin", min: 3, desired: 3, max: 3, wantMin: "3", wantD: "3", wM: "3"},
		{name: "restore", min: 1, desired: 3, max: 4, wantMin: "1", wantD: "3", wM: "4"},
		{name: "refused", min: 5, desired: 3, max: 4,
			update: func(url.Values) reply {
				return asgError("ValidationError", "Desired capacity:3 must be between the specified min size:5 and max size:4")
			},
			wantErr: `cannot set Auto Scaling group "ng1" to min 5, desired 3, max 4: ValidationError: Desired capacity:3 must be between the specified min size:5 and max size:4`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := baseReplies()
			r["UpdateAutoScalingGroup"] = replaceIf(r["UpdateAutoScalingGroup"], tc.update)
			p, f := newTestProvider(t, r, Options{})
			err := p.SetSizes(context.Background(), "ng1", tc.min, tc.desired, tc.max)
			if tc.wantErr != "" {
				wantError(t, err, tc.wantErr, false)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := f.last("UpdateAutoScalingGroup")
			if u.Get("AutoScalingGroupName") != "ng1" || u.Get("MinSize") != tc.wantMin || u.Get("DesiredCapacity") != tc.wantD || u.Get("MaxSize") != tc.wM || u.Has("LaunchTemplate.Version") {
				t.Fatalf("update: %v", u)
			}
		})
	}
}

func TestGroupExists(t *testing.T) {
	deleting := blueGroup()
	deleting.Deleting = true
	for _, tc := range []struct {
		name     string
		existing []AutoScalingGroup
		want     bool
	}{
		{"exists", []AutoScalingGroup{blueGroup()}, true},
		{"missing", nil, false},
		{"being deleted still exists", []AutoScalingGroup{deleting}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newGroupsProvider(t, tc.existing...)
			got, err := p.GroupExists(context.Background(), "ng1")
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
