package plugin

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// surgeText says what one --make-room surge not put back holds up: the
// workload, by how much, for which batch, since when (from the record).
func surgeText(s *state.Surge) string {
	what := fmt.Sprintf("%s surged by %d (%d to %d replicas", s.Object(), s.Extra, s.Replicas, s.Replicas+s.Extra)
	if s.HPA != nil {
		what += fmt.Sprintf(", through HorizontalPodAutoscaler %q", s.HPA.Name)
	}
	what += fmt.Sprintf(") for batch %d", s.Batch)
	switch {
	case s.SurgedAt != nil:
		return what + " since " + s.SurgedAt.UTC().Format(time.RFC3339)
	case s.State == state.SurgeIntended:
		return what + ", recorded before it was made (it may not be)"
	}
	return what
}

// surgedText is the run's surges not put back, for status -w's line; ""
// when none.
func surgedText(r *state.Record) string {
	var parts []string
	for _, s := range r.Surged() {
		parts = append(parts, surgeText(s))
	}
	if len(parts) == 0 {
		return ""
	}
	return "make-room: " + strings.Join(parts, "; ")
}

// writeSurgeLines prints, under status's table, each surge the run has not
// put back (a killed run leaves them up until abort or the run again puts
// them back), with how long it has been up.
func writeSurgeLines(w io.Writer, r *state.Record, alive bool, now time.Time) {
	left := ""
	if !alive {
		left = fmt.Sprintf(", left up by the stopped run: \"kubectl nodeupgrade abort %s\" or the run again puts it back", r.NodeGroup)
	}
	for _, s := range r.Surged() {
		up := ""
		if s.SurgedAt != nil {
			up = fmt.Sprintf(" (%s)", now.Sub(*s.SurgedAt).Round(time.Second))
		}
		fmt.Fprintf(w, "%s: make-room: %s%s%s\n", r.NodeGroup, surgeText(s), up, left)
	}
}
