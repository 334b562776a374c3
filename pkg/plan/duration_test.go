package plan

import (
	"testing"
	"time"
)

func TestParseDurationTakesDays(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "0", want: 0},
		{in: "3d", want: 72 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "7d", want: MaxSoak},
		{in: "30d", want: 720 * time.Hour},
		{in: "-1d", want: -24 * time.Hour},
		{in: "d", wantErr: true},
		{in: "1d-2h", wantErr: true},
		{in: "1d1d", wantErr: true},
		{in: "2h1d", wantErr: true},
		{in: "infd", wantErr: true},
		{in: "1e3d", wantErr: true},
		{in: "200000d", wantErr: true},
		{in: "3days", wantErr: true},
		{in: "x", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseDuration(%q) = %s, %v; want %s, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestFormatDurationInDays(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{90 * time.Second, "1m30s"},
		{15 * time.Minute, "15m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{72 * time.Hour, "3d"},
		{36 * time.Hour, "1d12h"},
		{24*time.Hour + 30*time.Second, "1d30s"},
		{-time.Hour, "-1h"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			got := FormatDuration(tc.in)
			if got != tc.want {
				t.Fatalf("FormatDuration(%s) = %q, want %q", tc.in, got, tc.want)
			}
			if back, err := ParseDuration(got); err != nil || back != tc.in {
				t.Fatalf("ParseDuration(%q) = %s, %v: does not read back", got, back, err)
			}
		})
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		n    int
		noun string
		want string
	}{
		{0, "node", "0 nodes"},
		{1, "node", "1 node"},
		{2, "node", "2 nodes"},
		{1, "batch", "1 batch"},
		{3, "batch", "3 batches"},
		{1, "blocker", "1 blocker"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := Count(tc.n, tc.noun); got != tc.want {
				t.Errorf("got %q", got)
			}
		})
	}
}
