package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

func TestReportPrintsTheRecordedRuns(t *testing.T) {
	client := fake.NewClientset()
	store := &state.Store{Client: client, Namespace: "kube-system"}
	start := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	now := start
	j := report.NewJournal(func() time.Time { return now })
	j.Enter("Drain", 1)
	j.NodeEvent("n1", report.ReasonDraining)
	j.Blocked("n1", "app/web-0", "app/web")
	now = now.Add(40 * time.Minute)
	j.Left("n1", "app/web-0")
	j.NodeEvent("n1", report.ReasonDrained)
	a := j.Attempt()
	finished := now
	a.EndedAt, a.Outcome = &finished, "finished"
	h := report.History{}.With(report.Run{StartedAt: start, FinishedAt: &finished, Outcome: "finished", Estimate: report.Duration(5 * time.Minute)}, a)
	if err := store.SaveReports(context.Background(), "ng", h); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, output string
		want         []string
	}{
		{"table", "", []string{"Top blockers", "40m0s", "app/web-0", "app/web", "Took 40m0s; the plan estimated 5m0s (35m0s over)", "n1"}},
		{"json", "json", []string{`"kind": "UpgradeReport"`, `"pod": "app/web-0"`, `"held": "40m0s"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &ReportOptions{client: client, IOStreams: genericiooptions.IOStreams{Out: &out}, NodeGroup: "ng", StateNamespace: "kube-system", Output: tt.output, Runs: 1}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			if tt.output == "json" && !json.Valid(out.Bytes()) {
				t.Errorf("not JSON:\n%s", out.String())
			}
		})
	}
}

func TestReportRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		o    ReportOptions
		want string
	}{
		{"no node group", ReportOptions{}, "missing NODEGROUP"},
		{"negative runs", ReportOptions{NodeGroup: "ng", Runs: -1}, "invalid --runs -1"},
		{"wide", ReportOptions{NodeGroup: "ng", Output: "wide"}, `invalid --output "wide"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) || ExitCode(err) != ExitUsage {
				t.Errorf("Validate = %v (exit %d), want %q, exit 2", err, ExitCode(err), tt.want)
			}
		})
	}
}

// TestReportSaysWhatStatusSays: report's outcome of the newest run is
// status's, read from the record, and a run over is timed to its end,
// not to now, whatever its report last said.
func TestReportSaysWhatStatusSays(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	// the report as the run's attempts last wrote it: an attempt killed
	// at 5m, before anything else; in the format every version reads
	written := `{"runs":[{"startedAt":"2026-11-28T02:00:00Z","outcome":"finished","strategy":"eks","attempts":2,
		"phases":{"Drain":"4m0s"},"batches":[{"batch":1,"from":"2026-11-28T02:00:00Z","to":"2026-11-28T02:05:00Z"}],
		"nodes":[{"name":"n1","batch":1,"drainStart":"2026-11-28T02:01:00Z","drained":"2026-11-28T02:05:00Z"}]}]}`
	tests := []struct {
		name     string
		rec      state.Record
		want     string
		wantTook time.Duration
	}{
		{"rolled back", state.Record{Phase: string(plan.PhaseRollback), FinishedAt: at(8 * time.Minute)}, StatusRolledBack, 8 * time.Minute},
		{"aborted", state.Record{Phase: "Drain", FinishedAt: at(10 * time.Minute), AbortedAt: at(10 * time.Minute)}, StatusAborted, 10 * time.Minute},
		// not finished: timed to the record's last word, as status does
		{"paused", state.Record{State: state.StatePaused, Phase: "Drain", Note: "paused by cancel at a safe point"}, StatusPaused, 0},
		{"failed", state.Record{Phase: "Drain", LastError: "cannot drain"}, StatusFailed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: state.ReportName("ng"), Namespace: "kube-system"},
				Data: map[string]string{"report.json": written}})
			rec := tt.rec
			rec.NodeGroup, rec.StartedAt, rec.Strategy = "ng", t0, "eks"
			if err := (&state.Store{Client: client, Namespace: "kube-system"}).Save(ctx, &rec); err != nil {
				t.Fatal(err)
			}
			status := describeRun(&rec, false, "", time.Now())
			if status.Status != tt.want {
				t.Fatalf("status says %q, want %q", status.Status, tt.want)
			}
			if tt.wantTook == 0 {
				tt.wantTook = time.Duration(status.ElapsedSeconds) * time.Second
			}
			var out bytes.Buffer
			o := &ReportOptions{client: client, IOStreams: genericiooptions.IOStreams{Out: &out}, NodeGroup: "ng", StateNamespace: "kube-system", Output: "json", Runs: 1}
			if err := o.Run(ctx); err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if run := rep.Runs[0]; run.Outcome != tt.want || time.Duration(run.Took) != tt.wantTook {
				t.Errorf("report says %q, took %s; status says %q, want took %s", run.Outcome, time.Duration(run.Took), tt.want, tt.wantTook)
			}
		})
	}
}
