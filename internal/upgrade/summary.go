package upgrade

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
)

// runSummary is what the final line of a run counts: the whole run, the
// nodes of earlier, interrupted attempts included.
type runSummary struct {
	// Rollback: the run took the group back to its version before (in
	// place); BlueGreen with it: a blue/green rollback.
	Rollback  bool
	BlueGreen bool
	// Earlier are the nodes earlier attempts replaced, Now this one's.
	Earlier, Now []string
	// BlueBack and GreenDrained are what a blue/green rollback did.
	BlueBack, GreenDrained int
}

func (s runSummary) String() string {
	if s.BlueGreen {
		return fmt.Sprintf("rolled back: %s of blue serve again, %s of green drained", countNodes(s.BlueBack), countNodes(s.GreenDrained))
	}
	// A node retried after an interruption is counted once.
	all := sets.New(s.Earlier...).Insert(s.Now...)
	line := fmt.Sprintf("upgrade of %s finished", countNodes(all.Len()))
	if s.Rollback {
		line = "rolled back " + countNodes(all.Len())
	}
	if earlier := all.Len() - len(s.Now); earlier > 0 {
		line += fmt.Sprintf(" (%d by this run, %d by an earlier, interrupted one)", len(s.Now), earlier)
	}
	return line
}

// countNodes is "1 node" or "n nodes".
func countNodes(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}
