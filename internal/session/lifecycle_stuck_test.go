package session

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestNoAbortSuggestedWhereTheServiceTakesNoWrite: after cancel, or a
// failure, of an AKS upgrade whose run changed the pool's settings, abort
// refuses (a write to a Canceled or Failed pool is AKS's order to finish
// the upgrade) and names resume: status and the pause message offer resume
// alone, each suggestion taken. Where abort writes nothing back, or the
// service takes the write, abort is offered still.
func TestNoAbortSuggestedWhereTheServiceTakesNoWrite(t *testing.T) {
	for _, tc := range []struct {
		name          string
		st            state.RunState
		writeFinishes bool
		configured    bool
		wantAbort     bool
	}{
		{"aks cancelled, settings changed", state.StatePaused, true, true, false},
		{"aks failed, settings changed", state.StateFailed, true, true, false},
		{"aks window closed, settings changed", state.StateWindowClosed, true, true, false},
		{"aks cancelled, settings unchanged", state.StatePaused, true, false, true},
		{"eks cancelled, settings changed", state.StatePaused, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
			r := &state.Record{NodeGroup: "pool", Strategy: "aks", State: tc.st, Phase: string(plan.PhaseUpdate), StartedAt: now.Add(-time.Hour), UpdatedAt: now,
				Managed: &state.ManagedRecord{Group: "pool", Service: "AKS agent pool", Controls: []string{"cancel", "resume"},
					UpdateID: "op-1", Configured: tc.configured, WriteFinishes: tc.writeFinishes}}
			run := Describe(r, false, "", now)
			next := run.Next()
			if got := slices.Contains(next, CmdAbort); got != tc.wantAbort {
				t.Errorf("abort offered %v, want %v: %q", got, tc.wantAbort, run.Suggest())
			}
			if !slices.Contains(next, CmdResume) && !slices.Contains(next, CmdRun) {
				t.Errorf("no way on offered: %q", run.Suggest())
			}
			if strings.Contains(run.Suggest(), "nodeupgrade abort") != tc.wantAbort {
				t.Errorf("suggestion %q, abort wanted %v", run.Suggest(), tc.wantAbort)
			}
			for _, cmd := range commandsIn(run.Suggest()) {
				if err := run.Accept(cmd); err != nil {
					t.Errorf("suggests %s, refused: %v", cmd, err)
				}
			}
		})
	}
}
