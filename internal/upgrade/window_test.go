package upgrade

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
)

// testClock is the real clock moved to a time the test sets as the run
// enters states: the engine's timers run on the real one.
type testClock struct {
	mu    sync.Mutex
	t     time.Time
	setAt time.Time
}

func newTestClock(t time.Time) *testClock { return &testClock{t: t, setAt: time.Now()} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t.Add(time.Since(c.setAt))
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t, c.setAt = t, time.Now()
}

func TestMaintenanceWindowHoldsBatchStarts(t *testing.T) {
	t.Parallel()
	// 2026-11-27 is a Friday; the window is 10:00-11:00 UTC every day.
	day := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	inside, opens := day.Add(10*time.Hour+30*time.Minute), day.Add(10*time.Hour)
	for _, tc := range []struct {
		name string
		// start is the clock at the start; at, when set, is the clock
		// once the run enters setAt
		start, at time.Time
		setAt     string
		notAfter  string
		wantWait  string // the gate that waited; "" none
		wantErr   bool
		lastPhase string
		resumeAt  plan.Phase
	}{
		{name: "inside, nothing waits", start: inside, lastPhase: "Done"},
		{name: "the first change waits", start: opens.Add(-1500 * time.Millisecond), wantWait: "phase Taint waits until 2026-11-27T10:00:00Z", lastPhase: "Done"},
		// a run going on where one stopped made its first change: its
		// next batch waits
		{name: "a resumed run's first batch waits", start: opens.Add(-1500 * time.Millisecond), resumeAt: plan.PhaseTaint, wantWait: "batch 1/3 waits until 2026-11-27T10:00:00Z", lastPhase: "Done"},
		// the window closes during batch 1's drain: batch 1 goes on to
		// its end, batch 2 waits for the next opening
		{name: "the batch in flight finishes, the next waits", start: inside, setAt: "Drain 1", at: opens.Add(-1500 * time.Millisecond), wantWait: "batch 2/3 waits until 2026-11-27T10:00:00Z", lastPhase: "Done"},
		{name: "past --not-after the run stops before the next batch", start: inside, setAt: "Drain 1", at: day.Add(10*time.Hour + 50*time.Minute), notAfter: "2026-11-27T10:45:00Z", wantErr: true, lastPhase: "Recover 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newTestClient(
				imageNode("old-1", "z1", "old"), imageNode("old-2", "z1", "old"), imageNode("old-3", "z1", "old"), imageNode("new-1", "z1", "new"),
				appPod("web-1", "old-1", "100m"), appPod("web-2", "old-2", "100m"), appPod("web-3", "old-3", "100m"),
			)
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			sched, err := window.ParseSchedule([]string{"daily 10:00-11:00 UTC"}, "", tc.notAfter)
			if err != nil {
				t.Fatal(err)
			}
			clock := newTestClock(tc.start)
			rec := &state.Record{}
			var waits []*time.Time
			cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: true}, Drain: drainOpts(), Record: rec, Window: sched, Now: clock.now, Start: tc.resumeAt,
				Save: func(context.Context) error { waits = append(waits, rec.WaitingForWindow); return nil }}
			began := time.Now()
			got := runEngine(t, cfg, func(s plan.State) {
				if phaseName(s) == tc.setAt {
					clock.set(tc.at)
				}
			})
			took := time.Since(began)
			var closed *WindowClosedError
			if tc.wantErr != errors.As(got.err, &closed) || (!tc.wantErr && got.err != nil) {
				t.Fatalf("run: %v, want a WindowClosedError: %v\n%s", got.err, tc.wantErr, got.out)
			}
			if last := got.phases[len(got.phases)-1]; last != tc.lastPhase {
				t.Errorf("last phase %s, want %s (phases %v)", last, tc.lastPhase, got.phases)
			}
			if tc.wantWait == "" {
				if strings.Contains(got.out, "waits until") || len(waits) > 0 {
					t.Errorf("the run waited:\n%s", got.out)
				}
				return
			}
			if !strings.Contains(got.out, tc.wantWait) {
				t.Errorf("log lacks %q:\n%s", tc.wantWait, got.out)
			}
			// the wait is a timer to the opening: 1.5 s of the real clock
			if took < 1400*time.Millisecond {
				t.Errorf("the run took %s: it did not wait for the window", took)
			}
			if len(waits) != 2 || waits[0] == nil || !waits[0].Equal(opens) || waits[1] != nil {
				t.Errorf("the record's waits %v, want the opening %s then none", waits, opens)
			}
		})
	}
}

// TestCancelDuringWindowWaitNamesTheRecordedPhase: a wait for a window
// comes before its state is entered, so cancel pauses the run in the
// phase its record names, in the words status and run use for it.
func TestCancelDuringWindowWaitNamesTheRecordedPhase(t *testing.T) {
	for _, tc := range []struct {
		name, recorded, want string
	}{
		{"before the first phase", "", "paused by cancel before its first phase"},
		{"between batches", string(plan.PhaseRecover), "paused by cancel in phase Recover"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ww := &windowWait{record: &state.Record{Phase: tc.recorded}}
			err := ww.windowRequest(context.Background(), state.RequestCancel)
			var paused *PausedError
			if !errors.As(err, &paused) || err.Error() != tc.want {
				t.Errorf("cancel while waiting: %v, want %q", err, tc.want)
			}
		})
	}
}
