package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// step is a phase of an attempt: entered, its nodes drained (a PDB
// refusing each a while) and removed, lasting took.
type step struct {
	phase string
	batch int
	took  time.Duration
	drain []string
}

// attemptShape is an attempt of a run: its kind, its steps, how it ended
// ("" killed: its last periodic write is its last word), the pause
// before the next.
type attemptShape struct {
	kind    string
	steps   []step
	outcome string
	pause   time.Duration
}

// play records the attempts of a run started at c's time into h as a run
// would: a write every few seconds of the journal so far (the same
// attempt put again each time), and one at its end.
func play(h History, c *fakeClock, shapes []attemptShape) History {
	run := Run{StartedAt: c.t.Truncate(time.Second), Strategy: "eks"}
	for _, sh := range shapes {
		from := c.t
		j := NewJournal(c.now)
		save := func(end bool) {
			a := j.Attempt()
			a.Kind, a.StartedAt = sh.kind, from
			if end {
				a.EndedAt, a.Outcome = &a.LastSeen, sh.outcome
			}
			h = h.With(run, a)
		}
		for _, s := range sh.steps {
			j.Enter(s.phase, s.batch)
			for _, n := range s.drain {
				j.NodeEvent(n, ReasonDraining)
				j.Blocked(n, "app/web-0", "app/web")
			}
			for range 5 {
				c.advance(s.took / 5)
				save(false)
			}
			for _, n := range s.drain {
				j.NodeEvent(n, ReasonDrained)
				j.NodeEvent(n, ReasonRemoved)
			}
		}
		if sh.outcome != "" {
			c.advance(time.Second)
			save(true)
		}
		c.advance(sh.pause)
	}
	return h
}

var (
	taint  = step{phase: "Taint", took: 10 * time.Second}
	drain1 = step{phase: "Drain", batch: 1, took: 2 * time.Minute, drain: []string{"n1"}}
	drain2 = step{phase: "Drain", batch: 2, took: 3 * time.Minute, drain: []string{"n2"}}
	scale  = step{phase: "ScaleDown", took: 40 * time.Second}
	back   = step{phase: "Rollback", batch: 1, took: 90 * time.Second, drain: []string{"n3"}}
)

// TestReportTotalsWithinWallTime checks, over runs shaped like cancel and
// resume, a kill and a re-run, in-cluster pods deleted, and a rollback,
// that the report's time is the run's wall time across its attempts and
// the pauses between them, that its phase totals never exceed it, that
// each attempt's phases fit in the attempt, and that batches are numbered
// within their attempt.
func TestReportTotalsWithinWallTime(t *testing.T) {
	tests := []struct {
		name   string
		shapes []attemptShape
	}{
		{"one attempt", []attemptShape{{"run", []step{taint, drain1, drain2, scale}, "finished", 0}}},
		{"cancel, resume", []attemptShape{
			{"run", []step{taint, drain1}, "paused", 20 * time.Minute},
			{"resume", []step{drain2, scale}, "finished", 0}}},
		{"kill, re-run, kill, re-run", []attemptShape{
			{"run", []step{taint, drain1}, "", time.Minute},
			{"re-run", []step{taint, drain1}, "", 30 * time.Second},
			{"re-run", []step{drain1, drain2, scale}, "finished", 0}}},
		{"in-cluster pods deleted", []attemptShape{
			{"in-cluster", []step{taint, drain1}, "", 45 * time.Second},
			{"in-cluster", []step{drain1}, "", 45 * time.Second},
			{"in-cluster", []step{drain1, drain2}, "finished", 0}}},
		{"cancel, resume, kill, re-run, rollback", []attemptShape{
			{"run", []step{taint, drain1}, "paused", 5 * time.Minute},
			{"resume", []step{drain1}, "", time.Minute},
			{"re-run", []step{drain2}, "failed", 2 * time.Minute},
			{"rollback", []step{back, scale}, "rolled back", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeClock{t: start.Add(700 * time.Millisecond)}
			// an earlier run of the group, to be left as it was
			h := play(History{}, c, []attemptShape{{"run", []step{drain1}, "finished", time.Hour}})
			earlier, _ := json.Marshal(h.Runs[0])
			begun := c.t
			h = play(h, c, tt.shapes)
			if got, _ := json.Marshal(h.Runs[1]); !bytes.Equal(got, earlier) {
				t.Errorf("the earlier run changed:\n%s\n%s", earlier, got)
			}
			checkTotals(t, Of("ng", h).Runs[0], begun, len(tt.shapes))
		})
	}
}

// checkTotals holds a run's report to the wall time of its attempts.
func checkTotals(t *testing.T, rr RunReport, begun time.Time, attempts int) {
	t.Helper()
	var last AttemptReport
	if len(rr.Attempts) > 0 {
		last = rr.Attempts[len(rr.Attempts)-1]
	}
	wall := last.LastSeen.Sub(begun.Truncate(time.Second)).Truncate(time.Second)
	if len(rr.Attempts) != attempts || time.Duration(rr.Took) != wall {
		t.Fatalf("%d attempts, took %s; want %d, the wall time %s", len(rr.Attempts), rr.Took, attempts, wall)
	}
	var sum Duration
	for _, p := range rr.PhaseTotals {
		sum += p.Took
	}
	if sum > rr.Took {
		t.Errorf("phase totals add up to %s, over the run's %s: %+v", sum, rr.Took, rr.PhaseTotals)
	}
	var attemptsTook Duration
	for i, a := range rr.Attempts {
		attemptsTook += a.Took
		if a.Attempt != i+1 || a.Outcome == "" {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
	}
	if sum > attemptsTook || attemptsTook > rr.Took {
		t.Errorf("phases %s, attempts %s, run %s: want phases ≤ attempts ≤ run", sum, attemptsTook, rr.Took)
	}
}

// TestWritingAgainChangesNothing: an attempt written 100 times (as a run
// does every few seconds) reads as written once, and the history it was
// put in is left as it was.
func TestWritingAgainChangesNothing(t *testing.T) {
	c := &fakeClock{t: start}
	base := play(History{}, c, []attemptShape{
		{"run", []step{taint, drain1}, "paused", time.Minute}})
	before, err := base.Encode()
	if err != nil {
		t.Fatal(err)
	}
	j := NewJournal(c.now)
	j.Enter("Drain", 1)
	j.NodeEvent("n2", ReasonDraining)
	j.Blocked("n2", "app/db-0", "app/db")
	c.advance(time.Minute)
	a := j.Attempt()
	a.Kind = "resume"
	run := Run{StartedAt: start, Strategy: "eks"}
	once, err := base.With(run, a).Encode()
	if err != nil {
		t.Fatal(err)
	}
	h := base
	for range 100 {
		h = base.With(run, a)
		h = h.With(run, a) // and over itself
	}
	again, err := h.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(once, again) {
		t.Errorf("written 100 times:\n%s\nonce:\n%s", again, once)
	}
	// put over an attempt the history has: a copy of it changes, not it
	first := base.Runs[0].Attempts[0]
	first.Outcome, first.Nodes = "failed", nil
	if got := base.With(run, first).Runs[0].Attempts[0]; got.Outcome != "failed" {
		t.Errorf("the attempt put over is %+v", got)
	}
	if after, _ := base.Encode(); !bytes.Equal(after, before) {
		t.Errorf("the history written over changed:\n%s\nwas:\n%s", after, before)
	}
	if got := len(h.Runs[0].Attempts); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}
}

// TestHistoryOfAnEarlierVersionReads: a History written before attempts
// (every attempt merged into the run, "attempts" their count) reads as one
// attempt whose timelines are the run's.
func TestHistoryOfAnEarlierVersionReads(t *testing.T) {
	old := `{"runs":[{"startedAt":"2026-11-27T22:00:00Z","finishedAt":"2026-11-27T22:10:00Z","outcome":"finished","strategy":"eks",
		"attempts":2,"phases":{"Drain":"4m0s"},"batches":[{"batch":1,"from":"2026-11-27T22:01:00Z","to":"2026-11-27T22:05:00Z"}],
		"nodes":[{"name":"n1","batch":1,"drained":"2026-11-27T22:04:00Z","blocks":[{"pod":"app/web-0","pdb":"app/web","from":"2026-11-27T22:02:00Z","to":"2026-11-27T22:03:00Z","refusals":3}]}]}]}`
	var h History
	if err := json.Unmarshal([]byte(old), &h); err != nil {
		t.Fatal(err)
	}
	rr := Of("ng", h).Runs[0]
	if len(rr.Attempts) != 1 || len(rr.Nodes) != 1 || len(rr.Batches) != 1 || rr.Took != Duration(10*time.Minute) ||
		len(rr.Blockers) != 1 || rr.Blockers[0].Held != Duration(time.Minute) || rr.PhaseTotals[0].Took != Duration(4*time.Minute) {
		t.Errorf("read as %+v", rr)
	}
}

// TestTableShowsEachAttempt: the table lists the attempts, numbers batches
// within theirs, and shows no batch for a node its attempt did not drain.
func TestTableShowsEachAttempt(t *testing.T) {
	c := &fakeClock{t: start}
	h := play(History{}, c, []attemptShape{
		{"run", []step{taint, drain1}, "", time.Minute},
		{"re-run", []step{{phase: "Drain", batch: 1, took: 3 * time.Minute, drain: []string{"n2"}}}, "finished", 0}})
	// n2 was tainted by the first attempt, which never drained it
	h.Runs[0].Attempts[0].Nodes = append(h.Runs[0].Attempts[0].Nodes, Node{Name: "n2", Tainted: &start})
	h.Runs[0].Outcome = "finished"
	var out strings.Builder
	if err := WriteTable(&out, Of("demo", h)); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"(eks; attempts: 2): finished",
		"ATTEMPT   KIND     STARTED    ENDED      TOOK    BATCHES   OUTCOME",
		"1         run      22:00:00   22:02:10   2m10s   1         interrupted",
		"2         re-run   22:03:10   22:06:11   3m1s    1         finished",
		"Phases (over all attempts):",
		"ATTEMPT   BATCH   FROM",
		"2         1       22:03:10",
		"n2     1         -       22:00:00",
		"n2     2         1       -",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
}

// TestTookAgainstTheWorkAndTheSoak: a run whose node-pool soak
// "complete" ended is told its work's estimate with the soak apart, and
// is over only past both.
func TestTookAgainstTheWorkAndTheSoak(t *testing.T) {
	for _, tc := range []struct {
		name       string
		took, soak time.Duration
		want       string
	}{
		{"no soak", 3 * time.Minute, 0, "Took 3m0s; the plan estimated 2m0s (1m0s over)"},
		{"soak ended early", 90 * time.Second, time.Minute, "Took 1m30s; the plan estimated 1m0s plus a soak of 1m0s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			run := RunReport{StartedAt: start, Outcome: "finished", Estimate: Duration(2 * time.Minute), Soak: Duration(tc.soak), Took: Duration(tc.took)}
			if err := writeRun(&out, "demo", run); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("report lacks %q:\n%s", tc.want, out.String())
			}
		})
	}
}

// TestRunMeasuredAgainstItsFirstPlan: a resumed run's later attempts
// plan only what is left; the run's wall time is told against its first
// plan's estimate, and the report says which plan.
func TestRunMeasuredAgainstItsFirstPlan(t *testing.T) {
	first := Run{StartedAt: start, Strategy: "eks", Estimate: Duration(104 * time.Second)}
	h := History{}.With(first, Attempt{Kind: "run", StartedAt: start})
	resumed := first
	resumed.Estimate = Duration(time.Second) // what the last attempt's plan had left
	h = h.With(resumed, Attempt{Kind: "resume", StartedAt: start.Add(30 * time.Second)})
	if got := h.Runs[0].Estimate; got != Duration(104*time.Second) {
		t.Fatalf("estimate %s after the resume, want the first plan's 1m44s", time.Duration(got))
	}
	h.Runs[0].Outcome = "finished"
	var out strings.Builder
	if err := WriteTable(&out, Of("demo", h)); err != nil {
		t.Fatal(err)
	}
	if want := "; the first plan estimated 1m44s\n"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}
