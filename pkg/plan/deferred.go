package plan

import (
	"cmp"
	"slices"
)

// deferSurplus takes out of c.Outdated, in a rollback of a run that
// scaled the group up, the outdated nodes that the scale-down removes
// anyway: as many as the group runs above the sizes recorded before that
// run. A batch would replace each of them first, and the scale-down drain
// its replacement again. It returns the nodes left to the batches.
func deferSurplus(c *Planning) []PlannedNode {
	cg, cp, p := c.Input.Cloud, c.Plan.Cloud, c.Plan
	if cg == nil || c.Input.Resume.RollbackFrom == "" || !resizes(cp) || !cp.Resumed {
		return c.Outdated
	}
	surplus := min(int(cp.During.Desired-cp.Before.Desired), len(c.Outdated))
	if surplus <= 0 {
		return c.Outdated
	}
	perZone := map[string]int{}
	for _, m := range cg.Nodes {
		if !m.Leaving() {
			perZone[m.Zone]++
		}
	}
	left := slices.Clone(c.Outdated)
	for range surplus {
		i := firstToDefer(left, cg, perZone)
		perZone[cg.Nodes[left[i].Name].Zone]--
		p.Deferred = append(p.Deferred, left[i])
		left = slices.Delete(left, i, i+1)
	}
	p.Nodes.Outdated -= surplus
	p.Nodes.Deferred = surplus
	return left
}

// firstToDefer is the index of the node of nodes the scale-down should
// remove first, as it would pick it: one no earlier attempt held off (so
// that a resumed rollback comes to the same split: its batches' nodes
// are tainted), from the zone with the most nodes, with the fewest pods;
// the name decides the rest, so the seed does not.
func firstToDefer(nodes []PlannedNode, cg *CloudGroup, perZone map[string]int) int {
	best := 0
	for i := 1; i < len(nodes); i++ {
		a, b := nodes[i], nodes[best]
		if c := cmp.Or(
			compareBool(a.Tainted || a.Cordoned, b.Tainted || b.Cordoned),
			cmp.Compare(perZone[cg.Nodes[b.Name].Zone], perZone[cg.Nodes[a.Name].Zone]),
			cmp.Compare(len(a.Pods), len(b.Pods)),
			cmp.Compare(a.Name, b.Name),
		); c < 0 {
			best = i
		}
	}
	return best
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
