package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestReportWrittenAsNodesMove: a run's report is written soon after each
// change it shows, not only at a batch's end (a killed run would lose
// them), at most once every flushEvery however many changes come, and at
// the end of the attempt, once, whatever was scheduled.
func TestReportWrittenAsNodesMove(t *testing.T) {
	ctx := context.Background()
	s, c := inClusterSession()
	var writes atomic.Int32
	c.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			writes.Add(1)
		}
		return false, nil, nil
	})
	pl := inClusterPlan()
	pl.Batches = []plan.Batch{{Number: 1, Nodes: []plan.PlannedNode{{Name: "n1"}, {Name: "n2"}}}}
	rec := &state.Record{NodeGroup: "demo", StartedAt: time.Now().UTC()}
	rec.BeginAttempt(state.AttemptRun, "", time.Now())
	rep := s.Reports().startReport(ctx, pl, rec)
	const every = 300 * time.Millisecond
	rep.every = every
	node := func(name string) report.Node {
		h, err := s.store().LoadReports(ctx, "demo")
		if err != nil || len(h.Runs) != 1 {
			return report.Node{}
		}
		for _, n := range h.Runs[0].Attempts[0].Nodes {
			if n.Name == name {
				return n
			}
		}
		return report.Node{}
	}
	rep.journal.NodeEvent("n1", report.ReasonDrained)
	for deadline := time.Now().Add(every); node("n1").Drained == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("n1 drained, but no report says so within the flush interval")
		}
	}
	t.Run("coalesced", func(t *testing.T) {
		before, start := writes.Load(), time.Now()
		for i := range 50 {
			rep.journal.Blocked("n2", fmt.Sprintf("app/web-%d", i), "app/web")
			time.Sleep(every / 25) // 50 changes over two intervals
		}
		time.Sleep(2 * every)
		// At most one write per interval (the first may come at once).
		most := int32(time.Since(start)/every) + 1
		if n := writes.Load() - before; n < 1 || n > most {
			t.Errorf("%d writes for 50 changes over %s, want 1 to %d", n, time.Since(start).Round(time.Millisecond), most)
		}
		if len(node("n2").Blocks) != 50 {
			t.Errorf("n2's blocks: %d written, want 50", len(node("n2").Blocks))
		}
	})
	t.Run("at the end, and nothing after", func(t *testing.T) {
		rep.journal.NodeEvent("n2", report.ReasonRemoved)
		rec.LastError = InterruptedError
		rep.finish(ctx, rec, context.Canceled)
		h, _ := s.store().LoadReports(ctx, "demo")
		if h.Runs[0].Outcome != OutcomeInterrupted || node("n2").Removed == nil {
			t.Fatalf("outcome %q, n2 removed %v: want the interrupted attempt's last state", h.Runs[0].Outcome, node("n2").Removed)
		}
		before := writes.Load()
		rep.journal.NodeEvent("n1", report.ReasonRemoved)
		time.Sleep(2 * every)
		if writes.Load() != before {
			t.Errorf("written after the attempt's last report")
		}
	})
}

// TestReportWrittenAgainIsTheSame: an attempt's report written 100 times
// (a run writes it every few seconds) is the same bytes each time, over
// an earlier attempt of the same run, and the report's phase totals stay
// within the run's wall time.
func TestReportWrittenAgainIsTheSame(t *testing.T) {
	ctx := context.Background()
	s, c := inClusterSession()
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	pl := inClusterPlan()
	pl.Batches = []plan.Batch{{Number: 1, Nodes: []plan.PlannedNode{{Name: "n1"}}}, {Number: 2, Nodes: []plan.PlannedNode{{Name: "n2"}}}}
	rec := &state.Record{NodeGroup: "demo", StartedAt: t0}
	attempt := func(kind state.AttemptKind, node string) *runReport {
		rec.BeginAttempt(kind, "", now)
		rep := s.Reports().startReport(ctx, pl, rec)
		rep.now = clock
		rep.journal.Enter("Drain", 1)
		rep.journal.NodeEvent(node, report.ReasonDraining)
		rep.journal.Blocked(node, "app/web-0", "app/web")
		now = now.Add(2 * time.Minute)
		return rep
	}
	first := attempt(state.AttemptRun, "n1")
	rec.Note = "paused by cancel"
	first.finish(ctx, rec, nil)
	now = now.Add(10 * time.Minute) // paused
	rec.Note = ""
	second := attempt(state.AttemptResume, "n2")
	read := func() string {
		cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, state.ReportName("demo"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["report.json"]
	}
	second.save(ctx, nil)
	once := read()
	for i := range 100 {
		second.save(ctx, nil)
		if again := read(); again != once {
			t.Fatalf("written %d times:\n%s\nonce:\n%s", i+2, again, once)
		}
	}
	rep, err := s.Reports().Report(ctx, "demo", 1)
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Runs[0]
	var sum report.Duration
	for _, p := range run.PhaseTotals {
		sum += p.Took
	}
	if len(run.Attempts) != 2 || run.Took != report.Duration(14*time.Minute) || sum != report.Duration(4*time.Minute) || run.Blockers[0].Held != report.Duration(2*time.Minute) {
		t.Errorf("%d attempts, took %s, phases %s, top blocker %+v; want 2, 14m0s, 4m0s, held 2m0s", len(run.Attempts), run.Took, sum, run.Blockers[0])
	}
}

// TestAttemptKinds: each attempt of a run is recorded as what started it.
func TestAttemptKinds(t *testing.T) {
	earlier := []state.Attempt{{Kind: state.AttemptRun}}
	tests := []struct {
		name      string
		rec       state.Record
		given     map[string]bool
		rollback  bool
		holder    string
		want      state.AttemptKind
		wantPod   string
		wantCount int
	}{
		{"a new run", state.Record{}, map[string]bool{}, false, "laptop/42", state.AttemptRun, "", 1},
		{"run again after a kill", state.Record{Attempts: earlier, Phase: "Drain"}, map[string]bool{}, false, "laptop/43", state.AttemptRerun, "", 2},
		{"a record of an older version", state.Record{Phase: "Drain", Done: []string{"n1"}}, map[string]bool{}, false, "laptop/43", state.AttemptRerun, "", 1},
		{"resume", state.Record{Attempts: earlier, Phase: "Drain"}, nil, false, "laptop/44", state.AttemptResume, "", 2},
		{"rollback", state.Record{Attempts: earlier, Phase: "Drain"}, nil, true, "laptop/45", state.AttemptRollback, "", 2},
		{"an eks rollback", state.Record{Attempts: earlier, Phase: "Drain", Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{FromVersion: "1", TargetVersion: "2"}}}, nil, false, "laptop/46", state.AttemptRollback, "", 2},
		{"an in-cluster pod", state.Record{Attempts: earlier}, map[string]bool{}, false, JobName("demo") + "-x7k2p/1", state.AttemptInCluster, JobName("demo") + "-x7k2p", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := inClusterPlan()
			pl.Request.Given, pl.Request.Rollback = tt.given, tt.rollback
			if c := tt.rec.Cloud; c != nil {
				pl.Request.Cloud.Image, pl.Request.Cloud.Version = "", c.FromVersion // RunBack's request
			}
			rec := tt.rec
			rec.Attempts = slices.Clone(rec.Attempts)
			beginAttempt(&rec, pl, tt.holder)
			got := rec.CurrentAttempt()
			if got.Kind != tt.want || got.Pod != tt.wantPod || len(rec.Attempts) != tt.wantCount || got.StartedAt.IsZero() {
				t.Errorf("attempts %+v, want the last a %s by pod %q, %d in all", rec.Attempts, tt.want, tt.wantPod, tt.wantCount)
			}
		})
	}
}

// TestReportReadsTheRecord: the newest run is reported as its record says
// it stands: alive, it runs until now; the attempts the record has and the
// history lacks (one that wrote no report) are listed in their place.
func TestReportReadsTheRecord(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	first := report.Attempt{Kind: "run", StartedAt: t0, LastSeen: *at(5 * time.Minute), Phases: map[string]report.Duration{"Drain": report.Duration(4 * time.Minute)}}
	h := report.History{}.With(report.Run{StartedAt: t0, Outcome: OutcomeRunning}, first)
	tests := []struct {
		name     string
		rec      state.Record
		alive    bool
		want     string
		took     time.Duration
		attempts []string
	}{
		{"alive", state.Record{Phase: "Drain", Attempts: []state.Attempt{{Kind: state.AttemptRun, StartedAt: t0}}}, true, OutcomeRunning, 20 * time.Minute, []string{"run running"}},
		{"killed", state.Record{Phase: "Drain", UpdatedAt: *at(5 * time.Minute), Attempts: []state.Attempt{{Kind: state.AttemptRun, StartedAt: t0}}}, false, OutcomeInterrupted, 5 * time.Minute, []string{"run interrupted"}},
		{"an attempt without a report", state.Record{Phase: "Drain", FinishedAt: at(9 * time.Minute), AbortedAt: at(9 * time.Minute), Attempts: []state.Attempt{
			{Kind: state.AttemptRun, StartedAt: t0},
			{Kind: state.AttemptAbort, StartedAt: *at(8 * time.Minute), EndedAt: at(9 * time.Minute), Outcome: OutcomeAborted}}},
			false, OutcomeAborted, 9 * time.Minute, []string{"run interrupted", "abort aborted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tt.rec
			rec.NodeGroup, rec.StartedAt = "demo", t0
			before, _ := json.Marshal(h)
			rr := report.Of("demo", withRecord(h, &rec, tt.alive, "", t0.Add(20*time.Minute))).Runs[0]
			var attempts []string
			for _, a := range rr.Attempts {
				attempts = append(attempts, a.Kind+" "+a.Outcome)
			}
			if rr.Outcome != tt.want || time.Duration(rr.Took) != tt.took || !slices.Equal(attempts, tt.attempts) {
				t.Errorf("%q, took %s, attempts %q; want %q, %s, %q", rr.Outcome, rr.Took, attempts, tt.want, tt.took, tt.attempts)
			}
			if after, _ := json.Marshal(h); !bytes.Equal(after, before) {
				t.Errorf("the history read changed")
			}
		})
	}
}
