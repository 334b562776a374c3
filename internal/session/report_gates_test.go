package session

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestReportShowsGateVerdicts: report shows, per wave, each gate, the
// value seen, the threshold and pass or fail (and why), or the soak still
// pending, as the record keeps them; -o json carries the same.
func TestReportShowsGateVerdicts(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	const query = "max(errors_ratio)"
	passed := gate.Verdict{Gate: "prometheus:" + query + "<0.01", Kind: gate.Prometheus, What: query, Threshold: "< 0.01", Value: "0.001", Pass: true}
	bad := gate.Verdict{Gate: "prometheus:" + query + "<0.01", Kind: gate.Prometheus, What: query, Threshold: "< 0.01", Value: "0.5", At: at(3 * time.Minute), Reason: gate.ReasonThreshold}
	firing := gate.Verdict{Gate: "alertmanager:severity=critical", Kind: gate.Alertmanager, What: "severity=critical", Value: "WebErrorRate", Reason: gate.ReasonFiring}
	down := gate.Verdict{Gate: "prometheus:" + query + "<0.01", Kind: gate.Prometheus, What: query, Threshold: "< 0.01", Reason: gate.ReasonUnreachable, Detail: "connection refused"}
	tests := []struct {
		name  string
		gates []state.WaveGate
		table []string // each in one line of the table
		json  []string
	}{
		{"no gates: no section", nil, nil, nil},
		{"passed", []state.WaveGate{{Wave: 2, SoakFrom: t0, Soak: time.Minute, Evaluated: at(time.Minute), Verdicts: []gate.Verdict{passed}, Pass: true}},
			[]string{"2 | 02:00:00 | 1m0s | 02:01:00 | prometheus:max(errors_ratio)<0.01 | 0.001 | < 0.01 | pass"},
			[]string{`"wave":2`, `"value":"0.001"`, `"threshold":"\u003c 0.01"`, `"pass":true`}},
		{"failed on a threshold and a firing alert", []state.WaveGate{{Wave: 2, SoakFrom: t0, Soak: time.Minute, Evaluated: at(4 * time.Minute), Verdicts: []gate.Verdict{bad, firing}}},
			[]string{"2 | 02:00:00 | 1m0s | 02:04:00 | prometheus:max(errors_ratio)<0.01 | 0.5 | < 0.01 | fail (threshold)",
				"2 | 02:00:00 | 1m0s | 02:04:00 | alertmanager:severity=critical | WebErrorRate | <none> | fail (alert firing)"},
			[]string{`"value":"0.5"`, `"reason":"threshold"`, `"value":"WebErrorRate"`, `"pass":false`}},
		{"unreachable, then a soak pending", []state.WaveGate{
			{Wave: 2, SoakFrom: t0, Soak: time.Minute, Evaluated: at(time.Minute), Verdicts: []gate.Verdict{down}},
			{Wave: 2, SoakFrom: *at(5 * time.Minute), Soak: time.Minute}},
			[]string{"fail (unreachable: connection refused)", "2 | 02:05:00 | 1m0s | - | <none> | <none> | <none> | pending"},
			[]string{`"reason":"unreachable"`, `"detail":"connection refused"`, `"pending":true`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := state.Record{NodeGroup: "demo", StartedAt: t0, Gates: tt.gates, Attempts: []state.Attempt{{Kind: state.AttemptRun, StartedAt: t0}}}
			rep := report.Of("demo", withRecord(report.History{}, &rec, false, "", t0.Add(10*time.Minute)))
			var b strings.Builder
			if err := report.WriteTable(&b, rep); err != nil {
				t.Fatal(err)
			}
			table := columns(b.String())
			if tt.table == nil && strings.Contains(b.String(), "Gates") {
				t.Errorf("want no gates section, got:\n%s", b.String())
			}
			for _, w := range tt.table {
				if !strings.Contains(table, w) {
					t.Errorf("the table lacks %q:\n%s", w, b.String())
				}
			}
			data, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.json {
				if !strings.Contains(string(data), w) {
					t.Errorf("-o json lacks %s:\n%s", w, data)
				}
			}
		})
	}
}

// columns is a table with its cells (apart by two spaces or more)
// separated by " | ", one row a line.
func columns(table string) string {
	var lines []string
	for _, l := range strings.Split(table, "\n") {
		lines = append(lines, strings.Join(cellGap.Split(strings.TrimSpace(l), -1), " | "))
	}
	return strings.Join(lines, "\n")
}

var cellGap = regexp.MustCompile(`\s{2,}`)

// TestGateVerdictsKeptInTheHistory: an attempt's end writes its run's
// gate verdicts into the history, so report shows them once the record is
// another run's; a later attempt's writes before its end keep them.
func TestGateVerdictsKeptInTheHistory(t *testing.T) {
	ctx := context.Background()
	s, _ := inClusterSession()
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	evaluated := t0.Add(time.Minute)
	rec := &state.Record{NodeGroup: "demo", StartedAt: t0, Gates: []state.WaveGate{{Wave: 2, SoakFrom: t0, Soak: time.Minute, Evaluated: &evaluated,
		Verdicts: []gate.Verdict{{Gate: "exec:./smoke.sh", Kind: gate.Exec, What: "./smoke.sh", Value: "exit status 1", Reason: gate.ReasonExit}}}}}
	pl := inClusterPlan()
	rec.BeginAttempt(state.AttemptRun, "", t0)
	s.Reports().startReport(ctx, pl, rec).finish(ctx, rec, nil)
	rec.BeginAttempt(state.AttemptResume, "", t0.Add(5*time.Minute))
	s.Reports().startReport(ctx, pl, rec).save(ctx, nil)
	h, err := s.store().LoadReports(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 1 || len(h.Runs[0].Gates) != 1 {
		t.Fatalf("history %+v, want one run with one gate verdict", h.Runs)
	}
	if g := h.Runs[0].Gates[0]; g.Wave != 2 || g.Gate != "exec:./smoke.sh" || g.Value != "exit status 1" || g.Pass || g.Reason != string(gate.ReasonExit) {
		t.Errorf("kept %+v, want wave 2's failed exec gate", g)
	}
}
