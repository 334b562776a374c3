package aws

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

const (
	hooksXML = `<DescribeLifecycleHooksResponse ` + asgNS + `><DescribeLifecycleHooksResult><LifecycleHooks>
<member><LifecycleHookName>zz-drain</LifecycleHookName><AutoScalingGroupName>ng1</AutoScalingGroupName><LifecycleTransition>autoscaling:EC2_INSTANCE_TERMINATING</LifecycleTransition><HeartbeatTimeout>300</HeartbeatTimeout><DefaultResult>CONTINUE</DefaultResult></member>
<member><LifecycleHookName>boot</LifecycleHookName><AutoScalingGroupName>ng1</AutoScalingGroupName><LifecycleTransition>autoscaling:EC2_INSTANCE_LAUNCHING</LifecycleTransition><HeartbeatTimeout>60</HeartbeatTimeout><DefaultResult>ABANDON</DefaultResult></member>
<member><LifecycleHookName>audit</LifecycleHookName><AutoScalingGroupName>ng1</AutoScalingGroupName><LifecycleTransition>autoscaling:EC2_INSTANCE_TERMINATING</LifecycleTransition></member>
</LifecycleHooks></DescribeLifecycleHooksResult></DescribeLifecycleHooksResponse>`

	noWarmPoolXML = `<DescribeWarmPoolResponse ` + asgNS + `><DescribeWarmPoolResult><Instances/></DescribeWarmPoolResult></DescribeWarmPoolResponse>`

	warmPoolXML = `<DescribeWarmPoolResponse ` + asgNS + `><DescribeWarmPoolResult>
<WarmPoolConfiguration><MinSize>1</MinSize><PoolState>Stopped</PoolState><Status></Status></WarmPoolConfiguration>
<Instances><member><InstanceId>i-9</InstanceId><AvailabilityZone>us-east-1a</AvailabilityZone><LifecycleState>Warmed:Stopped</LifecycleState><HealthStatus>Healthy</HealthStatus>
 <LaunchTemplate><LaunchTemplateId>lt-1</LaunchTemplateId><Version>1</Version></LaunchTemplate></member></Instances>
</DescribeWarmPoolResult></DescribeWarmPoolResponse>`
)

// asgInstanceIn answers DescribeAutoScalingInstances with one instance in
// a lifecycle state; "" answers none.
func asgInstanceIn(id, lifecycle string) func(url.Values) reply {
	member := ""
	if lifecycle != "" {
		member = `<member><InstanceId>` + id + `</InstanceId><AutoScalingGroupName>ng1</AutoScalingGroupName><LifecycleState>` + lifecycle + `</LifecycleState></member>`
	}
	return fixed(200, `<DescribeAutoScalingInstancesResponse `+asgNS+`><DescribeAutoScalingInstancesResult><AutoScalingInstances>`+
		member+`</AutoScalingInstances></DescribeAutoScalingInstancesResult></DescribeAutoScalingInstancesResponse>`)
}

func TestTerminatingHooks(t *testing.T) {
	replies := baseReplies()
	replies["DescribeLifecycleHooks"] = fixed(200, hooksXML)
	p, _ := newTestProvider(t, replies, Options{})
	hooks, err := p.TerminatingHooks(context.Background(), "ng1")
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.LeaveHook{
		{Name: "audit", Timeout: plan.Duration(time.Hour)}, // AWS's default heartbeat
		{Name: "zz-drain", Timeout: plan.Duration(300 * time.Second), DefaultResult: "CONTINUE"},
	}
	if len(hooks) != len(want) {
		t.Fatalf("hooks = %+v, want %+v (the launching hook left out)", hooks, want)
	}
	for i := range want {
		if hooks[i] != want[i] {
			t.Errorf("hook %d = %+v, want %+v", i, hooks[i], want[i])
		}
	}
}

func TestWarmPool(t *testing.T) {
	for _, tc := range []struct {
		name string
		xml  string
		want *plan.Reserve
	}{
		{name: "none", xml: noWarmPoolXML},
		{name: "one stopped instance", xml: warmPoolXML, want: &plan.Reserve{Kind: WarmPoolKind, State: "Stopped", MinSize: 1,
			Machines: []plan.Machine{{ID: "i-9", Zone: "us-east-1a", Template: "lt-1", Version: "1", State: plan.MachinePending, Lifecycle: "Warmed:Stopped"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeWarmPool"] = fixed(200, tc.xml)
			p, _ := newTestProvider(t, replies, Options{})
			got, err := p.WarmPool(context.Background(), "ng1")
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("warm pool = %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if got.Kind != tc.want.Kind || got.State != tc.want.State || got.MinSize != tc.want.MinSize || len(got.Machines) != len(tc.want.Machines) || got.Machines[0] != tc.want.Machines[0] {
				t.Errorf("warm pool = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDeparture(t *testing.T) {
	for _, tc := range []struct {
		name, lifecycle string
		gone            bool
		heldBy          []string
	}{
		{name: "described no more", lifecycle: "", gone: true},
		{name: "terminated", lifecycle: "Terminated", gone: true},
		{name: "terminating, not held", lifecycle: "Terminating"},
		{name: "held by the terminating hooks", lifecycle: "Terminating:Wait", heldBy: []string{"audit", "zz-drain"}},
		{name: "let go", lifecycle: "Terminating:Proceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeLifecycleHooks"] = fixed(200, hooksXML)
			replies["DescribeAutoScalingInstances"] = asgInstanceIn("i-1", tc.lifecycle)
			p, f := newTestProvider(t, replies, Options{})
			n := &NodeGroup{Provider: p, ASG: "ng1"}
			d, err := n.Departure(context.Background(), "i-1")
			if err != nil {
				t.Fatal(err)
			}
			if d.Gone != tc.gone {
				t.Errorf("gone = %v, want %v", d.Gone, tc.gone)
			}
			var names []string
			for _, h := range d.HeldBy {
				names = append(names, h.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.heldBy, ",") {
				t.Errorf("held by %v, want %v", names, tc.heldBy)
			}
			for _, a := range f.actions() {
				if a == "CompleteLifecycleAction" || a == "RecordLifecycleActionHeartbeat" {
					t.Errorf("called %s: another system's hook is never completed", a)
				}
			}
		})
	}
}

func TestRefuseWarm(t *testing.T) {
	for _, tc := range []struct {
		lifecycle, wantErr string
	}{
		{lifecycle: "InService"},
		{lifecycle: ""},
		{lifecycle: "Warmed:Running", wantErr: `cannot terminate instance "i-1" of node "n1": it is in the warm pool of Auto Scaling group "ng1" (Warmed:Running)`},
	} {
		t.Run(cmpOr(tc.lifecycle, "gone"), func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeAutoScalingInstances"] = asgInstanceIn("i-1", tc.lifecycle)
			p, _ := newTestProvider(t, replies, Options{})
			err := p.refuseWarm(context.Background(), "i-1", "n1")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestGroupLeavesWarmInstancesOut: a warm-pool instance Auto Scaling lists
// with the group is no member, and ProtectedFromScaleIn is read.
func TestGroupLeavesWarmInstancesOut(t *testing.T) {
	replies := baseReplies()
	replies["DescribeAutoScalingGroups"] = fixed(200, strings.Replace(strings.Replace(groupXML,
		`<member><InstanceId>i-3</InstanceId>`,
		`<member><InstanceId>i-8</InstanceId><AvailabilityZone>us-east-1a</AvailabilityZone><LifecycleState>Warmed:Stopped</LifecycleState></member><member><InstanceId>i-3</InstanceId>`, 1),
		`<LifecycleState>InService</LifecycleState>`, `<LifecycleState>InService</LifecycleState><ProtectedFromScaleIn>true</ProtectedFromScaleIn>`, 1))
	p, _ := newTestProvider(t, replies, Options{})
	g, err := p.Group(context.Background(), "ng1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range g.Instances {
		ids = append(ids, in.ID)
	}
	if strings.Join(ids, ",") != "i-1,i-2,i-3" {
		t.Errorf("instances = %v, want i-1,i-2,i-3 (the warm i-8 left out)", ids)
	}
	if !g.Instances[0].Protected || g.Instances[1].Protected {
		t.Errorf("protected = %v, %v; want true, false", g.Instances[0].Protected, g.Instances[1].Protected)
	}
}
