package plan

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
)

func TestScheduleInEstimatesTheFinishAcrossWindows(t *testing.T) {
	// 2026-11-27 is a Friday; now is 12:00 UTC.
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	threeBatches := func(managed bool) *Plan {
		p := &Plan{Batches: make([]Batch, 3), Steps: []Step{
			{Phase: "Taint", Estimate: 0},
			{Phase: "Upgrade", Estimate: Duration(3 * 90 * time.Minute)},
			{Phase: "ScaleDown", Estimate: Duration(30 * time.Minute)},
		}}
		if managed {
			p.Managed = &ManagedPlan{}
		}
		return p
	}
	tests := []struct {
		name     string
		windows  []string
		notAfter string
		managed  bool
		opens    string
		finish   string // "" when --not-after stops it
		stopsAt  string
	}{
		// two batches start in the first night (22:00, 23:30); the third
		// would start at 01:00, as the window closes: it waits for the
		// next night, and the scale-down follows it inside
		{name: "two nights", windows: []string{"daily 22:00-01:00"}, opens: "2026-11-27T22:00:00Z", finish: "2026-11-29T00:00:00Z"},
		// the third batch starts at 01:00 inside and runs past 02:00; the
		// scale-down, at 02:30, waits for the next night
		{name: "a batch runs past the close", windows: []string{"daily 22:00-02:00"}, opens: "2026-11-27T22:00:00Z", finish: "2026-11-28T22:30:00Z"},
		{name: "inside now", windows: []string{"daily 11:00-18:00"}, opens: "2026-11-27T12:00:00Z", finish: "2026-11-27T17:00:00Z"},
		{name: "not after the first night", windows: []string{"daily 22:00-01:00"}, notAfter: "2026-11-28T12:00:00Z", opens: "2026-11-27T22:00:00Z", stopsAt: "batch 3/3"},
		{name: "managed", windows: []string{"daily 11:00-18:00"}, managed: true, opens: "2026-11-27T12:00:00Z", finish: "2026-11-27T17:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := window.ParseSchedule(tt.windows, "", tt.notAfter)
			if err != nil {
				t.Fatal(err)
			}
			p := threeBatches(tt.managed)
			p.ScheduleIn(s, now)
			w := p.Window
			if w == nil || w.Opens.Format(time.RFC3339) != tt.opens {
				t.Fatalf("window %+v, want it to open %s", w, tt.opens)
			}
			switch {
			case tt.finish != "" && (w.EstimatedFinish == nil || w.EstimatedFinish.Format(time.RFC3339) != tt.finish):
				t.Errorf("finish %v, want %s", w.EstimatedFinish, tt.finish)
			case tt.finish == "" && (w.EstimatedFinish != nil || w.StopsAt != tt.stopsAt):
				t.Errorf("finish %v, stops at %q; want a stop at %q", w.EstimatedFinish, w.StopsAt, tt.stopsAt)
			}
			if (w.Note != "") != tt.managed {
				t.Errorf("note %q, want one only for a service's update", w.Note)
			}
			var out bytes.Buffer
			writeWindow(&out, p)
			for _, want := range append([]string{"window      " + tt.windows[0], "opens       " + tt.opens}, tt.finish, tt.stopsAt) {
				if !strings.Contains(out.String(), want) {
					t.Errorf("printed plan lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestScheduleInLeavesAPlanWithoutWindowsAsItIs(t *testing.T) {
	p := &Plan{}
	p.ScheduleIn(window.Schedule{}, time.Now())
	if p.Window != nil {
		t.Errorf("window %+v, want none", p.Window)
	}
}

// TestScheduleInAServiceUpdate: a service's update that can be paused
// runs inside windows only, paused between them; one that cannot starts
// in an opening that fits its estimate, and the plan warns where none
// within a week does.
func TestScheduleInAServiceUpdate(t *testing.T) {
	noon := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		controls []string
		window   string
		now      time.Time
		opens    string
		finish   string
		note     string
		warning  string
	}{
		// 1 min of settings at 22:00, then 2 h 59 m of the 4 h update
		// the first night and the 1 h 1 m left the next
		{name: "paused between windows", controls: []string{"cancel", "resume"}, window: "daily 22:00-01:00", now: noon,
			opens: "2026-11-27T22:00:00Z", finish: "2026-11-28T23:02:00Z", note: "pauses the GKE node pool's update after the nodes in flight"},
		{name: "cannot be paused, fits", controls: []string{}, window: "daily 22:00-03:00", now: noon,
			opens: "2026-11-27T22:00:00Z", finish: "2026-11-28T02:02:00Z", note: "once started it runs to its end regardless of the window"},
		// 3 h 30 m left at 23:30 is less than the 4 h 1 m it needs
		{name: "cannot be paused, waits for an opening it fits", controls: []string{}, window: "daily 22:00-03:00", now: noon.Add(11*time.Hour + 30*time.Minute),
			opens: "2026-11-28T22:00:00Z", finish: "2026-11-29T02:02:00Z", note: "in an opening that fits its estimate of 4h1m"},
		{name: "cannot be paused, fits no opening", controls: []string{}, window: "daily 22:00-01:00", now: noon,
			opens: "2026-11-27T22:00:00Z", finish: "2026-11-28T02:02:00Z", warning: "longer than any window opening of the next week (the next, at 2026-11-27T22:00:00Z, lasts 3h)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := window.ParseSchedule([]string{tt.window}, "", "")
			if err != nil {
				t.Fatal(err)
			}
			p := &Plan{Managed: &ManagedPlan{Service: "GKE node pool", Controls: tt.controls}, Steps: []Step{
				{Phase: "Configure", Estimate: Duration(time.Minute)},
				{Phase: "Upgrade", Estimate: Duration(4 * time.Hour)},
				{Phase: "RestoreSettings", Estimate: Duration(time.Minute)},
			}}
			p.ScheduleIn(s, tt.now)
			w := p.Window
			if got := w.Opens.Format(time.RFC3339); got != tt.opens {
				t.Errorf("opens %s, want %s", got, tt.opens)
			}
			if w.EstimatedFinish == nil || w.EstimatedFinish.Format(time.RFC3339) != tt.finish {
				t.Errorf("finish %v, want %s", w.EstimatedFinish, tt.finish)
			}
			if !strings.Contains(w.Note, tt.note) || (tt.warning == "") != (w.Warning == "") || !strings.Contains(w.Warning, tt.warning) {
				t.Errorf("note %q, warning %q; want %q and %q", w.Note, w.Warning, tt.note, tt.warning)
			}
			var out bytes.Buffer
			writeWindow(&out, p)
			if !strings.Contains(out.String(), "the service's update starts only inside it") || strings.Contains(out.String(), "WARNING") != (tt.warning != "") {
				t.Errorf("printed plan:\n%s", out.String())
			}
		})
	}
}
