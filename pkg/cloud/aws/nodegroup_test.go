package aws

import (
	"context"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// awsNode is a node of instance id; id "" gives it no EC2 provider ID.
func awsNode(name, id string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if id != "" {
		n.Spec.ProviderID = "aws:///us-east-1a/" + id
	} else {
		n.Spec.ProviderID = "kwok://" + name
	}
	return n
}

// greenXML is group ng1-v2 with one instance, i-7.
var greenXML = strings.NewReplacer("<AutoScalingGroupName>ng1</AutoScalingGroupName>", "<AutoScalingGroupName>ng1-v2</AutoScalingGroupName>",
	"<member><InstanceId>i-2</InstanceId>", "<member><InstanceId>i-7</InstanceId>").Replace(strings.Split(groupXML, "<member><InstanceId>i-3")[0]) +
	`</Instances></member></AutoScalingGroups></DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>`

func TestNodeGroupMachines(t *testing.T) {
	nodes := []*corev1.Node{awsNode("n1", "i-1"), awsNode("n2", "i-2"), awsNode("n7", "i-7"), awsNode("other", "i-99"), awsNode("kwok", "")}
	for _, tc := range []struct {
		name        string
		green       string
		wantNodes   []string
		wantPending []string
	}{
		{name: "blue alone", wantNodes: []string{"n1", "n2"}, wantPending: []string{"i-3"}},
		{name: "blue and green", green: "ng1-v2", wantNodes: []string{"n1", "n2", "n7"}, wantPending: []string{"i-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeAutoScalingGroups"] = func(v url.Values) reply {
				if v.Get("AutoScalingGroupNames.member.1") == "ng1-v2" {
					return reply{200, greenXML}
				}
				return reply{200, groupXML}
			}
			p, _ := newTestProvider(t, replies, Options{})
			n := &NodeGroup{API: p, ASG: "ng1"}
			if tc.green != "" {
				n.UseGreen(tc.green)
			}
			byNode, pending, err := n.Machines(context.Background(), nodes)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, name := range []string{"n1", "n2", "n7", "other", "kwok"} {
				if _, ok := byNode[name]; ok {
					got = append(got, name)
				}
			}
			var gotPending []string
			for _, m := range pending {
				gotPending = append(gotPending, m.ID)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantNodes, ",") || strings.Join(gotPending, ",") != strings.Join(tc.wantPending, ",") {
				t.Errorf("nodes %v pending %v, want %v and %v", got, gotPending, tc.wantNodes, tc.wantPending)
			}
			if m := byNode["n1"]; m.Version != "1" || m.Image != "ami-old" || m.Zone != "us-east-1a" {
				t.Errorf("n1 is %+v, want version 1, ami-old, us-east-1a", m)
			}
		})
	}
}

func TestNodeGroupRemoveAndShrink(t *testing.T) {
	for _, tc := range []struct {
		name      string
		node      string
		warm      bool
		shrink    bool
		wantCall  string // ShouldDecrementDesiredCapacity sent; "" no call
		wantError string
	}{
		{name: "remove", node: "n1", wantCall: "false"},
		{name: "shrink", node: "n1", shrink: true, wantCall: "true"},
		{name: "node gone", node: "gone"},
		{name: "shrink of a node gone", node: "gone", shrink: true},
		{name: "no instance", node: "kwok", wantError: `node "kwok" has no EC2 instance`},
		{name: "warm", node: "n1", warm: true, wantError: "is in the warm pool"},
		{name: "shrink warm", node: "n1", warm: true, shrink: true, wantError: "is in the warm pool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeAutoScalingInstances"] = asgInstanceIn("i-1", "InService")
			if tc.warm {
				replies["DescribeAutoScalingInstances"] = asgInstanceIn("i-1", "Warmed:Stopped")
			}
			p, f := newTestProvider(t, replies, Options{})
			n := &NodeGroup{API: p, ASG: "ng1", Client: fake.NewClientset(awsNode("n1", "i-1"), awsNode("kwok", ""))}
			call := n.RemoveNode
			if tc.shrink {
				call = n.Shrink
			}
			err := call(context.Background(), tc.node)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want %q", err, tc.wantError)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			sent := f.last("TerminateInstanceInAutoScalingGroup")
			switch {
			case tc.wantCall == "" && sent != nil:
				t.Errorf("terminated %v, want no call", sent)
			case tc.wantCall != "" && (sent.Get("InstanceId") != "i-1" || sent.Get("ShouldDecrementDesiredCapacity") != tc.wantCall):
				t.Errorf("sent %v, want i-1 with decrement %s", sent, tc.wantCall)
			}
		})
	}
}

func TestNodeGroupMachineOf(t *testing.T) {
	p, _ := newTestProvider(t, baseReplies(), Options{})
	n := &NodeGroup{API: p, ASG: "ng1", Client: fake.NewClientset(awsNode("n1", "i-1"))}
	for node, want := range map[string]string{"n1": "i-1", "gone": ""} {
		if got, err := n.MachineOf(context.Background(), node); err != nil || got != want {
			t.Errorf("MachineOf(%q) = %q, %v; want %q", node, got, err, want)
		}
	}
}

// TestNodeGroupSizes: the sizes are read from and written to the group
// named, with only the members each call changes.
func TestNodeGroupSizes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(n *NodeGroup) error
		want url.Values // the UpdateAutoScalingGroup sent
	}{
		{"desired and max", func(n *NodeGroup) error { return n.SetDesiredAndMax(ctx, 5, 6) },
			url.Values{"AutoScalingGroupName": {"ng1"}, "DesiredCapacity": {"5"}, "MaxSize": {"6"}}},
		{"max", func(n *NodeGroup) error { return n.SetMax(ctx, 7) },
			url.Values{"AutoScalingGroupName": {"ng1"}, "MaxSize": {"7"}}},
		{"another group's", func(n *NodeGroup) error {
			return n.SetGroupSizes(ctx, "ng1-v2", plan.Sizes{Min: 1, Desired: 2, Max: 3})
		}, url.Values{"AutoScalingGroupName": {"ng1-v2"}, "MinSize": {"1"}, "DesiredCapacity": {"2"}, "MaxSize": {"3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := newTestProvider(t, baseReplies(), Options{})
			if err := tc.call(&NodeGroup{API: p, ASG: "ng1"}); err != nil {
				t.Fatal(err)
			}
			sent := f.last("UpdateAutoScalingGroup")
			for _, k := range []string{"AutoScalingGroupName", "MinSize", "DesiredCapacity", "MaxSize"} {
				if sent.Get(k) != tc.want.Get(k) {
					t.Errorf("%s = %q, want %q (sent %v)", k, sent.Get(k), tc.want.Get(k), sent)
				}
			}
		})
	}
	p, _ := newTestProvider(t, baseReplies(), Options{})
	n := &NodeGroup{API: p, ASG: "ng1"}
	want := plan.Sizes{Min: 1, Desired: 3, Max: 4}
	if s, err := n.Sizes(ctx); err != nil || s != want {
		t.Errorf("Sizes = %+v, %v; want %+v", s, err, want)
	}
	if s, err := n.GroupSizes(ctx, "ng1"); err != nil || s != want {
		t.Errorf("GroupSizes = %+v, %v; want %+v", s, err, want)
	}
	if _, err := n.GroupSizes(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("sizes of a missing group: %v, want an error naming it", err)
	}
}

// TestNodeGroupRebalance: AZRebalance is read, held and released on the
// group, and its zones are the group's.
func TestNodeGroupRebalance(t *testing.T) {
	ctx := context.Background()
	replies := baseReplies()
	replies["SuspendProcesses"] = fixed(200, processesXML("SuspendProcesses"))
	replies["ResumeProcesses"] = fixed(200, processesXML("ResumeProcesses"))
	p, f := newTestProvider(t, replies, Options{})
	n := &NodeGroup{API: p, ASG: "ng1"}
	if n.RebalanceName() != AZRebalance || n.Name() != Name || n.GroupName() != "ng1" || !strings.Contains(n.Describe(), `"ng1"`) {
		t.Errorf("names %q %q %q %q", n.RebalanceName(), n.Name(), n.GroupName(), n.Describe())
	}
	if held, err := n.RebalanceHeld(ctx); err != nil || held {
		t.Errorf("held %v, %v; want false", held, err)
	}
	if zones, err := n.RebalanceZones(ctx); err != nil || strings.Join(zones, ",") != "us-east-1a,us-east-1b" {
		t.Errorf("zones %v, %v", zones, err)
	}
	if err := n.HoldRebalance(ctx); err != nil || f.last("SuspendProcesses").Get("ScalingProcesses.member.1") != AZRebalance {
		t.Errorf("hold: %v, sent %v", err, f.last("SuspendProcesses"))
	}
	if err := n.ReleaseRebalance(ctx); err != nil || f.last("ResumeProcesses").Get("ScalingProcesses.member.1") != AZRebalance {
		t.Errorf("release: %v, sent %v", err, f.last("ResumeProcesses"))
	}
	if _, err := (&NodeGroup{API: p, ASG: "nope"}).RebalanceZones(ctx); err == nil {
		t.Error("zones of a missing group: no error")
	}
}

func TestNodeGroupCurrent(t *testing.T) {
	n := &NodeGroup{}
	for _, tc := range []struct {
		m    plan.Machine
		want bool
	}{
		{plan.Machine{Version: "2", Lifecycle: "InService"}, true},
		{plan.Machine{Version: "1", Lifecycle: "InService"}, false},
		{plan.Machine{Version: "2", Lifecycle: "Terminating", State: plan.MachineLeaving}, false},
	} {
		if got := n.Current(tc.m, "2"); got != tc.want {
			t.Errorf("Current(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}
