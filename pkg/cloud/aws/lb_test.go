package aws

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

const (
	elbv2NS = `xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"`
	elbNS   = `xmlns="http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/"`

	webTG = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef"
)

// lbFake is a target group "web" and a Classic Load Balancer "web-clb"
// holding i-1 (and i-9, someone else's): a deregistered instance drains for
// drainPolls reads, then is gone; forever when drainPolls is negative.
type lbFake struct {
	mu sync.Mutex
	// state per load balancer kind: "registered", "draining", "gone".
	tg, clb    string
	drainPolls int
	throttle   int // DescribeTargetHealth answers Throttling this many times first
	tgReads    int
	clbReads   int
}

func (l *lbFake) install(r map[string]func(url.Values) reply) {
	r["DescribeTargetHealth"] = func(url.Values) reply {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.throttle > 0 {
			l.throttle--
			return asgError("Throttling", "Rate exceeded")
		}
		l.tgReads++
		if l.tg == "draining" && l.drainPolls >= 0 && l.tgReads > l.drainPolls {
			l.tg = "gone"
		}
		items := `<member><Target><Id>i-9</Id><Port>8080</Port></Target><TargetHealth><State>healthy</State></TargetHealth></member>`
		switch l.tg {
		case "registered":
			items += `<member><Target><Id>i-1</Id><Port>8080</Port></Target><TargetHealth><State>healthy</State></TargetHealth></member>`
		case "draining":
			items += `<member><Target><Id>i-1</Id><Port>8080</Port></Target><TargetHealth><State>draining</State><Reason>Target.DeregistrationInProgress</Reason></TargetHealth></member>`
		}
		return reply{200, `<DescribeTargetHealthResponse ` + elbv2NS + `><DescribeTargetHealthResult><TargetHealthDescriptions>` + items + `</TargetHealthDescriptions></DescribeTargetHealthResult></DescribeTargetHealthResponse>`}
	}
	r["DeregisterTargets"] = func(url.Values) reply {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.tg = "draining"
		return reply{200, `<DeregisterTargetsResponse ` + elbv2NS + `><DeregisterTargetsResult/></DeregisterTargetsResponse>`}
	}
	r["DescribeInstanceHealth"] = func(url.Values) reply {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.clbReads++
		if l.clb == "draining" && l.drainPolls >= 0 && l.clbReads > l.drainPolls {
			l.clb = "gone"
		}
		items := `<member><InstanceId>i-9</InstanceId><State>InService</State><Description>N/A</Description></member>`
		switch l.clb {
		case "registered":
			items += `<member><InstanceId>i-1</InstanceId><State>InService</State><Description>N/A</Description></member>`
		case "draining":
			items += `<member><InstanceId>i-1</InstanceId><State>InService</State><Description>Instance deregistration currently in progress.</Description></member>`
		}
		return reply{200, `<DescribeInstanceHealthResponse ` + elbNS + `><DescribeInstanceHealthResult><InstanceStates>` + items + `</InstanceStates></DescribeInstanceHealthResult></DescribeInstanceHealthResponse>`}
	}
	r["DeregisterInstancesFromLoadBalancer"] = func(url.Values) reply {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.clb = "draining"
		return reply{200, `<DeregisterInstancesFromLoadBalancerResponse ` + elbNS + `><DeregisterInstancesFromLoadBalancerResult><Instances><member><InstanceId>i-9</InstanceId></member></Instances></DeregisterInstancesFromLoadBalancerResult></DeregisterInstancesFromLoadBalancerResponse>`}
	}
	r["DescribeTargetGroupAttributes"] = fixed(200, `<DescribeTargetGroupAttributesResponse `+elbv2NS+`><DescribeTargetGroupAttributesResult><Attributes>
<member><Key>stickiness.enabled</Key><Value>false</Value></member>
<member><Key>deregistration_delay.timeout_seconds</Key><Value>120</Value></member>
</Attributes></DescribeTargetGroupAttributesResult></DescribeTargetGroupAttributesResponse>`)
	r["DescribeLoadBalancerAttributes"] = fixed(200, `<DescribeLoadBalancerAttributesResponse `+elbNS+`><DescribeLoadBalancerAttributesResult><LoadBalancerAttributes>
<ConnectionDraining><Enabled>true</Enabled><Timeout>45</Timeout></ConnectionDraining></LoadBalancerAttributes></DescribeLoadBalancerAttributesResult></DescribeLoadBalancerAttributesResponse>`)
}

func count(actions []string, a string) int {
	n := 0
	for _, x := range actions {
		if x == a {
			n++
		}
	}
	return n
}

func TestDeregister(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		tg, clb                     string
		polls                       int
		throttle                    int
		timeout                     time.Duration
		wantErr                     string
		wantDereg, wantClassicDereg int
		wantWait                    bool
	}{
		{name: "deregisters, then waits until both let go", tg: "registered", clb: "registered", polls: 3, timeout: time.Minute,
			wantDereg: 1, wantClassicDereg: 1, wantWait: true},
		// A run killed after its calls: it reads, finds them draining,
		// and only waits.
		{name: "already draining after an interruption", tg: "draining", clb: "draining", polls: 2, timeout: time.Minute, wantWait: true},
		{name: "already out", tg: "gone", clb: "gone", timeout: time.Minute},
		// Throttled past the SDK's 3 attempts: the wait looks again later.
		{name: "throttling outlasts the SDK's retries", tg: "registered", clb: "gone", polls: 2, throttle: 4, timeout: time.Minute,
			wantDereg: 1, wantWait: true},
		{name: "timeout names the target group, the instance and the flag", tg: "registered", clb: "gone", polls: -1, timeout: 50 * time.Millisecond,
			wantDereg: 1, wantWait: true,
			wantErr: `cannot terminate instance "i-1": target group "web" still holds it (draining) after 50ms; run again to keep waiting, or raise --deregistration-timeout`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := &lbFake{tg: tc.tg, clb: tc.clb, drainPolls: tc.polls, throttle: tc.throttle}
			replies := baseReplies()
			lb.install(replies)
			p, f := newTestProvider(t, replies, Options{})
			p.pollEvery = time.Millisecond
			var waits []string
			err := p.Deregister(context.Background(), []string{webTG}, []string{"web-clb"}, []string{"i-1"}, tc.timeout, func(s string) { waits = append(waits, s) })
			if got := fmt.Sprint(err); tc.wantErr == "" && err != nil || tc.wantErr != "" && got != tc.wantErr {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			acts := f.actions()
			if n := count(acts, "DeregisterTargets"); n != tc.wantDereg {
				t.Errorf("DeregisterTargets called %d times, want %d: %v", n, tc.wantDereg, acts)
			}
			if n := count(acts, "DeregisterInstancesFromLoadBalancer"); n != tc.wantClassicDereg {
				t.Errorf("DeregisterInstancesFromLoadBalancer called %d times, want %d: %v", n, tc.wantClassicDereg, acts)
			}
			if tc.wantDereg > 0 {
				v := f.last("DeregisterTargets")
				if v.Get("Targets.member.1.Id") != "i-1" || v.Get("Targets.member.1.Port") != "8080" || v.Has("Targets.member.2.Id") {
					t.Errorf("DeregisterTargets sent %v, want i-1 on its registered port 8080 alone", v)
				}
			}
			if tc.wantClassicDereg > 0 {
				if v := f.last("DeregisterInstancesFromLoadBalancer"); v.Get("Instances.member.1.InstanceId") != "i-1" || v.Has("Instances.member.2.InstanceId") {
					t.Errorf("DeregisterInstancesFromLoadBalancer sent %v, want i-1 alone", v)
				}
			}
			if (len(waits) > 0) != tc.wantWait || len(waits) > 1 {
				t.Errorf("waiting told %q, want one line: %v", waits, tc.wantWait)
			}
			if tc.wantErr == "" && tc.wantWait {
				// It returned only once both let go, so the last reads saw
				// the instance gone.
				lb.mu.Lock()
				defer lb.mu.Unlock()
				if lb.tg != "gone" || lb.clb != "gone" {
					t.Errorf("returned with the target group %s and the classic load balancer %s", lb.tg, lb.clb)
				}
				if len(waits) == 0 || !strings.Contains(waits[0], `target group "web"`) || !strings.Contains(waits[0], "i-1") {
					t.Errorf("waiting lines %q do not name the target group and the instance", waits)
				}
			}
		})
	}
}

func TestLoadBalancersOfTheGroup(t *testing.T) {
	replies := baseReplies()
	(&lbFake{}).install(replies)
	replies["DescribeAutoScalingGroups"] = fixed(200, strings.Replace(groupXML, "<Instances>",
		`<TargetGroupARNs><member>`+webTG+`</member></TargetGroupARNs><LoadBalancerNames><member>web-clb</member></LoadBalancerNames>
<TrafficSources><member><Identifier>`+webTG+`</Identifier><Type>elbv2</Type></member><member><Identifier>other-clb</Identifier><Type>elb</Type></member>
<member><Identifier>arn:aws:vpc-lattice:us-east-1:123456789012:targetgroup/tg-1</Identifier><Type>vpc-lattice</Type></member></TrafficSources><Instances>`, 1))
	p, _ := newTestProvider(t, replies, Options{})
	g, err := p.Group(context.Background(), "ng1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.TargetGroups, []string{webTG}) || !slices.Equal(g.LoadBalancers, []string{"web-clb", "other-clb"}) {
		t.Fatalf("attached target groups %v, classic %v: want each once, VPC Lattice left out", g.TargetGroups, g.LoadBalancers)
	}
	lbs, err := p.LoadBalancers(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.LoadBalancer{
		{Kind: "target group", Name: "web", Delay: plan.Duration(120 * time.Second)},
		{Kind: "classic load balancer", Name: "web-clb", Delay: plan.Duration(45 * time.Second)},
		{Kind: "classic load balancer", Name: "other-clb", Delay: plan.Duration(45 * time.Second)},
	}
	if !slices.Equal(lbs, want) {
		t.Errorf("load balancers %+v, want %+v", lbs, want)
	}
}
