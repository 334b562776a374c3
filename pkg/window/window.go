// Package window reads maintenance windows and answers when a run may
// start disruptive work: whether a time is inside a window, when the next
// one opens, and when the current one closes. It is pure: no clock, no
// cluster.
//
// A window is "DAYS START-END [ZONE]":
//
//	Sat-Sun 22:00-06:00 Europe/Berlin
//	Mon,Wed,Fri 01:00-04:30 America/New_York
//	daily 09:00:00-09:00:30 UTC
//
// DAYS are English day abbreviations (Mon … Sun), ranges of them (Fri-Mon
// wraps) and lists, or "daily". START and END are HH:MM or HH:MM:SS of
// the wall clock of ZONE (an IANA name; UTC when left out); END may be
// 24:00. The days are the days a window opens on: an END at or before
// START closes on the next day, so "Fri 22:00-06:00" runs from Friday
// 22:00 to Saturday 06:00. Wall-clock times that a daylight-saving change
// skips are taken as the same instant in the offset before the change
// (02:30 on a spring-forward night is 03:30); times it repeats, as the
// first of the two.
package window

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is one recurring window.
type Window struct {
	// Days are the weekdays the window opens on.
	Days [7]bool
	// Start and End are offsets from local midnight; End <= Start closes
	// on the next day.
	Start, End time.Duration
	Loc        *time.Location
	text       string
}

// String is the window as it was given.
func (w Window) String() string { return w.text }

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// Parse reads one window; its error says what is wrong and shows the form.
func Parse(s string) (Window, error) {
	w, err := parse(s)
	if err != nil {
		return Window{}, fmt.Errorf("invalid window %q: %v", s, err)
	}
	return w, nil
}

func parse(s string) (Window, error) {
	fields := strings.Fields(s)
	if len(fields) < 2 || len(fields) > 3 {
		return Window{}, fmt.Errorf("want DAYS START-END [ZONE], e.g. \"Sat-Sun 22:00-06:00 Europe/Berlin\"")
	}
	w := Window{Loc: time.UTC, text: strings.Join(fields, " ")}
	var err error
	if w.Days, err = parseDays(fields[0]); err != nil {
		return Window{}, err
	}
	if w.Start, w.End, err = parseSpan(fields[1]); err != nil {
		return Window{}, err
	}
	if len(fields) == 3 {
		// time.LoadLocation also takes "Local": the zone of the machine
		// the run happens on is not what an operator means by a window.
		if fields[2] == "Local" {
			return Window{}, fmt.Errorf("give an IANA time zone such as Europe/Berlin, not Local")
		}
		if w.Loc, err = time.LoadLocation(fields[2]); err != nil {
			return Window{}, fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin or UTC)", fields[2])
		}
	}
	return w, nil
}

func parseDays(s string) ([7]bool, error) {
	var days [7]bool
	if strings.EqualFold(s, "daily") {
		return [7]bool{true, true, true, true, true, true, true}, nil
	}
	for _, part := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, ok := dayNames[strings.ToLower(from)]
		if !ok {
			return days, fmt.Errorf("unknown day %q (want Mon, Tue, Wed, Thu, Fri, Sat, Sun, a range such as Mon-Fri, a list, or daily)", from)
		}
		b := a
		if isRange {
			if b, ok = dayNames[strings.ToLower(to)]; !ok {
				return days, fmt.Errorf("unknown day %q (want Mon, Tue, Wed, Thu, Fri, Sat, Sun, a range such as Mon-Fri, a list, or daily)", to)
			}
		}
		for d := a; ; d = (d + 1) % 7 {
			days[d] = true
			if d == b {
				break
			}
		}
	}
	return days, nil
}

func parseSpan(s string) (start, end time.Duration, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("want START-END such as 22:00-06:00, not %q", s)
	}
	if start, err = parseClock(a); err != nil {
		return 0, 0, err
	}
	if end, err = parseClock(b); err != nil {
		return 0, 0, err
	}
	switch {
	case start == 24*time.Hour:
		return 0, 0, fmt.Errorf("start %q: a window starts before 24:00", a)
	case start == end:
		return 0, 0, fmt.Errorf("start and end are both %q: an empty window (00:00-24:00 is the whole day)", a)
	}
	return start, end, nil
}

// parseClock reads HH:MM or HH:MM:SS, 24:00 included.
func parseClock(s string) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS", s)
	}
	limits := []int{24, 59, 59}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) != 2 || n < 0 || n > limits[i] {
			return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS (00:00 to 24:00)", s)
		}
		v[i] = n
	}
	d := time.Duration(v[0])*time.Hour + time.Duration(v[1])*time.Minute + time.Duration(v[2])*time.Second
	if d > 24*time.Hour {
		return 0, fmt.Errorf("time %q: want HH:MM or HH:MM:SS (00:00 to 24:00)", s)
	}
	return d, nil
}

// span is one opening of a window: [open, close).
type span struct{ open, close time.Time }

// at is the instant of wall-clock time of day d on the date y-m-dd in
// loc. time.Date leaves open which instant a skipped or repeated wall
// time is; the package comment promises one: a skipped time in the offset
// before the change, a repeated one as its first.
func at(y int, m time.Month, dd int, d time.Duration, loc *time.Location) time.Time {
	naive := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC).Add(d)
	// Zone changes are months apart: a day either side has the offsets
	// before and after any change near the time.
	before := offsetAt(naive.Add(-26*time.Hour), loc)
	after := offsetAt(naive.Add(26*time.Hour), loc)
	first := naive.Add(-time.Duration(max(before, after)) * time.Second)
	if offsetAt(first, loc) == max(before, after) {
		return first.In(loc)
	}
	second := naive.Add(-time.Duration(min(before, after)) * time.Second)
	if offsetAt(second, loc) == min(before, after) {
		return second.In(loc)
	}
	return naive.Add(-time.Duration(before) * time.Second).In(loc)
}

func offsetAt(t time.Time, loc *time.Location) int {
	_, off := t.In(loc).Zone()
	return off
}

// spans are the openings of w on the local dates from t's date - before
// to t's date + after, in order.
func (w Window) spans(t time.Time, before, after int) []span {
	lt := t.In(w.Loc)
	y, m, d := lt.Date()
	var out []span
	for i := -before; i <= after; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, w.Loc) // noon: never skipped
		if !w.Days[day.Weekday()] {
			continue
		}
		dy, dm, dd := day.Date()
		endDay := dd
		if w.End <= w.Start {
			endDay++
		}
		out = append(out, span{open: at(dy, dm, dd, w.Start, w.Loc), close: at(dy, dm, endDay, w.End, w.Loc)})
	}
	return out
}
