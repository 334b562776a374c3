package session

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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
	rep := s.startReport(ctx, pl, &state.Record{NodeGroup: "demo", StartedAt: time.Now().UTC()})
	const every = 300 * time.Millisecond
	rep.every = every
	node := func(name string) report.Node {
		h, err := s.Store().LoadReports(ctx, "demo")
		if err != nil || len(h.Runs) != 1 {
			return report.Node{}
		}
		for _, n := range h.Runs[0].Nodes {
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
		rep.finish(ctx, context.Canceled)
		h, _ := s.Store().LoadReports(ctx, "demo")
		if h.Runs[0].Outcome != InterruptedError || node("n2").Removed == nil {
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
