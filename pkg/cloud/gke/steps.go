package gke

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// steps are GKE's phases for the strategy
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies),
// with rough estimates: a node in.JoinTime() to join, a drain
// in.DrainTime() (the group's measured pace, else the defaults).
func (n *NodePool) steps(in plan.Input, mp *plan.ManagedPlan, nodes, zones int) []plan.Step {
	var out []plan.Step
	add := func(phase, detail string, d time.Duration) {
		out = append(out, plan.Step{Phase: phase, Detail: detail, Estimate: plan.Duration(d)})
	}
	if !mp.Before.Equal(mp.During) {
		add("Configure", "nodePools.update: "+mp.During.String(), in.SettingsTime())
	}
	limit := plan.FormatDuration(time.Duration(mp.EvictionLimit))
	s := mp.During
	switch in.Strategy {
	case cloud.StrategySurge:
		mu, _ := strconv.Atoi(s.MaxUnavailable)
		window := min(*s.MaxSurge+mu, plan.MaxInFlight)
		rounds := (nodes + window - 1) / max(window, 1)
		add("Upgrade", fmt.Sprintf("GKE upgrades one zone at a time (%d zones): per zone %d new node(s) first, %d node(s) at a time, each cordoned and drained honouring PDBs for up to %s, then its pods deleted: about %d rounds",
			zones, *s.MaxSurge, window, limit, rounds), time.Duration(rounds)*(in.JoinTime()+in.DrainTime()))
	case cloud.StrategyBlueGreen:
		size, _ := strconv.Atoi(s.Other[setBatchNodeCount])
		if p, err := strconv.ParseFloat(s.Other[setBatchPercentage], 64); err == nil {
			size = max(int(p*float64(nodes)), 1)
		}
		batches := 0
		if size > 0 {
			batches = (nodes + size - 1) / size
		}
		soak, _ := time.ParseDuration(s.Other[setBatchSoak])
		poolSoak, _ := time.ParseDuration(s.Other[setPoolSoak])
		add("CreateGreen", fmt.Sprintf("GKE creates a green instance group per zone, %d nodes of the target", nodes), in.JoinTime())
		add("CordonBlue", fmt.Sprintf("GKE cordons the %d blue nodes", nodes), 0)
		add("DrainBlue", fmt.Sprintf("%d batch(es) of %d node(s), %s soak between; pods a PDB holds past %s stay until blue is deleted", batches, size, plan.FormatDuration(soak), limit),
			time.Duration(batches)*in.DrainTime()+time.Duration(max(batches-1, 0))*soak)
		add("Soak", fmt.Sprintf("%s; \"complete\" ends it early", plan.FormatDuration(poolSoak)), poolSoak)
		add("DeleteBlue", "GKE deletes the pods left on blue (not evicted: PDBs not honoured), then blue", in.DrainTime())
	case cloud.StrategyAutoscaledBlueGreen:
		wait, _ := time.ParseDuration(s.Other[setWaitForDrain])
		add("CreateGreen", "GKE creates an empty green instance group per zone; the cluster autoscaler grows it", time.Minute)
		add("CordonBlue", fmt.Sprintf("GKE cordons the %d blue nodes", nodes), 0)
		add("Wait", fmt.Sprintf("%s for the cluster autoscaler to remove under-used blue nodes (not those with safe-to-evict=false pods)", plan.FormatDuration(wait)), wait)
		add("DrainBlue", fmt.Sprintf("the rest of blue, up to 20 nodes at a time, PDBs honoured for up to %s", limit), time.Duration((nodes+19)/20)*(in.JoinTime()+in.DrainTime()))
		add("DeleteBlue", "GKE deletes blue; no soak", in.DrainTime())
	case cloud.StrategyShortLived:
		add("Upgrade", "GKE points the pool at the target: new nodes run it, the running ones are not drained and go away on their own within 7 days", time.Minute)
	}
	if !mp.Before.Equal(mp.During) {
		add("RestoreSettings", "nodePools.update: "+mp.Before.String(), in.SettingsTime())
	}
	return out
}
