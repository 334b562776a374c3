package upgrade

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestGateBeforeTheSecondWaveOfABlueGreenRun: blue/green with waves 1,2
// and a command gate before wave 2. A passing gate lets wave 2 go on; a
// failing one pauses the run (GateFailedError: exit 8) with only the
// canary drained (blue's nodes count as replaced only once blue is
// deleted), or, with --on-gate-fail rollback, turns the run around:
// blue back in service, the green the run created deleted. Each way, the
// record keeps the verdict.
func TestGateBeforeTheSecondWaveOfABlueGreenRun(t *testing.T) {
	t.Parallel()
	canary := concat(blueGreenStart, []string{"WaitForRoom 1", "Drain 1", "Recover 1", "BatchSoak 1"})
	// The run's directory, not the test's: a relative script passes there.
	runDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(runDir, "canary-check.sh"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, gate, onFail, dir string
		wantPhases              []string
		check                   func(*testing.T, *bgRun, outcome)
	}{
		{name: "passed: wave 2 goes on", gate: "exec:true",
			wantPhases: concat(canary, []string{"WaitForRoom 2", "Drain 2", "Recover 2", "BatchSoak 2", "WaitForRoom 3", "Drain 3", "Recover 3", "Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantBlueDeleted(t, r, got)
			}},
		{name: "passed in the run's directory: a relative script", gate: "exec:./canary-check.sh", dir: runDir,
			wantPhases: concat(canary, []string{"WaitForRoom 2", "Drain 2", "Recover 2", "BatchSoak 2", "WaitForRoom 3", "Drain 3", "Recover 3", "Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantBlueDeleted(t, r, got)
			}},
		{name: "failed, pause: only the canary drained", gate: "exec:echo too many errors; exit 3", onFail: plan.OnGateFailPause,
			wantPhases: canary,
			check: func(t *testing.T, r *bgRun, got outcome) {
				var failed *GateFailedError
				if !errors.As(got.err, &failed) || failed.Wave != 2 || len(failed.Replaced) != 0 {
					t.Fatalf("error %v, want a GateFailedError before wave 2, no node replaced (blue's are, at DeleteBlue)", got.err)
				}
				var paused *PausedError
				if !errors.As(got.err, &paused) {
					t.Errorf("error %v is not a pause", got.err)
				}
				for _, want := range []string{"paused before wave 2", `command "echo too many errors; exit 3" ended with exit status 3: too many errors`, "no node replaced yet"} {
					if !strings.Contains(got.err.Error(), want) {
						t.Errorf("error %q does not say %q", got.err, want)
					}
				}
				if calls := r.blue.callsLike("DeleteGroup"); len(calls) != 0 {
					t.Errorf("deleted %v", calls)
				}
			}},
		{name: "failed, rollback: blue serves again", gate: "exec:exit 1", onFail: plan.OnGateFailRollback,
			wantPhases: concat(canary, []string{"Rollback", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				if got.err != nil {
					t.Fatalf("run: %v\n%s", got.err, got.out)
				}
				want := append(slices.Clone(greenCreated), "SetGroupSizes asg min 1, desired 3, max 4", "DeleteGroup asg-v2")
				if calls := r.blue.callsNow(); !slices.Equal(calls, want) {
					t.Errorf("calls %v, want %v", calls, want)
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
				wantCordoned(t, "green", r.nodesOf("asg-v2-"), false, 0)
				wantNoMarks(t, r.client)
				if !strings.Contains(got.out, "wave 2: a gate failed: rolling back (--on-gate-fail rollback)") {
					t.Errorf("output:\n%s", got.out)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newBGRun(t)
			r.in.BatchNodes = 1
			r.planAndConfigureWith(plan.Input{Waves: plan.Waves{Sizes: []string{"1", "2"}, Gates: []string{tc.gate}, OnFail: tc.onFail}})
			journal := report.NewJournal(time.Now)
			r.cfg.Journal = journal
			r.cfg.GateDir = tc.dir
			got := r.run(func(s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.sendWhenWatched(state.RequestComplete)
				}
			})
			if !slices.Equal(got.phases, tc.wantPhases) {
				t.Errorf("phases %q, want %q", got.phases, tc.wantPhases)
			}
			tc.check(t, r, got)
			// The wave's soak and gates are a phase of their own in the
			// report, not the time of the phase before them.
			if _, ok := journal.Attempt().Phases[report.PhaseWaveSoak]; !ok {
				t.Errorf("report phases %v lack %s", journal.Attempt().Phases, report.PhaseWaveSoak)
			}
			wantGateRecorded(t, r.cfg.Record, tc.gate, tc.dir != "" || tc.gate == "exec:true")
		})
	}
}

// wantGateRecorded checks the record keeps one evaluated gate before
// wave 2, with gate's verdict.
func wantGateRecorded(t *testing.T, rec *state.Record, spec string, pass bool) {
	t.Helper()
	if len(rec.Gates) != 1 {
		t.Fatalf("record has gates %+v, want one", rec.Gates)
	}
	g := rec.Gates[0]
	if g.Wave != 2 || g.Pending() || g.Pass != pass || len(g.Verdicts) != 1 || g.Verdicts[0].Gate != spec {
		t.Errorf("recorded gate %+v, want wave 2 evaluated, pass %v, one verdict of %q", g, pass, spec)
	}
	if !pass && g.Verdicts[0].Reason != gate.ReasonExit {
		t.Errorf("verdict %+v, want reason %q", g.Verdicts[0], gate.ReasonExit)
	}
}
