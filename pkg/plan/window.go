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
	// Note says what the window does to a service's update (pauses it,
	// or cannot); Warning that the update that cannot be paused is
	// estimated longer than any opening of the next week.
	Note    string `json:"note,omitempty"`
	Warning string `json:"warning,omitempty"`
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
	if p.Managed != nil {
		w.Note, w.Warning = p.serviceWindowNote(s, now)
		if at, fits := s.OpenFor(now, p.ServiceNeeds(PhaseConfigure)); fits && !p.Managed.Pausable() {
			w.Opens = at
		}
	}
	finish, ok := s.Finish(now, work)
	if ok {
		w.EstimatedFinish = &finish
	} else {
		w.StopsAt = stopsAt(s, now, work, names)
	}
	p.Window = w
}

// windowWork is the plan's steps as window.Work, each batch step split
// into its batches, and what each part is called.
func (p *Plan) windowWork() ([]window.Work, []string) {
	if p.Managed != nil {
		return p.serviceWork()
	}
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

// serviceSteps are the steps of a service's update's plan that are the
// run's own, not the service's update.
var serviceSteps = map[string]bool{"Configure": true, "RestoreSettings": true}

// ServiceNeeds is the opening a service's update that cannot be paused
// needs from phase on: its settings (from Configure) and the update.
func (p *Plan) ServiceNeeds(from Phase) time.Duration {
	var d time.Duration
	for _, st := range p.Steps {
		if !serviceSteps[st.Phase] || (st.Phase == "Configure" && from == PhaseConfigure) {
			d += time.Duration(st.Estimate)
		}
	}
	return d
}

// serviceWork is a service's update as window.Work: the settings (the
// run's first change, gated), the update (paused between windows where
// the service pauses it; else started, with the settings, in an opening
// it fits), the settings put back.
func (p *Plan) serviceWork() ([]window.Work, []string) {
	var configure, restore time.Duration
	for _, st := range p.Steps {
		switch st.Phase {
		case "Configure":
			configure = time.Duration(st.Estimate)
		case "RestoreSettings":
			restore = time.Duration(st.Estimate)
		}
	}
	update := p.ServiceNeeds(PhaseUpdate)
	work := []window.Work{{D: configure, Gated: true}, {D: update, Gated: true, Pausable: true}, {D: restore}}
	names := []string{"Configure", "the service's update", "RestoreSettings"}
	if !p.Managed.Pausable() {
		work = []window.Work{{D: configure + update, Fit: true}, {D: restore}}
		names = []string{"the service's update", "RestoreSettings"}
	}
	return work, names
}

// serviceWindowNote says what the window does to the service's update,
// and warns where one that cannot be paused fits no opening.
func (p *Plan) serviceWindowNote(s window.Schedule, now time.Time) (note, warning string) {
	mp := p.Managed
	if mp.Pausable() {
		// GKE's operation counts nodes, not zones: the pause cannot wait
		// for a zone's end.
		note = fmt.Sprintf("when a window closes, the run pauses the %s's update after the nodes in flight (its cancel; not at a zone's end: the service does not say where a zone ends) and resumes it when the next opens", mp.Service)
		if p.Strategy == string(StrategyBlueGreen) {
			note += "; a soak that would end outside a window is held and ended in the next; blue's deletion, once begun, runs to its end"
		}
		return note, ""
	}
	d := p.ServiceNeeds(PhaseConfigure)
	note = fmt.Sprintf("the %s's update cannot be paused: once started it runs to its end regardless of the window; it starts only inside a window, in an opening that fits its estimate of %s", mp.Service, FormatDuration(d))
	if _, fits := s.OpenFor(now, d); fits {
		return note, ""
	}
	at, ok := s.NextOpen(now)
	if !ok {
		return note, ""
	}
	left := "no end"
	if c, closes := s.Closes(at); closes {
		left = FormatDuration(c.Sub(at))
	}
	return note, fmt.Sprintf("the update's estimate of %s is longer than any window opening of the next week (the next, at %s, lasts %s): it starts there and runs past the window's close", FormatDuration(d), at.Format(time.RFC3339), left)
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
	if p.Managed != nil {
		fmt.Fprintln(w, "\nMaintenance window (the service's update starts only inside it; see the note for what it does once started):")
	} else {
		fmt.Fprintln(w, "\nMaintenance window (batches, the scale-down and blue's deletion start only inside it; a batch started runs to its end):")
	}
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
	if win.Warning != "" {
		fmt.Fprintf(w, "  WARNING     %s\n", win.Warning)
	}
}
