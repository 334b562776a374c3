package plan

import (
	"fmt"
	"slices"
)

// quarantinedFirst puts the nodes the last run left quarantined
// (PlannedNode.Quarantined) in the first batches: what held them may
// have let go, and a node still held should stop or quarantine the run
// early, not after the rest. Each swaps places with a node of its zone in
// an earlier batch, so that the batches keep the sizes and zones the
// strategy gave them (surge's one zone per batch; in random order any
// zone does); the batches holding
// them then go first; note says which.
func quarantinedFirst(batches [][]PlannedNode, order string) (reordered [][]PlannedNode, note string) {
	var names []string
	anyZone := order == OrderRandom
	for i := range batches {
		for j := range batches[i] {
			if !batches[i][j].Quarantined {
				continue
			}
			names = append(names, batches[i][j].Name)
			if bi, bj, ok := earlierSlot(batches[:i], batches[i][j].Zone, anyZone); ok {
				batches[bi][bj], batches[i][j] = batches[i][j], batches[bi][bj]
			}
		}
	}
	if len(names) == 0 {
		return batches, ""
	}
	slices.SortStableFunc(batches, func(a, b []PlannedNode) int {
		return compareBool(!slices.ContainsFunc(a, isQuarantined), !slices.ContainsFunc(b, isQuarantined))
	})
	held := 0
	for _, b := range batches {
		if slices.ContainsFunc(b, isQuarantined) {
			held++
		}
	}
	which := "batch 1 takes"
	if held > 1 {
		which = fmt.Sprintf("batches 1-%d take", held)
	}
	them := "them"
	if len(names) == 1 {
		them = "it"
	}
	slices.Sort(names)
	return batches, fmt.Sprintf("%s quarantined by the last run (%s): %s %s first", Count(len(names), "node"), quoteNames(names), which, them)
}

// earlierSlot is the first place in batches of a node of zone (any zone
// with anyZone) that is not quarantined.
func earlierSlot(batches [][]PlannedNode, zone string, anyZone bool) (int, int, bool) {
	for i, b := range batches {
		for j, n := range b {
			if (anyZone || n.Zone == zone) && !n.Quarantined {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

func isQuarantined(n PlannedNode) bool { return n.Quarantined }
