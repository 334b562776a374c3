package report

import (
	"slices"
	"time"
)

// Pace is what the newest run of a History that measured them took: a
// new node to be Ready (its scale-up, the creation of green or a surge,
// each a phase that waits for new nodes), a batch to drain (from its
// first node's drain start to its last node drained), and the group's
// service to apply an update of its settings. Zero where no run
// measured it; DrainBatches counts the batches measured.
type Pace struct {
	Join         time.Duration
	Drain        time.Duration
	DrainBatches int
	Settings     time.Duration
}

// joinPhases are the phases that wait for new nodes to be Ready and do
// nothing else; settingsPhases those that wait for the service to apply
// the group's settings.
var (
	joinPhases     = []string{"ScaleUp", "CreateGreen"}
	settingsPhases = []string{"Configure", "RestoreSettings"}
)

// Pace is the pace of the newest run that measured each part.
func (h History) Pace() Pace {
	var pc Pace
	for _, run := range h.Runs {
		if pc.Join == 0 {
			pc.Join = run.longest(joinPhases)
		}
		if pc.Settings == 0 {
			pc.Settings = run.longest(settingsPhases)
		}
		if pc.Drain == 0 {
			pc.Drain, pc.DrainBatches = run.drainTime()
		}
	}
	return pc
}

// longest is the longest time an attempt of run spent in one of phases.
func (run Run) longest(phases []string) time.Duration {
	var d time.Duration
	for _, a := range run.Attempts {
		for _, ph := range phases {
			d = max(d, time.Duration(a.Phases[ph]))
		}
	}
	return d
}

// drainTime is the median over run's batches of the time from the
// batch's first drain start to its last node drained, and the number of
// batches measured.
func (run Run) drainTime() (time.Duration, int) {
	var took []time.Duration
	for _, a := range run.Attempts {
		type span struct{ from, to time.Time }
		batches := map[int]*span{}
		for _, n := range a.Nodes {
			if n.Batch == 0 || n.DrainStart == nil || n.Drained == nil {
				continue
			}
			s := batches[n.Batch]
			if s == nil {
				s = &span{*n.DrainStart, *n.Drained}
				batches[n.Batch] = s
			}
			if n.DrainStart.Before(s.from) {
				s.from = *n.DrainStart
			}
			if n.Drained.After(s.to) {
				s.to = *n.Drained
			}
		}
		for _, s := range batches {
			took = append(took, s.to.Sub(s.from))
		}
	}
	if len(took) == 0 {
		return 0, 0
	}
	slices.Sort(took)
	return took[(len(took)-1)/2], len(took)
}
