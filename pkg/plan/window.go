package plan

import (
	"fmt"
	"io"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
)

// WindowPlan is when the run may start its batches and the steps that
// take capacity away (--window, --not-before, --not-after), and what the
// estimates make of it.
type WindowPlan struct {
	Windows   []string   `json:"windows,omitempty"`
	NotBefore *time.Time `json:"notBefore,omitempty"`
	NotAfter  *time.Time `json:"notAfter,omitempty"`
	// Opens is when the run's first change may be made (the time planned
	// when a window is open then).
	Opens time.Time `json:"opens"`
	// EstimatedFinish is the end the estimates give across the windows:
	// each batch waits for an opening and then runs to its end. Nil when
	// --not-after comes first; StopsAt then says where the run stops.
	EstimatedFinish *time.Time `json:"estimatedFinish,omitempty"`
	StopsAt         string     `json:"stopsAt,omitempty"`
	// Note says what the window cannot hold (a service's update, once
	// started, runs to its end).
	Note string `json:"note,omitempty"`
}

// gatedSteps are the steps that start only inside a window besides the
// first (see internal/upgrade/window.go): those that take capacity away.
var gatedSteps = map[string]bool{"ScaleDown": true, "DeleteBlue": true}

// ScheduleIn puts the windows in the plan, with the estimated finish
// across them from now; an empty schedule leaves the plan as it is.
func (p *Plan) ScheduleIn(s window.Schedule, now time.Time) {
	if s.Empty() {
		return
	}
	w := &WindowPlan{}
	for _, win := range s.Windows {
		w.Windows = append(w.Windows, win.String())
	}
	if !s.NotBefore.IsZero() {
		w.NotBefore = &s.NotBefore
	}
	if !s.NotAfter.IsZero() {
		w.NotAfter = &s.NotAfter
	}
	w.Opens, _ = s.NextOpen(now)
	work, names := p.windowWork()
	finish, ok := s.Finish(now, work)
	if ok {
		w.EstimatedFinish = &finish
	} else {
		w.StopsAt = stopsAt(s, now, work, names)
	}
	if p.Managed != nil {
		w.Note = "the service's update cannot be paused once started: the window holds its start only, and it may run past the window's end"
	}
	p.Window = w
}

// windowWork is the plan's steps as window.Work, each batch step split
// into its batches, and what each part is called.
func (p *Plan) windowWork() ([]window.Work, []string) {
	var work []window.Work
	var names []string
	for i, st := range p.Steps {
		d := time.Duration(st.Estimate)
		if batchSteps[st.Phase] && len(p.Batches) > 0 {
			per := d / time.Duration(len(p.Batches))
			for b := range p.Batches {
				work = append(work, window.Work{D: per, Gated: true})
				names = append(names, fmt.Sprintf("batch %d/%d", b+1, len(p.Batches)))
			}
			continue
		}
		work = append(work, window.Work{D: d, Gated: i == 0 || gatedSteps[st.Phase]})
		names = append(names, st.Phase)
	}
	return work, names
}

// stopsAt names the part of the work that could not start before
// NotAfter.
func stopsAt(s window.Schedule, now time.Time, work []window.Work, names []string) string {
	for i := range work {
		if _, ok := s.Finish(now, work[:i+1]); !ok {
			return names[i]
		}
	}
	return ""
}

// writeWindow shows the windows and the finish the estimates give.
func writeWindow(w io.Writer, p *Plan) {
	win := p.Window
	if win == nil {
		return
	}
	fmt.Fprintln(w, "\nMaintenance window (batches, the scale-down and blue's deletion start only inside it; a batch started runs to its end):")
	for _, s := range win.Windows {
		fmt.Fprintf(w, "  window      %s\n", s)
	}
	if win.NotBefore != nil {
		fmt.Fprintf(w, "  not before  %s\n", win.NotBefore.Format(time.RFC3339))
	}
	if win.NotAfter != nil {
		fmt.Fprintf(w, "  not after   %s (the run stops there, resumable)\n", win.NotAfter.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "  opens       %s\n", win.Opens.Format(time.RFC3339))
	if win.EstimatedFinish != nil {
		fmt.Fprintf(w, "  est. finish %s\n", win.EstimatedFinish.Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "  est. stop   before %s: no window left before --not-after\n", win.StopsAt)
	}
	if win.Note != "" {
		fmt.Fprintf(w, "  note        %s\n", win.Note)
	}
}
