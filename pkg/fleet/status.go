package fleet

import (
	"context"
	"sync"
)

// Row is one target as "fleet status" shows it, from its own cluster's
// record.
type Row struct {
	Stage   string `json:"stage"`
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	// Status is the record's status word; "not started" without a record,
	// "unknown" when the cluster did not answer (Error says why).
	Status string `json:"status"`
	// Alive says a live process drives the target's run.
	Alive bool   `json:"alive"`
	Phase string `json:"phase,omitempty"`
	Done  int    `json:"done"`
	Left  int    `json:"left"`
	Error string `json:"error,omitempty"`
}

// The status words of targets that have no status of their own.
const (
	StatusNotStarted = "not started"
	StatusUnknown    = "unknown"
	// StatusSkipped is a target the fleet found already at its target
	// (the fleet's record says so).
	StatusSkipped = string(Skipped)
)

// Look reads one target's record: ok false when it has none.
type Look func(ctx context.Context, t Target) (r Row, ok bool, err error)

// Rows are every target's row in stage order, each cluster asked at the
// same time: one slow cluster does not hold the others'.
func Rows(ctx context.Context, f *Fleet, look Look) []Row {
	var targets []Target
	for _, st := range f.Stages {
		targets = append(targets, st.Targets...)
	}
	rows := make([]Row, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			r, ok, err := look(ctx, t)
			switch {
			case err != nil:
				r = Row{Status: StatusUnknown, Error: err.Error()}
			case !ok:
				r = Row{Status: StatusNotStarted}
			}
			r.Stage, r.Cluster, r.Group = t.Stage, t.Context, t.Group()
			rows[i] = r
		})
	}
	wg.Wait()
	return rows
}
