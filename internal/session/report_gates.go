package session

import (
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// gatesReported are rec's wave gates as report shows them: a row per
// verdict, or one pending row for a soak not evaluated yet.
func gatesReported(rec *state.Record) []report.GateVerdict {
	var out []report.GateVerdict
	for _, g := range rec.Gates {
		row := report.GateVerdict{Wave: g.Wave, SoakFrom: g.SoakFrom, Soak: report.Duration(g.Soak), Evaluated: g.Evaluated, Pending: g.Pending()}
		if len(g.Verdicts) == 0 {
			out = append(out, row)
			continue
		}
		for _, v := range g.Verdicts {
			row.Gate, row.What, row.Threshold, row.Value, row.At = v.Gate, v.What, v.Threshold, v.Value, v.At
			row.Pass, row.Reason, row.Detail = v.Pass, string(v.Reason), v.Detail
			out = append(out, row)
		}
	}
	return out
}
