package window

import (
	"fmt"
	"strings"
	"time"
)

// Schedule is when a run may start disruptive work: inside one of the
// Windows (any time when there are none), not before NotBefore and not at
// or after NotAfter (zero: unbounded).
type Schedule struct {
	Windows   []Window
	NotBefore time.Time
	NotAfter  time.Time
}

// ParseSchedule reads --window (each), --not-before and --not-after; its
// errors name the flag.
func ParseSchedule(windows []string, notBefore, notAfter string) (Schedule, error) {
	var s Schedule
	for _, text := range windows {
		w, err := parse(text)
		if err != nil {
			return Schedule{}, fmt.Errorf("invalid --window %q: %v", text, err)
		}
		s.Windows = append(s.Windows, w)
	}
	var err error
	if s.NotBefore, err = ParseTime(notBefore); err != nil {
		return Schedule{}, fmt.Errorf("invalid --not-before %q: %v", notBefore, err)
	}
	if s.NotAfter, err = ParseTime(notAfter); err != nil {
		return Schedule{}, fmt.Errorf("invalid --not-after %q: %v", notAfter, err)
	}
	if !s.NotBefore.IsZero() && !s.NotAfter.IsZero() && !s.NotAfter.After(s.NotBefore) {
		return Schedule{}, fmt.Errorf("--not-after %s is not after --not-before %s", notAfter, notBefore)
	}
	return s, nil
}

// ParseTime reads an RFC 3339 time (2026-12-05T22:00:00+01:00) or a date
// (2026-12-05, its 00:00 UTC); "" is the zero time.
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want RFC 3339 such as 2026-12-05T22:00:00+01:00, or a date such as 2026-12-05 (00:00 UTC)")
}

// Empty reports whether the schedule allows every time.
func (s Schedule) Empty() bool {
	return len(s.Windows) == 0 && s.NotBefore.IsZero() && s.NotAfter.IsZero()
}

// String says the schedule in one line, as the plan and the run show it.
func (s Schedule) String() string {
	var parts []string
	if len(s.Windows) > 0 {
		var ws []string
		for _, w := range s.Windows {
			ws = append(ws, w.String())
		}
		parts = append(parts, strings.Join(ws, "; "))
	}
	if !s.NotBefore.IsZero() {
		parts = append(parts, "not before "+s.NotBefore.Format(time.RFC3339))
	}
	if !s.NotAfter.IsZero() {
		parts = append(parts, "not after "+s.NotAfter.Format(time.RFC3339))
	}
	return strings.Join(parts, ", ")
}

// Contains reports whether disruptive work may start at t.
func (s Schedule) Contains(t time.Time) bool {
	if t.Before(s.NotBefore) || (!s.NotAfter.IsZero() && !t.Before(s.NotAfter)) {
		return false
	}
	return len(s.Windows) == 0 || s.inWindow(t)
}

func (s Schedule) inWindow(t time.Time) bool {
	for _, w := range s.Windows {
		for _, sp := range w.spans(t, 1, 0) {
			if !t.Before(sp.open) && t.Before(sp.close) {
				return true
			}
		}
	}
	return false
}

// NextOpen is the first time at or after t at which work may start (t
// itself inside a window); false when none comes before NotAfter.
func (s Schedule) NextOpen(t time.Time) (time.Time, bool) {
	if t.Before(s.NotBefore) {
		t = s.NotBefore
	}
	if len(s.Windows) > 0 {
		t = s.nextWindow(t)
	}
	if !s.NotAfter.IsZero() && !t.Before(s.NotAfter) {
		return time.Time{}, false
	}
	return t, true
}

// nextWindow is the first time at or after t inside a window: every
// window opens within a week.
func (s Schedule) nextWindow(t time.Time) time.Time {
	var best time.Time
	for _, w := range s.Windows {
		for _, sp := range w.spans(t, 1, 8) {
			if !sp.close.After(t) {
				continue
			}
			open := sp.open
			if open.Before(t) {
				open = t
			}
			if best.IsZero() || open.Before(best) {
				best = open
			}
		}
	}
	return best
}

// Closes is when the opening that contains t ends, windows that overlap
// or touch taken as one; false when it never does (windows around the
// clock and no NotAfter). t must be inside (Contains).
func (s Schedule) Closes(t time.Time) (time.Time, bool) {
	end, ok := s.NotAfter, !s.NotAfter.IsZero()
	if len(s.Windows) == 0 {
		return end, ok
	}
	if c, closes := s.windowCloses(t); closes && (!ok || c.Before(end)) {
		return c, true
	}
	return end, ok
}

// closeHorizon bounds the walk over touching windows: windows that go on
// for longer than this are taken as never closing.
const closeHorizon = 16

func (s Schedule) windowCloses(t time.Time) (time.Time, bool) {
	cur := t
	for range closeHorizon {
		next := cur
		for _, w := range s.Windows {
			for _, sp := range w.spans(cur, 1, 0) {
				if !cur.Before(sp.open) && cur.Before(sp.close) && sp.close.After(next) {
					next = sp.close
				}
			}
		}
		if next.Equal(cur) {
			return cur, true
		}
		cur = next
	}
	return time.Time{}, false
}

// Work is a stretch of a run for Finish: how long it takes and whether it
// may start only inside a window (a batch, a scale-down, a deletion).
// Fit work starts only in an opening at least D long, where one comes
// within a week (a service's update that cannot be paused); Pausable
// work runs only inside windows, paused between them (one that can).
type Work struct {
	D             time.Duration
	Gated         bool
	Fit, Pausable bool
}

// Finish is when work started at start ends, each gated part waiting for
// the next opening and then running to its end; false when a gated part
// could not start before NotAfter (the time then is where the run stops).
func (s Schedule) Finish(start time.Time, work []Work) (time.Time, bool) {
	t := start
	for _, w := range work {
		var ok bool
		switch {
		case w.Pausable:
			if t, ok = s.spread(t, w.D); !ok {
				return t, false
			}
			continue
		case w.Fit:
			if at, fits := s.OpenFor(t, w.D); fits {
				t, ok = at, true
			} else {
				t, ok = s.NextOpen(t)
			}
		case w.Gated:
			t, ok = s.NextOpen(t)
		default:
			ok = true
		}
		if !ok {
			return t, false
		}
		t = t.Add(w.D)
	}
	return t, true
}

// fitHorizon is how far OpenFor looks for an opening long enough.
const fitHorizon = 8 * 24 * time.Hour

// OpenFor is the first time at or after t inside a window whose opening
// lasts at least d from then (t itself when it does); false when none
// within a week is that long, or none comes before NotAfter.
func (s Schedule) OpenFor(t time.Time, d time.Duration) (time.Time, bool) {
	from := t
	for t.Sub(from) <= fitHorizon {
		at, ok := s.NextOpen(t)
		if !ok {
			return time.Time{}, false
		}
		c, closes := s.Closes(at)
		if !closes || c.Sub(at) >= d {
			return at, true
		}
		t = c
	}
	return time.Time{}, false
}

// spread runs d of work from t inside windows only, paused between them;
// false when it cannot end before NotAfter (the time then is the last
// close).
func (s Schedule) spread(t time.Time, d time.Duration) (time.Time, bool) {
	for left := d; ; {
		at, ok := s.NextOpen(t)
		if !ok {
			return t, false
		}
		c, closes := s.Closes(at)
		if !closes || c.Sub(at) >= left {
			return at.Add(left), true
		}
		left -= c.Sub(at)
		t = c
	}
}
