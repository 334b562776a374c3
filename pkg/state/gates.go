package state

import (
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
)

// WaveGate is a run's soak and gate evaluation before one wave (--waves,
// --gate): written when the soak starts, so a run killed during it goes
// on with the same soak on resume and evaluates the gates before the
// wave, never past them; then with the verdicts.
type WaveGate struct {
	// Wave is the wave the gates hold (plan.Wave.Number); Soak when the
	// soak started and how long it is.
	Wave      int           `json:"wave"`
	SoakFrom  time.Time     `json:"soakFrom"`
	Soak      time.Duration `json:"soak"`
	Evaluated *time.Time    `json:"evaluated,omitempty"`
	// Verdicts are the gates' evaluations over the soak; Pass says
	// whether all passed.
	Verdicts []gate.Verdict `json:"verdicts,omitempty"`
	Pass     bool           `json:"pass"`
	// Replaced are the nodes the run had replaced when the gates were
	// evaluated.
	Replaced int `json:"replaced"`
}

// Pending reports whether the gate's evaluation is yet to come.
func (g WaveGate) Pending() bool { return g.Evaluated == nil }

// LastGate is the record's last wave gate, or nil.
func (r *Record) LastGate() *WaveGate {
	if r == nil || len(r.Gates) == 0 {
		return nil
	}
	return &r.Gates[len(r.Gates)-1]
}

// maxGates bounds the gates a record keeps: the last ones.
const maxGates = 20

// StartGate records a soak before wave starting at from, or returns the
// pending one of that wave to go on with.
func (r *Record) StartGate(wave int, from time.Time, soak time.Duration) *WaveGate {
	if g := r.LastGate(); g != nil && g.Wave == wave && g.Pending() {
		return g
	}
	r.Gates = append(r.Gates, WaveGate{Wave: wave, SoakFrom: from.UTC().Truncate(time.Second), Soak: soak})
	if len(r.Gates) > maxGates {
		r.Gates = r.Gates[len(r.Gates)-maxGates:]
	}
	return r.LastGate()
}
