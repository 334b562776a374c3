package state

import "time"

// AttemptKind is what started an attempt of a run.
type AttemptKind string

// The kinds of attempt: a run is a sequence of them, each under the
// group's lock in turn.
const (
	AttemptRun       AttemptKind = "run"        // the run's first
	AttemptRerun     AttemptKind = "re-run"     // the run command again, on the unfinished run
	AttemptResume    AttemptKind = "resume"     // the resume command: the recorded request again
	AttemptInCluster AttemptKind = "in-cluster" // a pod of the in-cluster Job
	AttemptRollback  AttemptKind = "rollback"   // the rollback command
	AttemptAbort     AttemptKind = "abort"      // the abort command
)

// Attempt is one go at a run, as the record keeps it: what started it,
// when, and how it ended (nil EndedAt: under way, or killed before it
// could say).
type Attempt struct {
	Kind AttemptKind `json:"kind"`
	// Pod is the in-cluster Job's pod that made the attempt.
	Pod       string     `json:"pod,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// Outcome is how it ended, in status's words.
	Outcome string `json:"outcome,omitempty"`
}

// BeginAttempt adds an attempt of kind (by pod, in-cluster) started at
// at, and returns it.
func (r *Record) BeginAttempt(kind AttemptKind, pod string, at time.Time) Attempt {
	a := Attempt{Kind: kind, Pod: pod, StartedAt: at.UTC()}
	r.Attempts = append(r.Attempts, a)
	return a
}

// EndAttempt says the attempt under way ended at at, as outcome says.
func (r *Record) EndAttempt(at time.Time, outcome string) {
	if n := len(r.Attempts); n > 0 && r.Attempts[n-1].EndedAt == nil {
		end := at.UTC()
		r.Attempts[n-1].EndedAt, r.Attempts[n-1].Outcome = &end, outcome
	}
}

// CurrentAttempt is the attempt under way (the last), or the zero
// Attempt when the record has none.
func (r *Record) CurrentAttempt() Attempt {
	if n := len(r.Attempts); n > 0 {
		return r.Attempts[n-1]
	}
	return Attempt{}
}
