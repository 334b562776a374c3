package report

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time               { return c.t }
func (c *fakeClock) advance(d time.Duration)      { c.t = c.t.Add(d) }
func at(c *fakeClock, d time.Duration) *fakeClock { c.advance(d); return c }

var start = time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)

// twoNodes is a journal of n1 drained in batch 1, two pods held by PDBs
// (web 45 s, refused twice; db 60 s), and n2 held 30 s in batch 2, its
// drain not begun, and n3 drained in a scale-down: all as an attempt
// written 4m35s after start.
func twoNodes() (Attempt, *fakeClock) {
	c := &fakeClock{t: start}
	j := NewJournal(c.now)
	j.Enter("Taint", 0)
	j.NodeEvent("n1", ReasonTainted)
	j.NodeEvent("n2", ReasonTainted)
	at(c, time.Minute)
	j.Enter("Drain", 1)
	j.NodeEvent("n1", ReasonDraining)
	j.Blocked("n1", "app/web-0", "app/web")
	at(c, 5*time.Second)
	j.Blocked("n1", "app/web-0", "app/web") // the same block, refused again
	j.Blocked("n1", "app/db-0", "app/db")
	at(c, 40*time.Second)
	j.Left("n1", "app/web-0") // web held n1 45 s
	at(c, 20*time.Second)
	j.NodeEvent("n1", ReasonDrained) // db held it 60 s, released by the drain's end
	j.Enter("Remove", 1)
	j.NodeEvent("n1", ReasonRemoved)
	at(c, 2*time.Minute)
	j.Enter("ScaleDown", 0)
	j.NodeEvent("n3", ReasonDraining) // drained outside batches
	j.Enter("Drain", 2)
	j.Blocked("n2", "app/web-1", "app/web")
	at(c, 30*time.Second)
	return j.Attempt(), c // n2's block still open: counted to now
}

func TestJournalTimesBlocksByPodAndPDB(t *testing.T) {
	run, _ := twoNodes()
	byName := map[string]Node{}
	for _, n := range run.Nodes {
		byName[n.Name] = n
	}
	n1 := byName["n1"]
	if n1.Batch != 1 || n1.Tainted == nil || !n1.Tainted.Equal(start) || n1.Removed == nil || !n1.Removed.Equal(start.Add(2*time.Minute+5*time.Second)) {
		t.Errorf("n1's timeline %+v", n1)
	}
	tests := []struct {
		node, pod string
		held      time.Duration
		refusals  int
	}{
		{"n1", "app/web-0", 45 * time.Second, 2},
		{"n1", "app/db-0", time.Minute, 1},
		{"n2", "app/web-1", 30 * time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.node+" "+tt.pod, func(t *testing.T) {
			for _, b := range byName[tt.node].Blocks {
				if b.Pod == tt.pod {
					if b.Held() != tt.held || b.Refusals != tt.refusals {
						t.Errorf("block %+v held %s, want %s and %d refusals", b, b.Held(), tt.held, tt.refusals)
					}
					return
				}
			}
			t.Errorf("no block of %s on %s: %+v", tt.pod, tt.node, byName[tt.node].Blocks)
		})
	}
	if got := time.Duration(run.Phases["Drain"]); got != 65*time.Second+30*time.Second {
		t.Errorf("Drain took %s in all, want 1m35s", got)
	}
	if len(run.Batches) != 2 || run.Batches[0].To.Sub(run.Batches[0].From) != 65*time.Second+2*time.Minute {
		t.Errorf("batches %+v", run.Batches)
	}
	if n2, n3 := byName["n2"], byName["n3"]; n2.Batch != 0 || n3.Batch != 0 {
		t.Errorf("n2, never drained, in batch %d; n3, drained outside batches, in batch %d", n2.Batch, n3.Batch)
	}
	rep := Of("ng", History{Runs: []Run{{StartedAt: start, Attempts: []Attempt{run}}}})
	if b := rep.Runs[0].Blockers; len(b) != 3 || b[0].Pod != "app/db-0" || b[0].PDB != "app/db" || b[1].Pod != "app/web-0" {
		t.Errorf("blockers %+v, want db-0 first, then web-0", b)
	}
}

// TestPairReplacements: each removed node gets the first node Ready after
// it that no earlier removal took, whichever attempt saw either: a node
// removed by an attempt that stopped before its replacement was Ready is
// paired with a node the next attempt saw.
func TestPairReplacements(t *testing.T) {
	t1, t2 := start.Add(time.Minute), start.Add(5*time.Minute)
	run := Run{StartedAt: start, Attempts: []Attempt{
		{StartedAt: start, LastSeen: t2, Nodes: []Node{{Name: "old-2", Removed: &t2}, {Name: "old-1", Removed: &t1}, {Name: "kept"}},
			Fresh: []Replacement{{Name: "before", Ready: start}}}, // Ready before any removal: not a replacement
		{StartedAt: t2.Add(time.Minute), LastSeen: t2.Add(3 * time.Minute), Fresh: []Replacement{
			{Name: "new-b", Ready: t2.Add(2 * time.Minute)}, // after both
			{Name: "new-a", Ready: t1.Add(time.Minute)},     // after old-1's only
			{Name: "before", Ready: start},
		}},
	}}
	want := map[string]string{"old-1": "new-a", "old-2": "new-b", "kept": ""}
	for _, n := range Of("ng", History{Runs: []Run{run}}).Runs[0].Nodes {
		if n.Replacement != want[n.Name] {
			t.Errorf("%s replaced by %q, want %q", n.Name, n.Replacement, want[n.Name])
		}
	}
	if run.Attempts[0].Nodes[0].Replacement != "" {
		t.Errorf("pairing changed the history's nodes: %+v", run.Attempts[0].Nodes[0])
	}
}

// bigRun is a run of nodes nodes with blocks blocks each, named as EKS
// names nodes.
func bigRun(startedAt time.Time, nodes, blocks int) Attempt {
	run := Attempt{StartedAt: startedAt, Phases: map[string]Duration{"Drain": Duration(time.Hour)}}
	for i := range nodes {
		t := startedAt.Add(time.Duration(i) * time.Minute)
		n := Node{Name: fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/250, i%250), Batch: i + 1,
			Tainted: &t, DrainStart: &t, Drained: &t, Cordoned: &t, Removed: &t,
			Replacement: fmt.Sprintf("ip-10-1-%d-%d.eu-west-1.compute.internal", i/250, i%250), ReplacementReady: &t}
		for k := range blocks {
			n.Blocks = append(n.Blocks, Block{Pod: fmt.Sprintf("payments/checkout-api-7d9f8c6b5-%05d", k), PDB: "payments/checkout-api",
				From: t, To: t.Add(time.Duration(k+1) * time.Second), Refusals: 12})
		}
		run.Batches = append(run.Batches, BatchSpan{Batch: i + 1, From: t, To: t.Add(time.Minute)})
		run.Nodes = append(run.Nodes, n)
	}
	return run
}

func TestHistoryStaysFarBelowAConfigMap(t *testing.T) {
	tests := []struct {
		name          string
		runs, blocks  int
		wantRuns      int
		wantTrimmed   bool
		wantAllBlocks bool
	}{
		// a 200-node run whose every node a PDB held three times
		{name: "one 200-node run", runs: 1, blocks: 3, wantRuns: 1, wantAllBlocks: true},
		{name: "many runs keep the newest", runs: 8, blocks: 3, wantRuns: 1, wantAllBlocks: true},
		{name: "small runs keep MaxRuns", runs: 8, blocks: 0, wantRuns: MaxRuns},
		// a pathological run: 50 refusals of different pods per node
		{name: "a run too large loses its shortest blocks", runs: 1, blocks: 50, wantRuns: 1, wantTrimmed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h History
			nodes := 200
			if tt.blocks == 0 {
				nodes = 20
			}
			for i := range tt.runs {
				h = h.With(Run{StartedAt: start.Add(time.Duration(i) * 24 * time.Hour)}, bigRun(start, nodes, tt.blocks))
			}
			data, err := h.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > MaxBytes {
				t.Errorf("encoded %d bytes, above %d", len(data), MaxBytes)
			}
			var back History
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			newest := start.Add(time.Duration(tt.runs-1) * 24 * time.Hour)
			if len(back.Runs) != tt.wantRuns || !back.Runs[0].StartedAt.Equal(newest) {
				t.Fatalf("%d runs, the newest from %s; want %d, the newest %s", len(back.Runs), back.Runs[0].StartedAt, tt.wantRuns, newest)
			}
			r := back.Runs[0]
			if (r.Trimmed > 0) != tt.wantTrimmed || len(r.Attempts[0].Nodes) != nodes {
				t.Errorf("trimmed %d blocks, %d nodes", r.Trimmed, len(r.Attempts[0].Nodes))
			}
			if tt.wantAllBlocks && len(r.Attempts[0].Nodes[0].Blocks) != tt.blocks {
				t.Errorf("%d blocks kept of %d", len(r.Attempts[0].Nodes[0].Blocks), tt.blocks)
			}
			if tt.wantTrimmed {
				// the longest blocks stay
				top := Of("ng", back).Runs[0].Blockers
				if len(top) == 0 || time.Duration(top[0].Held) != 50*time.Second {
					t.Errorf("top blocker %+v, want one held 50s", top)
				}
			}
			t.Logf("%d runs, %d bytes", len(back.Runs), len(data))
		})
	}
}

// TestJournalTellsWhatAReportShows: OnChange hears of each change a report
// shows, and not of what only repeats (a refusal again, a milestone again).
func TestJournalTellsWhatAReportShows(t *testing.T) {
	c := &fakeClock{t: start}
	j := NewJournal(c.now)
	told := 0
	j.OnChange(func() { told++ })
	steps := []struct {
		name string
		do   func()
		tell bool
	}{
		{"a phase entered", func() { j.Enter("Drain", 1) }, true},
		{"drain start", func() { j.NodeEvent("n1", ReasonDraining) }, true},
		{"drain start again", func() { j.NodeEvent("n1", ReasonDraining) }, false},
		{"a refused eviction", func() { j.Blocked("n1", "app/web-0", "app/web") }, true},
		{"refused again", func() { j.Blocked("n1", "app/web-0", "app/web") }, false},
		{"the pod left", func() { j.Left("n1", "app/web-0") }, true},
		{"a pod with no block left", func() { j.Left("n1", "app/db-0") }, false},
		{"drained", func() { j.NodeEvent("n1", ReasonDrained) }, true},
		{"removed", func() { j.NodeEvent("n1", ReasonRemoved) }, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before := told
			s.do()
			if got := told > before; got != s.tell {
				t.Errorf("told %v, want %v", got, s.tell)
			}
		})
	}
}

// TestHistoryOfManyAttemptsStaysBelow: a run of many attempts, each with
// the timelines of 200 nodes, loses its oldest attempts' timelines, not
// its last's, and Encode leaves the history it encodes as it was.
func TestHistoryOfManyAttemptsStaysBelow(t *testing.T) {
	var h History
	for i := range 8 {
		a := bigRun(start.Add(time.Duration(i)*time.Hour), 200, 1)
		a.Nodes[0].Blocks[0].To = a.Nodes[0].Blocks[0].From.Add(time.Hour) // the longest: the last attempt's is kept
		h = h.With(Run{StartedAt: start}, a)
	}
	before, _ := json.Marshal(h)
	data, err := h.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(h); string(after) != string(before) {
		t.Errorf("Encode changed the history it encoded")
	}
	var back History
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	r := back.Runs[0]
	last := r.Attempts[len(r.Attempts)-1]
	if len(data) > MaxBytes || len(r.Attempts) != 8 || r.TrimmedAttempts == 0 || len(last.Nodes) != 200 || len(r.Attempts[0].Nodes) != 0 {
		t.Errorf("%d bytes, %d attempts, %d trimmed, the last with %d nodes, the first %d", len(data), len(r.Attempts), r.TrimmedAttempts, len(last.Nodes), len(r.Attempts[0].Nodes))
	}
	if top := Of("ng", back).Runs[0].Blockers; len(top) == 0 || top[0].Held != Duration(2*time.Hour) {
		t.Errorf("top blocker %+v, want the two kept attempts' summed, held 2h", top[:min(len(top), 1)])
	}
	t.Logf("%d bytes, %d blocks and the timelines of %d attempts left out", len(data), r.Trimmed, r.TrimmedAttempts)
}
