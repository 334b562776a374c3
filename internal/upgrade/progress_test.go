package upgrade

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// testProgress is a reporter of a run of 3 nodes in 3 batches estimated
// 6m, all of it the batches'.
func testProgress(live bool, earlier int) (*progress, *bytes.Buffer, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	p := &plan.Plan{
		Batches: make([]plan.Batch, 3),
		Nodes:   plan.NodeCounts{Outdated: 3},
		Steps:   []plan.Step{{Phase: "Taint"}, {Phase: "Upgrade", Estimate: plan.Duration(6 * time.Minute)}},
	}
	pr := newProgress(&buf, live, clock.now, p, earlier)
	pr.width = func() int { return 0 }
	return pr, &buf, clock
}

// lastLine is what a terminal shows last: the text after the last line
// feed or carriage return.
func lastLine(s string) string {
	s = s[max(strings.LastIndexAny(s, "\r\n")+1, 0):]
	return strings.TrimPrefix(s, "\x1b[K")
}

func TestProgressLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		earlier int
		feed    func(p *progress, c *fakeClock)
		want    string
	}{
		{name: "before any batch: the plan's estimate",
			feed: func(p *progress, c *fakeClock) { p.enter(plan.State{Phase: plan.PhaseTaint}, 0) },
			want: "Taint | 0/3 nodes | elapsed 0s | ETA ~6m0s"},
		{name: "a batch shows n/m and the wait by name, up to three",
			feed: func(p *progress, c *fakeClock) {
				p.enter(plan.State{Phase: plan.PhaseRecover, Batch: 0}, 1)
				c.advance(10 * time.Second)
				p.waitingFor("workloads to be Ready again: " + listNames([]string{"a", "b", "c", "d", "e"}, waitNamesShown))
			},
			// Entered at its recovery (a resumed run): the phases before it
			// count as planned (a drain of 1m, the 1m left of the plan's
			// batch at removal), the recovery as long as it has lasted.
			want: "Recover | batch 1/3 | 1/3 nodes | elapsed 10s | ETA ~6m20s | waiting for workloads to be Ready again: a, b, c +2 more"},
		{name: "measured batches correct the ETA",
			feed: func(p *progress, c *fakeClock) {
				p.enter(plan.State{Phase: plan.PhaseDrain, Batch: 0}, 0)
				c.advance(30 * time.Second)
				p.enter(plan.State{Phase: plan.PhaseDrain, Batch: 1}, 1)
			},
			// 3 batches of 30s, 30s of them gone.
			want: "Drain | batch 2/3 | 1/3 nodes | elapsed 30s | ETA ~1m0s"},
		{name: "late batches: those not begun still take their time",
			feed: func(p *progress, c *fakeClock) {
				p.enter(plan.State{Phase: plan.PhaseDrain, Batch: 0}, 0)
				c.advance(4 * time.Minute)
				p.enter(plan.State{Phase: plan.PhaseDrain, Batch: 1}, 1)
				c.advance(9 * time.Minute)
				p.tick()
			},
			want: "Drain | batch 2/3 | 1/3 nodes | elapsed 13m0s | ETA ~4m0s"},
		{name: "a part late past the estimate: the batches not begun still take their time",
			feed: func(p *progress, c *fakeClock) {
				p.enter(plan.State{Phase: plan.PhaseTaint}, 0)
				c.advance(7 * time.Minute)
				p.tick()
			},
			want: "Taint | 0/3 nodes | elapsed 7m0s | ETA ~6m0s"},
		{name: "the last batch past its time",
			feed: func(p *progress, c *fakeClock) {
				p.enter(plan.State{Phase: plan.PhaseDrain, Batch: 0}, 0)
				c.advance(30 * time.Second)
				p.enter(plan.State{Phase: plan.PhaseDrain, Batch: 1}, 1)
				c.advance(30 * time.Second)
				p.enter(plan.State{Phase: plan.PhaseDrain, Batch: 2}, 2)
				c.advance(time.Minute)
				p.tick()
			},
			want: "Drain | batch 3/3 | 2/3 nodes | elapsed 2m0s | ETA any moment (past the estimate)"},
		{name: "a retry of a request shows until it is sent again",
			feed: func(p *progress, c *fakeClock) {
				p.enter(plan.State{Phase: plan.PhaseTaint}, 0)
				p.retrying(transport.RetryNotice{Verb: "PUT", Target: "nodes/a", Reason: "API server answered 503", Wait: 4 * time.Second})
			},
			want: "Taint | 0/3 nodes | elapsed 0s | ETA ~6m0s | API server answered 503 (PUT nodes/a), retrying in 4s"},
		{name: "and is gone once it was",
			feed: func(p *progress, c *fakeClock) {
				p.enter(plan.State{Phase: plan.PhaseTaint}, 0)
				p.retrying(transport.RetryNotice{Verb: "PUT", Target: "nodes/a", Reason: "API server answered 503", Wait: 4 * time.Second})
				c.advance(4 * time.Second)
				p.tick()
			},
			// The batches not begun: all of the plan's 6m.
			want: "Taint | 0/3 nodes | elapsed 4s | ETA ~6m0s"},
		{name: "earlier attempts count in the nodes",
			earlier: 6,
			feed:    func(p *progress, c *fakeClock) { p.enter(plan.State{Phase: plan.PhaseTaint}, 6) },
			want:    "Taint | 6/9 nodes | elapsed 0s | ETA ~6m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, buf, clock := testProgress(true, tc.earlier)
			tc.feed(p, clock)
			if got := lastLine(buf.String()); got != tc.want {
				t.Errorf("status line\n%q, want\n%q", got, tc.want)
			}
		})
	}
}

// TestProgressLiveLogLines: a log line takes the status line off, and the
// status line comes back under it; close leaves no status line behind.
func TestProgressLiveLogLines(t *testing.T) {
	t.Parallel()
	p, buf, _ := testProgress(true, 0)
	p.println("before any state")
	p.enter(plan.State{Phase: plan.PhaseTaint}, 0)
	p.println("10:00:00 tainting")
	p.close()
	want := "before any state\n" +
		"\r\x1b[KTaint | 0/3 nodes | elapsed 0s | ETA ~6m0s" +
		"\r\x1b[K10:00:00 tainting\n" +
		"\r\x1b[KTaint | 0/3 nodes | elapsed 0s | ETA ~6m0s" +
		"\r\x1b[K"
	if got := buf.String(); got != want {
		t.Errorf("output\n%q, want\n%q", got, want)
	}
}

func TestProgressLiveLineFitsTheTerminal(t *testing.T) {
	t.Parallel()
	p, buf, _ := testProgress(true, 0)
	p.width = func() int { return 20 }
	p.enter(plan.State{Phase: plan.PhaseTaint}, 0)
	if got := lastLine(buf.String()); got != "Taint | 0/3 nodes …" {
		t.Errorf("status line %q: want it cut to 19 columns", got)
	}
}

// TestProgressPlain: without a terminal, no control characters, and the
// status as a plain line every 30s of a wait, never more often.
func TestProgressPlain(t *testing.T) {
	t.Parallel()
	p, buf, clock := testProgress(false, 0)
	p.enter(plan.State{Phase: plan.PhaseDrain}, 0)
	p.println("10:00:00 batch 1/3: draining \"a\"")
	var printed []time.Duration
	for s := 1; s <= 100; s++ {
		if s == 5 {
			p.waitingFor(`the pods to leave "a"`)
		}
		clock.advance(time.Second)
		before := buf.Len()
		p.tick()
		if buf.Len() > before {
			printed = append(printed, time.Duration(s)*time.Second)
		}
	}
	// The wait began at 4s.
	if want := []time.Duration{34 * time.Second, 64 * time.Second, 94 * time.Second}; !equalDurations(printed, want) {
		t.Errorf("plain lines at %v, want %v", printed, want)
	}
	p.retrying(transport.RetryNotice{Verb: "GET", Target: "nodes", Reason: "connection to the API server lost", Wait: time.Second})
	if want := "10:01:40 connection to the API server lost (GET nodes), retrying in 1s\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("output\n%s\nwant a retry's line\n%s", buf, want)
	}
	if strings.ContainsAny(buf.String(), "\r\x1b") {
		t.Errorf("control characters without a terminal: %q", buf.String())
	}
	if want := `10:00:34 progress: Drain | batch 1/3 | 0/3 nodes | elapsed 34s | ETA ~5m26s | waiting for the pods to leave "a"`; !strings.Contains(buf.String(), want+"\n") {
		t.Errorf("output\n%s\nwant the line\n%s", buf, want)
	}
	// No wait, no line.
	p.enter(plan.State{Phase: plan.PhaseRemove}, 0)
	before := buf.Len()
	for range 100 {
		clock.advance(time.Second)
		p.tick()
	}
	if buf.Len() != before {
		t.Errorf("lines outside a wait: %q", buf.String()[before:])
	}
}

// TestProgressLearnsWithinTheFirstBatch: the scale-up's wait for new
// nodes and the first batch's drain replace the plan's 3m and 1m before a
// batch has ended, the scale-down following the batches' pace; a plain
// line shows the ETA as each batch starts.
func TestProgressLearnsWithinTheFirstBatch(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	perBatch := plan.DrainEstimate + 5*time.Second
	p := &plan.Plan{
		Batches: make([]plan.Batch, 3), Nodes: plan.NodeCounts{Outdated: 3}, PostDrainWait: plan.Duration(5 * time.Second),
		Steps: []plan.Step{
			{Phase: "ScaleUp", Estimate: plan.Duration(plan.NodeLaunchEstimate)},
			{Phase: "Upgrade", Estimate: plan.Duration(3 * perBatch)},
			{Phase: "ScaleDown", Estimate: plan.Duration(2 * perBatch)},
		},
	}
	pr := newProgress(&buf, false, clock.now, p, 0)
	// The plan's: 3m + 3 x 1m5s + 2 x 1m5s.
	if eta, _ := pr.eta(0); eta != "~8m25s" {
		t.Errorf("ETA before anything %s, want the plan's ~8m25s", eta)
	}
	pr.enter(plan.State{Phase: plan.PhaseScaleUp}, 0)
	clock.advance(10 * time.Second)
	pr.enter(plan.State{Phase: plan.PhaseTaint}, 0)
	clock.advance(time.Second)
	pr.enter(plan.State{Phase: plan.PhaseRoom}, 0)
	pr.enter(plan.State{Phase: plan.PhaseDrain}, 0)
	clock.advance(5 * time.Second)
	pr.enter(plan.State{Phase: plan.PhaseCordon}, 0)
	// Batches of 5s drain + 5s wait: 3 x 10s, 5s of the first gone;
	// scale-down 2 x 10s.
	if eta, _ := pr.eta(16 * time.Second); eta != "~45s" {
		t.Errorf("ETA after the first drain %s, want ~45s", eta)
	}
	clock.advance(5 * time.Second)
	pr.enter(plan.State{Phase: plan.PhaseRemove}, 0)
	pr.enter(plan.State{Phase: plan.PhaseRoom, Batch: 1}, 1)
	if want := "10:00:21 progress: WaitForRoom | batch 2/3 | 1/3 nodes | elapsed 21s | ETA ~40s\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("plain output\n%s\nwant the line\n%s", buf.String(), want)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRunSummary(t *testing.T) {
	t.Parallel()
	nine := []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	for _, tc := range []struct {
		name string
		s    runSummary
		want string
	}{
		{"one run", runSummary{Now: nine}, "upgrade of 9 nodes finished"},
		{"re-run after Ctrl-C in the scale-down: every node replaced before",
			runSummary{Earlier: nine}, "upgrade of 9 nodes finished (0 by this run, 9 by an earlier, interrupted one)"},
		{"resumed after 2 nodes", runSummary{Earlier: nine[:2], Now: nine[2:]}, "upgrade of 9 nodes finished (7 by this run, 2 by an earlier, interrupted one)"},
		{"a node retried after an interruption counts once", runSummary{Earlier: nine[:3], Now: nine[2:]}, "upgrade of 9 nodes finished (7 by this run, 2 by an earlier, interrupted one)"},
		{"one node", runSummary{Now: nine[:1]}, "upgrade of 1 node finished"},
		{"rolled back in place", runSummary{Rollback: true, Now: nine[:3]}, "rolled back 3 nodes"},
		{"rollback resumed", runSummary{Rollback: true, Earlier: nine[:1], Now: nine[1:3]}, "rolled back 3 nodes (2 by this run, 1 by an earlier, interrupted one)"},
		{"blue/green rollback", runSummary{BlueGreen: true, BlueBack: 3, GreenDrained: 1}, "rolled back: 3 nodes of blue serve again, 1 node of green drained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.s.String(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestFinalLineCountsTheWholeRun runs the engine with nodes replaced by
// earlier attempts, as a re-run after Ctrl-C does.
func TestFinalLineCountsTheWholeRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		earlier     []string
		rollingBack bool
		want        string
	}{
		{name: "first attempt", want: "upgrade of 2 nodes finished"},
		{name: "re-run after Ctrl-C", earlier: []string{"gone-1", "gone-2", "gone-3"}, want: "upgrade of 5 nodes finished (2 by this run, 3 by an earlier, interrupted one)"},
		{name: "rollback in place", rollingBack: true, want: "rolled back 2 nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newTestClient(imageNode("old-1", "z1", "old"), imageNode("old-2", "z1", "old"), imageNode("new-1", "z1", "new"))
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: true}, Drain: drainOpts(), EarlierDone: tc.earlier, RollingBack: tc.rollingBack}
			got := runEngine(t, cfg, nil)
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			lines := strings.Split(strings.TrimSpace(got.out), "\n")
			if last := lines[len(lines)-1]; !strings.HasSuffix(last, " "+tc.want) {
				t.Errorf("final line %q, want %q", last, tc.want)
			}
		})
	}
}

// TestProgressETAOfAServiceUpdate: during a service's update, once it has
// replaced nodes, the ETA is its pace over the nodes left, not the plan's
// figure, the service's documented worst case.
func TestProgressETAOfAServiceUpdate(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	p := &plan.Plan{Batches: make([]plan.Batch, 1), Nodes: plan.NodeCounts{Outdated: 4},
		Steps: []plan.Step{{Phase: string(plan.PhaseUpdate), Estimate: plan.Duration(4 * time.Hour)}}}
	pr := newProgress(&buf, false, clock.now, p, 0)
	pr.enter(plan.State{Phase: plan.PhaseUpdate}, 0)
	clock.advance(10 * time.Minute)
	if eta, _ := pr.eta(10 * time.Minute); eta != "~3h50m0s" {
		t.Errorf("ETA before a node is replaced %s, want the plan's ~3h50m", eta)
	}
	pr.setDone(1)
	if eta, _ := pr.eta(10 * time.Minute); eta != "~30m0s" {
		t.Errorf("ETA after one node in 10m %s, want ~30m for the 3 left", eta)
	}
	if line := pr.lineLocked(clock.now()); !strings.Contains(line, "1/4 nodes") {
		t.Errorf("progress %q does not count the node replaced", line)
	}
}

// TestProgressETACountsWhatIsLeft: the ETA is the parts of the plan not
// yet ended at the run's pace, so a part that ended sooner than planned
// (a soak "complete" ended, a wait the plan set at its worst) leaves no
// time behind it, and one that ran late takes none from the rest.
func TestProgressETACountsWhatIsLeft(t *testing.T) {
	t.Parallel()
	blueGreen := []plan.Step{
		{Phase: "CreateGreen", Estimate: plan.Duration(time.Minute)}, {Phase: "CordonBlue"},
		{Phase: "DrainBlue", Estimate: plan.Duration(time.Minute)},
		{Phase: "Soak", Estimate: plan.Duration(5 * time.Minute)}, {Phase: "DeleteBlue", Estimate: plan.Duration(time.Minute)},
	}
	service := []plan.Step{
		{Phase: "Configure", Estimate: plan.Duration(15 * time.Second)}, {Phase: "Upgrade", Estimate: plan.Duration(time.Minute)},
		{Phase: "RestoreSettings", Estimate: plan.Duration(15 * time.Second)},
	}
	// entered is a phase the run enters, and how long it stays.
	type entered struct {
		phase plan.Phase
		stays time.Duration
	}
	for _, tc := range []struct {
		name  string
		steps []plan.Step
		run   []entered
		want  string
	}{
		{"a soak complete ended after 30s of its 5m", blueGreen, []entered{{plan.PhaseCreateGreen, time.Minute}, {plan.PhaseCordonBlue, 0},
			{plan.PhaseDrain, time.Minute}, {plan.PhaseSoak, 30 * time.Second}, {plan.PhaseDeleteBlue, 0}}, "~1m0s"},
		{"a green 2m late: the rest as planned", blueGreen, []entered{{plan.PhaseCreateGreen, 3 * time.Minute}, {plan.PhaseCordonBlue, 0}}, "~7m0s"},
		{"in the soak: what is left of it and the deletion", blueGreen, []entered{{plan.PhaseSoak, 2 * time.Minute}}, "~4m0s"},
		{"a service's settings sooner than planned", service, []entered{{plan.PhaseConfigure, time.Second}, {plan.PhaseUpdate, 20 * time.Second}}, "~55s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{t: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)}
			p := &plan.Plan{Batches: make([]plan.Batch, 1), Nodes: plan.NodeCounts{Outdated: 2}, Steps: tc.steps}
			if tc.steps[0].Phase == "Configure" {
				p.Managed = &plan.ManagedPlan{}
			}
			pr := newProgress(&bytes.Buffer{}, false, clock.now, p, 0)
			for _, e := range tc.run {
				pr.enter(plan.State{Phase: e.phase}, 0)
				clock.advance(e.stays)
			}
			if eta, _ := pr.eta(clock.now().Sub(pr.start)); eta != tc.want {
				t.Errorf("ETA %s, want %s", eta, tc.want)
			}
		})
	}
}
