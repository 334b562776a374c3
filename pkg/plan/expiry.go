package plan

import (
	"fmt"
	"sort"
	"time"
)

// ExpiryNotes warn of the group's nodes its provider ends at a time of its
// own, whatever the run holds off (Karpenter's expireAfter), before the
// run's estimated end: they leave outside the run's waves.
func (cg *CloudGroup) ExpiryNotes(estimate time.Duration) []string {
	x := cg.Expiry
	if x == nil || len(x.At) == 0 || x.ReadAt.IsZero() {
		return nil
	}
	end := x.ReadAt.Add(estimate)
	nodes := make([]string, 0, len(x.At))
	for n, at := range x.At {
		if at.Before(end) {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	notes := make([]string, 0, len(nodes))
	for _, n := range nodes {
		at := x.At[n]
		when := "expired already"
		if left := at.Sub(x.ReadAt); left > 0 {
			when = "expires in " + FormatDuration(left.Round(time.Second))
		}
		notes = append(notes, fmt.Sprintf("node %q %s (%s, %s), within the run's estimated %s: %s", n, when, at.UTC().Format(time.RFC3339), x.By, FormatDuration(estimate), x.Effect))
	}
	return notes
}
