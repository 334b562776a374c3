package report

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Surge is a workload --make-room scaled up around a batch's drain, as
// the run's record keeps it.
type Surge struct {
	Workload string `json:"workload"` // Kind namespace/name
	Batch    int    `json:"batch"`
	Replicas int32  `json:"replicas"`
	Extra    int32  `json:"extra"`
	// Ready is its Ready count before the surge; MinReady the fewest
	// Ready replicas the run saw while the surge was up (-1: none seen).
	Ready    int        `json:"ready"`
	MinReady int        `json:"minReady"`
	State    string     `json:"state"`
	SurgedAt *time.Time `json:"surgedAt,omitempty"`
	// Took is from the surge to the values before put back (0 while up).
	Took Duration `json:"took,omitempty"`
	Note string   `json:"note,omitempty"`
}

// writeSurges lists the run's --make-room surges.
func writeSurges(w io.Writer, run RunReport) error {
	if len(run.Surges) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nMade room (--make-room):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tWORKLOAD\tREPLICAS\tSURGED\tFOR\tREADY BEFORE\tREADY AT LEAST\tSTATE")
	for _, s := range run.Surges {
		least := "-"
		if s.MinReady >= 0 {
			least = fmt.Sprint(s.MinReady)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d -> %d\t%s\t%s\t%d\t%s\t%s\n", batchCell(s.Batch), s.Workload, s.Replicas, s.Replicas+s.Extra, clock(s.SurgedAt), short(s.Took), s.Ready, least, s.State)
	}
	return tw.Flush()
}
