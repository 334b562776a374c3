package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
)

// pausableService is a service's update with GKE's controls: it succeeds
// after left reads in progress; a cancel ends it cancelled, a resume
// goes on under a new ID, a complete ends it.
type pausableService struct {
	managedFake
	mu        sync.Mutex
	phase     string
	deletion  time.Time
	left      int
	current   string
	cancelled map[string]bool
	calls     []string
	reads     int
	onRead    func(n int)
}

func (s *pausableService) StartUpdate(context.Context, bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = "op-1"
	return s.current, nil
}

func (s *pausableService) Progress(_ context.Context, id string) (cloud.UpdateProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.onRead != nil {
		s.onRead(s.reads)
	}
	p := cloud.UpdateProgress{ID: id, State: cloud.UpdateInProgress, Phase: s.phase, BlueDeletion: s.deletion}
	switch {
	case s.cancelled[id]:
		p.State = cloud.UpdateCancelled
	case id != s.current:
		return p, fmt.Errorf("unknown update %q", id)
	case s.left <= 0:
		p.State = cloud.UpdateSucceeded
	default:
		s.left--
	}
	return p, nil
}

func (s *pausableService) CancelUpdate(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "cancel "+id)
	s.cancelled[id] = true
	return nil
}

func (s *pausableService) ResumeUpdate(_ context.Context, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "resume "+id)
	s.current = fmt.Sprintf("op-%d", len(s.cancelled)+1)
	return s.current, nil
}

func (s *pausableService) CompleteUpdate(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "complete "+id)
	s.left = 0
	return nil
}

func (s *pausableService) called() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// TestServiceUpdateHeldByTheWindow: a window that closes while the
// service's update runs pauses it (its cancel) where the service can be
// paused and resumes it once the next opens; a soak that would end
// outside the window is held and ended inside it; where the service
// cannot be paused, or the soak ends inside a window anyway, the update
// goes on; --not-after stops the run with the update paused.
func TestServiceUpdateHeldByTheWindow(t *testing.T) {
	t.Parallel()
	// daily 10:00-11:00 UTC; the clock leaves the window at the update's
	// third read, 1.5 s before the next opening (day+1 10:00).
	day := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	opens := day.Add(34 * time.Hour)
	for _, tc := range []struct {
		name      string
		controls  []string
		phase     string
		deletion  time.Time
		notAfter  string
		wantCalls []string
		wantWait  bool
		wantErr   bool
	}{
		{name: "surge paused after the nodes in flight, resumed when the window opens", controls: []string{"cancel", "resume"},
			wantCalls: []string{"cancel op-1", "resume op-1"}, wantWait: true},
		{name: "an update the service cannot pause runs to its end", controls: []string{}},
		{name: "a soak the service would end outside the window is held, then ended inside it", controls: []string{"cancel", "resume", "complete"},
			phase: phaseSoaking, deletion: day.Add(11*time.Hour + 30*time.Minute), wantCalls: []string{"cancel op-1", "resume op-1", "complete op-2"}, wantWait: true},
		{name: "a soak that ends inside the next window goes on", controls: []string{"cancel", "resume", "complete"},
			phase: phaseSoaking, deletion: opens.Add(15 * time.Minute)},
		{name: "blue's deletion is not paused", controls: []string{"cancel", "resume"}, phase: phaseDeleteBlue},
		{name: "past --not-after the run stops with the update paused", controls: []string{"cancel", "resume"},
			notAfter: "2026-11-28T09:00:00Z", wantCalls: []string{"cancel op-1"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, svc, rec, waits, took := runWindowedService(t, tc.controls, tc.phase, tc.deletion, tc.notAfter, opens)
			var closed *WindowClosedError
			if tc.wantErr != errors.As(got.err, &closed) || (!tc.wantErr && got.err != nil) {
				t.Fatalf("run: %v, want a WindowClosedError: %v\n%s", got.err, tc.wantErr, got.out)
			}
			if calls := svc.called(); !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls %v, want %v\n%s", calls, tc.wantCalls, got.out)
			}
			if tc.wantErr {
				if rec.Managed.WindowPaused != "op-1" {
					t.Errorf("the record does not say the run paused op-1: %+v", rec.Managed)
				}
				return
			}
			if !tc.wantWait {
				if len(waits) > 0 || took > time.Second {
					t.Errorf("the run waited (%s, records %v):\n%s", took, waits, got.out)
				}
				return
			}
			if took < 1400*time.Millisecond || len(waits) != 2 || waits[0] == nil || !waits[0].Equal(opens) || waits[1] != nil {
				t.Errorf("took %s, record's waits %v: want a wait until %s\n%s", took, waits, opens, got.out)
			}
			if !strings.Contains(got.out, "paused the GKE node pool's update op-1") || rec.Managed.WindowPaused != "" || rec.Managed.UpdateID != "op-2" {
				t.Errorf("record %+v, log:\n%s", rec.Managed, got.out)
			}
		})
	}
}

// runWindowedService runs a service's update under "daily 10:00-11:00
// UTC", the clock leaving the window at the update's third read.
func runWindowedService(t *testing.T, controls []string, phase string, deletion time.Time, notAfter string, opens time.Time) (outcome, *pausableService, *state.Record, []*time.Time, time.Duration) {
	t.Helper()
	client := newTestClient(imageNode("old-1", "z1", "old"))
	clock := newTestClock(opens.Add(-23*time.Hour - 30*time.Minute))
	svc := &pausableService{managedFake: managedFake{None: cloud.None{Client: client}}, phase: phase, deletion: deletion, left: 6, cancelled: map[string]bool{},
		onRead: func(n int) {
			if n == 3 {
				clock.set(opens.Add(-1500 * time.Millisecond))
			}
		}}
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy), Nodes: plan.NodeCounts{Total: 1, Outdated: 1},
		Managed: &plan.ManagedPlan{Service: "GKE node pool", Target: "1.31", Controls: controls}}
	sched, err := window.ParseSchedule([]string{"daily 10:00-11:00 UTC"}, "", notAfter)
	if err != nil {
		t.Fatal(err)
	}
	rec := &state.Record{}
	var waits []*time.Time
	cfg := Config{Client: client, Plan: p, Provider: svc, Record: rec, Window: sched, Now: clock.now,
		Save: func(context.Context) error { waits = append(waits, rec.WaitingForWindow); return nil }}
	began := time.Now()
	got := runEngine(t, cfg, nil)
	var set []*time.Time
	for i, w := range waits { // the saves that changed the wait
		if i == 0 && w != nil || i > 0 && (w == nil) != (waits[i-1] == nil) {
			set = append(set, w)
		}
	}
	return got, svc, rec, set, time.Since(began)
}

// TestServiceUpdatePausedAtNotAfterResumes: the same run again with a
// later --not-after, inside a window, resumes the update the run paused
// and follows it to its end.
func TestServiceUpdatePausedAtNotAfterResumes(t *testing.T) {
	t.Parallel()
	opens := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	first, svc, rec, _, _ := runWindowedService(t, []string{"cancel", "resume"}, "", time.Time{}, "2026-11-28T09:00:00Z", opens)
	var closed *WindowClosedError
	if !errors.As(first.err, &closed) {
		t.Fatalf("first run: %v, want a WindowClosedError\n%s", first.err, first.out)
	}
	sched, err := window.ParseSchedule([]string{"daily 10:00-11:00 UTC"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	svc.onRead = nil
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy), Nodes: plan.NodeCounts{Total: 1, Outdated: 1},
		Managed: &plan.ManagedPlan{Service: "GKE node pool", Target: "1.31", Controls: []string{"cancel", "resume"}}}
	again := runEngine(t, Config{Client: svc.Client, Plan: p, Provider: svc, Record: rec, Window: sched, Start: plan.PhaseUpdate,
		Now: newTestClock(opens.Add(time.Minute)).now}, nil)
	if again.err != nil {
		t.Fatalf("re-run: %v\n%s", again.err, again.out)
	}
	if calls := svc.called(); !slices.Equal(calls, []string{"cancel op-1", "resume op-1"}) || rec.Managed.UpdateID != "op-2" || rec.Managed.WindowPaused != "" {
		t.Errorf("calls %v, record %+v; want op-1 resumed as op-2\n%s", calls, rec.Managed, again.out)
	}
}

// TestServiceUpdateStartWaitsForTheWindow: the window that closes between
// the settings and the update holds the update's start, and an update
// that cannot be paused starts only in an opening its estimate fits; a
// re-run that follows an update started already does not wait.
func TestServiceUpdateStartWaitsForTheWindow(t *testing.T) {
	t.Parallel()
	opens := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		started  string
		now      time.Time
		windows  []string
		wantWait string
	}{
		{name: "the start waits", now: opens.Add(-1500 * time.Millisecond), wantWait: "outside the maintenance window"},
		{name: "following does not wait", started: "op-1", now: opens.Add(-1500 * time.Millisecond)},
		// half a second left of the first window; the next, 1.5 s away,
		// fits the hour and a half the update takes
		{name: "the start waits for an opening it fits", now: opens.Add(time.Hour - 500*time.Millisecond),
			windows: []string{"daily 11:00:01-13:00 UTC"}, wantWait: "the maintenance window closes before the service's update's estimate ends"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newTestClient(imageNode("old-1", "z1", "old"))
			svc := &pausableService{managedFake: managedFake{None: cloud.None{Client: client}}, left: 2, cancelled: map[string]bool{}, current: tc.started}
			p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy), Nodes: plan.NodeCounts{Total: 1, Outdated: 1},
				Steps:   []plan.Step{{Phase: "Upgrade", Estimate: plan.Duration(90 * time.Minute)}},
				Managed: &plan.ManagedPlan{Service: "EKS managed node group", Target: "release 2", Controls: []string{}}}
			sched, err := window.ParseSchedule(append([]string{"daily 10:00-11:00 UTC"}, tc.windows...), "", "")
			if err != nil {
				t.Fatal(err)
			}
			rec := &state.Record{Managed: &state.ManagedRecord{Group: "pool", UpdateID: tc.started}}
			began := time.Now()
			got := runEngine(t, Config{Client: client, Plan: p, Provider: svc, Record: rec, Window: sched, Start: plan.PhaseUpdate, Now: newTestClock(tc.now).now}, nil)
			took := time.Since(began)
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			waited := strings.Contains(got.out, "the service's update waits until")
			if waited != (tc.wantWait != "") || !strings.Contains(got.out, tc.wantWait) || (waited && took < 1400*time.Millisecond) {
				t.Errorf("waited %v (took %s), want %q\n%s", waited, took, tc.wantWait, got.out)
			}
		})
	}
}
