package window

import (
	"strings"
	"testing"
	"time"
)

func mustSchedule(t *testing.T, windows ...string) Schedule {
	t.Helper()
	s, err := ParseSchedule(windows, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseRefusesWithTheForm(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "want DAYS START-END [ZONE]"},
		{"Sat", "want DAYS START-END [ZONE]"},
		{"Sat 22:00-06:00 Europe/Berlin extra", "want DAYS START-END [ZONE]"},
		{"Sab 22:00-06:00", `unknown day "Sab"`},
		{"Mon-Fry 22:00-06:00", `unknown day "Fry"`},
		{"Sat 22:00", "want START-END"},
		{"Sat 25:00-06:00", `time "25:00"`},
		{"Sat 22:60-06:00", `time "22:60"`},
		{"Sat 2:00-06:00", `time "2:00"`},
		{"Sat 24:00-06:00", "starts before 24:00"},
		{"Sat 24:01-06:00", `time "24:01"`},
		{"Sat 06:00-06:00", "an empty window"},
		{"Sat 22:00-06:00 Mars/Olympus", `unknown time zone "Mars/Olympus"`},
		{"Sat 22:00-06:00 Local", "not Local"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want an error with %q", tt.in, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestParseScheduleNamesTheFlag(t *testing.T) {
	tests := []struct {
		name                string
		windows             []string
		notBefore, notAfter string
		want                string
	}{
		{"window", []string{"Sat 22:00-06:00", "Sun 99:00-01:00"}, "", "", `invalid --window "Sun 99:00-01:00": time "99:00"`},
		{"not-before", nil, "tomorrow", "", `invalid --not-before "tomorrow": want RFC 3339`},
		{"not-after", nil, "", "2026-13-01", `invalid --not-after "2026-13-01": want RFC 3339`},
		{"not-after before not-before", nil, "2026-12-05", "2026-12-04T23:00:00Z", "--not-after 2026-12-04T23:00:00Z is not after --not-before 2026-12-05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSchedule(tt.windows, tt.notBefore, tt.notAfter)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct{ in, want string }{
		{"2026-12-05", "2026-12-05T00:00:00Z"},
		{"2026-12-05T22:00:00+01:00", "2026-12-05T21:00:00Z"},
		{"2026-12-05T22:00:00Z", "2026-12-05T22:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTime(tt.in)
			if err != nil || !got.Equal(utc(tt.want)) {
				t.Fatalf("ParseTime(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestContains(t *testing.T) {
	// 2026-11-27 is a Friday.
	tests := []struct {
		name   string
		window string
		at     string
		want   bool
	}{
		// kured #204: a window from 22:00 to 06:00 never matched, as the
		// times were compared on one day.
		{"across midnight, evening", "Mon-Fri 22:00-06:00", "2026-11-27T23:30:00Z", true},
		{"across midnight, after midnight", "Mon-Fri 22:00-06:00", "2026-11-28T01:00:00Z", true},
		{"across midnight, at its end", "Mon-Fri 22:00-06:00", "2026-11-28T06:00:00Z", false},
		{"across midnight, at its start", "Mon-Fri 22:00-06:00", "2026-11-27T22:00:00Z", true},
		{"across midnight, day", "Mon-Fri 22:00-06:00", "2026-11-27T12:00:00Z", false},
		// Saturday 01:00 belongs to Friday's window, Sunday 01:00 to Saturday's, not given
		{"opened on a day not listed", "Mon-Fri 22:00-06:00", "2026-11-29T01:00:00Z", false},
		{"monday after midnight is sunday's", "Mon-Fri 22:00-06:00", "2026-11-30T01:00:00Z", false},
		{"range that wraps the week", "Fri-Mon 01:00-02:00", "2026-11-30T01:30:00Z", true},
		{"range that wraps the week, outside", "Fri-Mon 01:00-02:00", "2026-12-01T01:30:00Z", false},
		{"list", "Tue,Fri 10:00-11:00", "2026-11-27T10:59:59Z", true},
		{"daily, seconds", "daily 10:00:00-10:00:30", "2026-11-27T10:00:29Z", true},
		{"daily, seconds, after", "daily 10:00:00-10:00:30", "2026-11-27T10:00:30Z", false},
		{"whole day", "Fri 00:00-24:00", "2026-11-27T23:59:59Z", true},
		{"whole day ends", "Fri 00:00-24:00", "2026-11-28T00:00:00Z", false},
		{"zone", "Fri 22:00-23:00 Europe/Berlin", "2026-11-27T21:30:00Z", true},
		{"zone, UTC's 22:00 is not Berlin's", "Fri 22:00-23:00 Europe/Berlin", "2026-11-27T22:30:00Z", false},
		{"zone moves the day", "Sat 00:30-01:00 Asia/Tokyo", "2026-11-27T15:45:00Z", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchedule(t, tt.window)
			if got := s.Contains(utc(tt.at)); got != tt.want {
				t.Errorf("%q contains %s = %v, want %v", tt.window, tt.at, got, tt.want)
			}
		})
	}
}

func TestNextOpenAndCloses(t *testing.T) {
	tests := []struct {
		name      string
		windows   []string
		at        string
		open      string
		closes    string // "" for never
		notBefore string
		notAfter  string
	}{
		{"inside", []string{"Mon-Fri 22:00-06:00"}, "2026-11-28T01:00:00Z", "2026-11-28T01:00:00Z", "2026-11-28T06:00:00Z", "", ""},
		{"over the weekend", []string{"Mon-Fri 22:00-06:00"}, "2026-11-28T07:00:00Z", "2026-11-30T22:00:00Z", "2026-12-01T06:00:00Z", "", ""},
		{"the earlier of two", []string{"Sun 10:00-11:00", "Sat 20:00-21:00"}, "2026-11-27T12:00:00Z", "2026-11-28T20:00:00Z", "2026-11-28T21:00:00Z", "", ""},
		{"touching windows are one", []string{"Sat 00:00-24:00", "Sun 00:00-06:00"}, "2026-11-28T12:00:00Z", "2026-11-28T12:00:00Z", "2026-11-29T06:00:00Z", "", ""},
		{"overlapping windows are one", []string{"Sat 20:00-23:00", "Sat 22:00-02:00"}, "2026-11-28T21:00:00Z", "2026-11-28T21:00:00Z", "2026-11-29T02:00:00Z", "", ""},
		{"around the clock", []string{"daily 00:00-24:00"}, "2026-11-28T12:00:00Z", "2026-11-28T12:00:00Z", "", "", ""},
		{"not before", nil, "2026-11-27T12:00:00Z", "2026-12-01T00:00:00Z", "", "2026-12-01", ""},
		{"not before inside a window", []string{"daily 22:00-06:00"}, "2026-11-27T12:00:00Z", "2026-11-28T01:00:00Z", "2026-11-28T06:00:00Z", "2026-11-28T01:00:00Z", ""},
		{"not after cuts the window", []string{"daily 22:00-06:00"}, "2026-11-27T23:00:00Z", "2026-11-27T23:00:00Z", "2026-11-28T02:00:00Z", "", "2026-11-28T02:00:00Z"},
		{"not after alone", nil, "2026-11-27T23:00:00Z", "2026-11-27T23:00:00Z", "2026-11-28T00:00:00Z", "", "2026-11-28"},
		// Europe/Berlin springs forward on 2026-03-29 02:00 and falls
		// back on 2026-10-25 03:00: the night's window is 7 and 9 hours.
		{"spring forward night", []string{"Sat 22:00-06:00 Europe/Berlin"}, "2026-03-28T12:00:00Z", "2026-03-28T21:00:00Z", "2026-03-29T04:00:00Z", "", ""},
		{"fall back night", []string{"Sat 22:00-06:00 Europe/Berlin"}, "2026-10-24T12:00:00Z", "2026-10-24T20:00:00Z", "2026-10-25T05:00:00Z", "", ""},
		// 02:30 does not exist on 2026-03-29 in Berlin: it is 03:30 CEST
		{"start in the skipped hour", []string{"Sun 02:30-04:00 Europe/Berlin"}, "2026-03-28T12:00:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z", "", ""},
		// 02:30 comes twice on 2026-10-25 in Berlin: the first, CEST
		{"start in the repeated hour", []string{"Sun 02:30-04:00 Europe/Berlin"}, "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T03:00:00Z", "", ""},
		{"new york springs forward", []string{"Sun 01:00-05:00 America/New_York"}, "2026-03-07T12:00:00Z", "2026-03-08T06:00:00Z", "2026-03-08T09:00:00Z", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSchedule(tt.windows, tt.notBefore, tt.notAfter)
			if err != nil {
				t.Fatal(err)
			}
			open, ok := s.NextOpen(utc(tt.at))
			if !ok || !open.Equal(utc(tt.open)) {
				t.Fatalf("NextOpen(%s) = %s, %v; want %s", tt.at, open.UTC().Format(time.RFC3339), ok, tt.open)
			}
			if !s.Contains(open) {
				t.Errorf("NextOpen's %s is not contained", open.UTC().Format(time.RFC3339))
			}
			closes, ok := s.Closes(open)
			switch {
			case tt.closes == "" && ok:
				t.Errorf("Closes(%s) = %s, want never", tt.open, closes.UTC().Format(time.RFC3339))
			case tt.closes != "" && (!ok || !closes.Equal(utc(tt.closes))):
				t.Errorf("Closes(%s) = %s, %v; want %s", tt.open, closes.UTC().Format(time.RFC3339), ok, tt.closes)
			case ok && (s.Contains(closes) || !s.Contains(closes.Add(-time.Second))):
				t.Errorf("Closes(%s) = %s is not the end of the opening", tt.open, closes.UTC().Format(time.RFC3339))
			}
		})
	}
}

func TestNextOpenPastNotAfter(t *testing.T) {
	s, err := ParseSchedule([]string{"Sat 22:00-06:00"}, "", "2026-11-28T21:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.NextOpen(utc("2026-11-27T12:00:00Z")); ok {
		t.Fatalf("NextOpen = %s, want none: the window opens after --not-after", got)
	}
}

func TestFinish(t *testing.T) {
	s := mustSchedule(t, "daily 22:00-02:00")
	batch := Work{D: 90 * time.Minute, Gated: true}
	tests := []struct {
		name  string
		start string
		work  []Work
		want  string
	}{
		// the third batch starts at 01:00, inside, and runs past the close
		{"batches in one night", "2026-11-27T22:00:00Z", []Work{batch, batch, batch}, "2026-11-28T02:30:00Z"},
		// the fourth would start at 02:30: it waits for 22:00
		{"the next night", "2026-11-27T22:00:00Z", []Work{batch, batch, batch, batch}, "2026-11-28T23:30:00Z"},
		{"ungated work starts at once", "2026-11-27T12:00:00Z", []Work{{D: time.Hour}, batch}, "2026-11-27T23:30:00Z"},
		// 6 h of work paused between nights: 4 h the first, 2 the next
		{"pausable work runs inside windows only", "2026-11-27T23:00:00Z", []Work{{D: 6 * time.Hour, Pausable: true}}, "2026-11-29T01:00:00Z"},
		// 3 h does not fit the 2.5 h left at 23:30: it starts the next night
		{"work that cannot pause starts in an opening it fits", "2026-11-27T23:30:00Z", []Work{{D: 3 * time.Hour, Fit: true}}, "2026-11-29T01:00:00Z"},
		{"and at once where it fits", "2026-11-27T22:30:00Z", []Work{{D: 3 * time.Hour, Fit: true}}, "2026-11-28T01:30:00Z"},
		// no opening is 5 h long: it starts at the next
		{"work longer than any opening starts at the next", "2026-11-27T12:00:00Z", []Work{{D: 5 * time.Hour, Fit: true}}, "2026-11-28T03:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.Finish(utc(tt.start), tt.work)
			if !ok || !got.Equal(utc(tt.want)) {
				t.Errorf("Finish = %s, %v; want %s", got.UTC().Format(time.RFC3339), ok, tt.want)
			}
		})
	}
}
