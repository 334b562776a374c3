package upgrade

import (
	"context"
	"slices"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// surelyPlaced returns the zones that a scale-up by n certainly launches
// in, given the group's machines per zone: Auto Scaling balances a group
// across its zones, launching each new instance in a zone with the fewest,
// so a zone already fuller than the others may get none. A zone is certain
// when it starts below the lowest count the launches leave; between zones
// tied at that level the choice is AWS's. The scale-up waits for a new
// node only in the zones of outdated nodes among these.
func surelyPlaced(perZone map[string]int, zones []string, n int) []string {
	if len(zones) == 0 || n <= 0 {
		return nil
	}
	after := make([]int, len(zones))
	for i, z := range zones {
		after[i] = perZone[z]
	}
	for range n {
		after[slices.Index(after, slices.Min(after))]++
	}
	level := slices.Min(after)
	var out []string
	for _, z := range zones {
		if perZone[z] < level {
			out = append(out, z)
		}
	}
	return out
}

// scaleUpZones are the zones of outdated nodes where a scale-up by n from
// the group's nodes now surely launches a new node, and those it may not.
func (r *eksRun) scaleUpZones(ctx context.Context, n int) (wait, skipped []string) {
	perZone := map[string]int{}
	nodes, err := r.nodes.groupNodes()
	if err != nil {
		return r.cfg.Plan.OutdatedZones(), nil
	}
	for _, node := range nodes {
		perZone[node.Labels[plan.ZoneLabel]]++
	}
	placed := surelyPlaced(perZone, r.launchZones(ctx), n)
	for _, z := range r.cfg.Plan.OutdatedZones() {
		if slices.Contains(placed, z) {
			wait = append(wait, z)
		} else {
			skipped = append(skipped, z)
		}
	}
	return wait, skipped
}

// launchZones are the zones the group launches in: those of its nodes,
// and the group's own where it says them (AWS: its Availability Zones),
// empty ones included. A group of one node in three zones launches its
// scale-up in the two empty ones, never beside its node.
func (r *eksRun) launchZones(ctx context.Context) []string {
	zones := slices.Clone(r.cfg.Plan.Zones)
	if rb, ok := r.group.pool.(cloud.Rebalancer); ok {
		if own, err := rb.RebalanceZones(ctx); err == nil {
			zones = append(zones, own...)
		}
	}
	slices.Sort(zones)
	return slices.Compact(zones)
}
