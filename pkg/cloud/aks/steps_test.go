package aks

import (
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestUpgradeEstimateFromThePoolsPace: AKS's upgrade is estimated from
// the group's measured join and drain (the same inputs for plan and
// run), not the defaults: the surge nodes join once, then each round
// drains, soaks and reimages, then the surge nodes drain.
func TestUpgradeEstimateFromThePoolsPace(t *testing.T) {
	pace := &plan.Pace{Join: plan.Duration(10 * time.Second), Drain: plan.Duration(20 * time.Second)}
	cases := []struct {
		name         string
		surge, nodes int
		soak         string
		pace         *plan.Pace
		want         time.Duration
	}{
		{"one at a time", 1, 3, "", pace, 10*time.Second + 3*30*time.Second + 20*time.Second},
		{"two at a time, odd count", 2, 3, "", pace, 10*time.Second + 2*30*time.Second + 20*time.Second},
		{"a soak per round", 1, 2, "2", pace, 10*time.Second + 2*(30*time.Second+2*time.Minute) + 20*time.Second},
		{"unmeasured: the defaults", 1, 1, "", nil, plan.NodeLaunchEstimate + plan.DrainEstimate + plan.NodeLaunchEstimate + plan.DrainEstimate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mp := &plan.ManagedPlan{ScaleUp: int32(c.surge), During: plan.UpdateSettings{Other: map[string]string{setSoak: c.soak}}}
			mp.Before = mp.During
			steps := (&AgentPool{}).steps(plan.Input{Pace: c.pace}, mp, c.nodes, 30)
			if len(steps) != 1 || steps[0].Phase != "Upgrade" {
				t.Fatalf("steps %+v, want the Upgrade alone (settings unchanged)", steps)
			}
			if got := time.Duration(steps[0].Estimate); got != c.want {
				t.Errorf("estimate %s, want %s", got, c.want)
			}
		})
	}
}
