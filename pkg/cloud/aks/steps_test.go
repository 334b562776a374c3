package aks

import (
	"strings"
	"testing"
	"time"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

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

// TestSpotPoolPlan: AKS upgrades a Spot pool with "a cordon and an
// eviction notice, but no drain" and no surge node, and refuses a
// maxSurge on it
// (https://learn.microsoft.com/en-us/azure/aks/spot-node-pool#upgrade-a-spot-node-pool):
// the plan adds no node, draws on no quota, promises no PDB-honouring
// drain, and refuses --max-surge naming it.
func TestSpotPoolPlan(t *testing.T) {
	spot := armcs.ScaleSetPrioritySpot
	for _, tc := range []struct {
		name     string
		priority *armcs.ScaleSetPriority
		maxSurge int
		scaleUp  int32
		says     string // in the Upgrade step
		refused  string // "" when planned
	}{
		{name: "a regular pool surges and drains", maxSurge: 2, scaleUp: 2, says: "drains 2 node(s) at a time honouring PDBs"},
		{name: "a Spot pool: no surge, no drain", priority: &spot, scaleUp: 0, says: "no surge node and no drain"},
		{name: "a Spot pool refuses --max-surge", priority: &spot, maxSurge: 2, refused: "--max-surge 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &AgentPool{name: "spot", imageOnly: true, pool: armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{
				Count: new(int32(3)), ScaleSetPriority: tc.priority}}}
			mp, err := a.Plan(plan.Input{MaxUnavailable: "0", MaxSurge: tc.maxSurge}, 3, 1)
			if tc.refused != "" {
				if err == nil || !isInput(err) || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("Plan: %v, want an input error naming %s", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var upgrade, quota string
			for _, s := range mp.Steps {
				if s.Phase == "Upgrade" {
					upgrade = s.Detail
				}
			}
			for _, d := range mp.Details {
				if d.Name == "surge quota" {
					quota = d.Value
				}
			}
			if mp.ScaleUp != tc.scaleUp || !strings.Contains(upgrade, tc.says) || (tc.priority != nil) != strings.HasPrefix(quota, "none needed") {
				t.Errorf("scale-up %d, upgrade %q, quota %q; want %d saying %q", mp.ScaleUp, upgrade, quota, tc.scaleUp, tc.says)
			}
			if own := a.OwnStrategy(); tc.priority != nil && own.MaxSurge != 0 {
				t.Errorf("own strategy of a Spot pool surges %d", own.MaxSurge)
			}
		})
	}
}

// TestDrainMinutesWithinAKSRange: --aks-drain-timeout is whole minutes
// within AKS's drainTimeoutInMinutes range (1 to 1440, the REST spec),
// refused at plan time as an input error naming the flag.
func TestDrainMinutesWithinAKSRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int32 // 0: refused
	}{{"30m", 30}, {"1m", 1}, {"1440m", 1440}, {"1441m", 0}, {"0m", 0}, {"30", 0}, {"1h", 0}} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := drainMinutes(tc.in)
			if got != tc.want || (tc.want == 0) != (err != nil && isInput(err) && strings.Contains(err.Error(), "--aks-drain-timeout")) {
				t.Errorf("drainMinutes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}
