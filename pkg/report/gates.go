package report

import (
	"fmt"
	"io"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

// GateVerdict is one gate's evaluation before a wave (--waves, --gate), as
// the run's record keeps it: what the gate looked at, the value seen, the
// threshold and whether it passed. A soak whose gates are yet to be
// evaluated is one GateVerdict with Pending set and no Gate.
type GateVerdict struct {
	Wave      int        `json:"wave"`
	SoakFrom  time.Time  `json:"soakFrom"`
	Soak      Duration   `json:"soak"`
	Evaluated *time.Time `json:"evaluated,omitempty"`
	Pending   bool       `json:"pending,omitempty"`
	Gate      string     `json:"gate,omitempty"`
	// What is the query, the alert matchers or the command.
	What      string `json:"what,omitempty"`
	Threshold string `json:"threshold,omitempty"`
	// Value is what was seen: the first sample past the threshold (else
	// the worst), the firing alerts, the command's exit status.
	Value  string     `json:"value,omitempty"`
	At     *time.Time `json:"at,omitempty"`
	Pass   bool       `json:"pass"`
	Reason string     `json:"reason,omitempty"`
	Detail string     `json:"detail,omitempty"`
}

// writeGates lists the gates evaluated before the run's waves, in order.
func writeGates(w io.Writer, run RunReport) error {
	header := []any{"Wave", "Soak from", "Soak", "Evaluated", "Gate", "Value", "Threshold", "Verdict"}
	return writeSection(w, "Gates before waves (UTC):", header, run.Gates, func(g GateVerdict) []any {
		return []any{fmt.Sprint(g.Wave), clock(&g.SoakFrom), short(g.Soak), clock(g.Evaluated), output.OrNone(g.Gate),
			output.OrNone(g.Value), output.OrNone(g.Threshold), gateVerdict(g)}
	})
}

// gateVerdict is a verdict's cell: pass, pending, or fail and why.
func gateVerdict(g GateVerdict) string {
	switch {
	case g.Pending:
		return "pending"
	case g.Pass:
		return "pass"
	case g.Detail != "":
		return fmt.Sprintf("fail (%s: %s)", g.Reason, output.OneLine(g.Detail, 80))
	}
	return fmt.Sprintf("fail (%s)", g.Reason)
}
