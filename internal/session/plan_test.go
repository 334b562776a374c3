package session

import (
	"runtime/debug"
	"testing"
)

// TestCollectLessWhilePlanning: GOGC is raised while a plan is built and
// put back after, and a GOGC the user set is left alone.
func TestCollectLessWhilePlanning(t *testing.T) {
	tests := []struct {
		name   string
		gogc   string // the environment's
		before int
		during int
	}{
		{"default", "", 100, planningGCPercent},
		{"user's GOGC", "50", 50, 50},
		{"user's GOGC=off", "off", -1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			old := debug.SetGCPercent(tc.before)
			defer debug.SetGCPercent(old)
			restore := collectLessWhilePlanning()
			during := debug.SetGCPercent(tc.during) // reads it; leaves it
			restore()
			after := debug.SetGCPercent(tc.before)
			if during != tc.during || after != tc.before {
				t.Errorf("GOGC %d while planning and %d after, want %d and %d", during, after, tc.during, tc.before)
			}
		})
	}
}
