package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestLoadBalancersInThePlan(t *testing.T) {
	lbs := []LoadBalancer{
		{Kind: "target group", Name: "web", Delay: Duration(300 * time.Second)},
		{Kind: "classic load balancer", Name: "old", Delay: Duration(45 * time.Second)},
	}
	for _, tc := range []struct {
		name      string
		lbs       []LoadBalancer
		timeout   time.Duration
		wantLine  string
		wantBatch time.Duration // drain, post-drain wait of 1m, deregistration
	}{
		{name: "none: no line, no wait", wantBatch: DrainEstimate + time.Minute},
		{name: "the longest delay counts", lbs: lbs, timeout: 6 * time.Minute,
			wantLine:  "target group web (delay 5m), classic load balancer old (delay 45s); each node is deregistered from them and removed once they let go, at most 6m later (--deregistration-timeout)",
			wantBatch: DrainEstimate + time.Minute + 5*time.Minute},
		{name: "the timeout stops it sooner", lbs: lbs, timeout: 2 * time.Minute,
			wantLine:  "at most 2m later (--deregistration-timeout)",
			wantBatch: DrainEstimate + time.Minute + 2*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{PostDrainWait: Duration(time.Minute), DeregistrationTimeout: Duration(tc.timeout), Cloud: &CloudPlan{Removal: Removal{LoadBalancers: tc.lbs}}}
			line := loadBalancersLine(p, p.Cloud)
			if tc.wantLine == "" && line != "" || !strings.Contains(line, tc.wantLine) {
				t.Errorf("line %q, want %q", line, tc.wantLine)
			}
			if got := perBatchEstimate(p); got != tc.wantBatch {
				t.Errorf("per batch %s, want %s", got, tc.wantBatch)
			}
			b, err := json.Marshal(p.Cloud)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.lbs) > 0 != strings.Contains(string(b), `"loadBalancers":[{"kind":"target group","name":"web","delay":"5m0s"}`) {
				t.Errorf("-o json: %s", b)
			}
		})
	}
}
