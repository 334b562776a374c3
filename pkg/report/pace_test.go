package report

import (
	"testing"
	"time"
)

// TestHistoryPace: the newest run that measured each part gives it: the
// longest join phase of its attempts, the median of its batches' drains
// (a batch from its first drain start to its last node drained), the
// longest of its service's settings updates.
func TestHistoryPace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	drained := func(batch, from, to int) Node {
		return Node{Name: "n", Batch: batch, DrainStart: at(from), Drained: at(to)}
	}
	withDrains := Run{Attempts: []Attempt{{Nodes: []Node{
		drained(1, 0, 3), drained(1, 1, 5), // batch 1: 5s
		drained(2, 10, 12), // batch 2: 2s
		drained(3, 20, 29), // batch 3: 9s
		{Name: "scaled-down", DrainStart: at(40), Drained: at(90)},
	}}}}
	withJoin := Run{Attempts: []Attempt{
		{Phases: map[string]Duration{"ScaleUp": Duration(7 * time.Second), "Drain": Duration(time.Hour)}},
		{Phases: map[string]Duration{"ScaleUp": Duration(14 * time.Second)}},
	}}
	withSettings := Run{Attempts: []Attempt{
		{Phases: map[string]Duration{"Configure": Duration(2 * time.Second), "Upgrade": Duration(time.Hour)}},
		{Phases: map[string]Duration{"RestoreSettings": Duration(3 * time.Second)}},
	}}
	tests := []struct {
		name string
		h    History
		want Pace
	}{
		{"no run", History{}, Pace{}},
		{"one run measured both", History{Runs: []Run{{Attempts: append(withJoin.Attempts, withDrains.Attempts...)}}},
			Pace{Join: 14 * time.Second, Drain: 5 * time.Second, DrainBatches: 3}},
		{"the newest run that measured each", History{Runs: []Run{withJoin, {}, withDrains, {Attempts: []Attempt{{Nodes: []Node{drained(1, 0, 60)}}}}}},
			Pace{Join: 14 * time.Second, Drain: 5 * time.Second, DrainBatches: 3}},
		{"a service's settings updates", History{Runs: []Run{withSettings, {Attempts: []Attempt{{Phases: map[string]Duration{"Configure": Duration(time.Minute)}}}}}},
			Pace{Settings: 3 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.Pace(); got != tc.want {
				t.Errorf("pace %+v, want %+v", got, tc.want)
			}
		})
	}
}
