package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

func TestReportPrintsTheRecordedRuns(t *testing.T) {
	client := fake.NewClientset()
	store := &state.Store{Client: client, Namespace: "kube-system"}
	start := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	now := start
	j := report.NewJournal(func() time.Time { return now }, [][]string{{"n1"}})
	j.Enter("Drain", 1)
	j.NodeEvent("n1", report.ReasonDraining)
	j.Blocked("n1", "app/web-0", "app/web")
	now = now.Add(40 * time.Minute)
	j.Left("n1", "app/web-0")
	j.NodeEvent("n1", report.ReasonDrained)
	run := j.Run()
	finished := now
	run.FinishedAt, run.Outcome, run.Estimate = &finished, "finished", report.Duration(5*time.Minute)
	h := report.History{}
	h.Add(start, run)
	if err := store.SaveReports(context.Background(), "ng", &h); err != nil {
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
