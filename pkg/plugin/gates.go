package plugin

import (
	"fmt"
	"io"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// writeGateLines says where the run's last wave gate stands: its soak
// while pending, its verdicts once evaluated.
func writeGateLines(w io.Writer, r *state.Record, now time.Time) {
	g := r.LastGate()
	if g == nil {
		return
	}
	if g.Pending() {
		until := g.SoakFrom.Add(g.Soak)
		left := ""
		if d := until.Sub(now); d > 0 {
			left = fmt.Sprintf(" (%s left)", d.Round(time.Second))
		}
		fmt.Fprintf(w, "%s: gates before wave %d pending: soak until %s%s, then evaluated (resume evaluates them, never skips them)\n", r.NodeGroup, g.Wave, until.Format(time.RFC3339), left)
		return
	}
	word := "passed"
	if !g.Pass {
		word = "failed"
	}
	fmt.Fprintf(w, "%s: gates before wave %d %s at %s, over the soak from %s:\n", r.NodeGroup, g.Wave, word, g.Evaluated.Format(time.RFC3339), g.SoakFrom.Format(time.RFC3339))
	for _, v := range g.Verdicts {
		fmt.Fprintf(w, "  %s\n", v.String())
	}
}
