package aws

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
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

// asgInstancesIn answers DescribeAutoScalingInstances with each instance
// asked for that has a lifecycle state in states; the others belong to no
// group.
func asgInstancesIn(states map[string]string) func(url.Values) reply {
	return func(v url.Values) reply {
		var members strings.Builder
		for i := 1; v.Get(fmt.Sprintf("InstanceIds.member.%d", i)) != ""; i++ {
			id := v.Get(fmt.Sprintf("InstanceIds.member.%d", i))
			if lc := states[id]; lc != "" {
				members.WriteString(`<member><InstanceId>` + id + `</InstanceId><AutoScalingGroupName>ng1</AutoScalingGroupName><LifecycleState>` + lc + `</LifecycleState></member>`)
			}
		}
		return reply{200, `<DescribeAutoScalingInstancesResponse ` + asgNS + `><DescribeAutoScalingInstancesResult><AutoScalingInstances>` +
			members.String() + `</AutoScalingInstances></DescribeAutoScalingInstancesResult></DescribeAutoScalingInstancesResponse>`}
	}
}

func TestLeaving(t *testing.T) {
	states := map[string]string{
		"i-terminated": "Terminated",
		"i-going":      "Terminating",
		"i-held":       "Terminating:Wait",
		"i-held-too":   "Terminating:Wait",
		"i-let-go":     "Terminating:Proceed",
	}
	want := map[string]struct {
		gone   bool
		heldBy string
	}{
		"i-described-no-more": {gone: true},
		"i-terminated":        {gone: true},
		"i-going":             {},
		"i-held":              {heldBy: "audit,zz-drain"},
		"i-held-too":          {heldBy: "audit,zz-drain"},
		"i-let-go":            {},
	}
	// Auto Scaling takes 50 IDs a call: sixty machines take two.
	var many []string
	for i := range 54 {
		many = append(many, fmt.Sprintf("i-%02d", i))
	}
	for _, tc := range []struct {
		name      string
		ids       []string
		wantCalls int
	}{
		{name: "every state in one call, the hooks read once", ids: slices.Sorted(maps.Keys(want)), wantCalls: 1},
		{name: "sixty machines in two calls", ids: append(many, slices.Sorted(maps.Keys(want))...), wantCalls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeLifecycleHooks"] = fixed(200, hooksXML)
			replies["DescribeAutoScalingInstances"] = asgInstancesIn(states)
			p, f := newTestProvider(t, replies, Options{})
			n := &NodeGroup{API: p, ASG: "ng1"}
			got, err := n.Leaving(context.Background(), tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			for id, w := range want {
				d, ok := got[id]
				var names []string
				for _, h := range d.HeldBy {
					names = append(names, h.Name)
				}
				if !ok || d.Gone != w.gone || strings.Join(names, ",") != w.heldBy {
					t.Errorf("%s: %+v (answered: %v), want gone %v, held by %q", id, d, ok, w.gone, w.heldBy)
				}
			}
			if len(got) != len(tc.ids) {
				t.Errorf("%d machines answered, want %d", len(got), len(tc.ids))
			}
			counts := map[string]int{}
			for _, a := range f.actions() {
				counts[a]++
				if a == "CompleteLifecycleAction" || a == "RecordLifecycleActionHeartbeat" {
					t.Errorf("called %s: another system's hook is never completed", a)
				}
			}
			if counts["DescribeAutoScalingInstances"] != tc.wantCalls || counts["DescribeLifecycleHooks"] != 1 {
				t.Errorf("calls %v, want %d DescribeAutoScalingInstances and 1 DescribeLifecycleHooks", counts, tc.wantCalls)
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
