package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
)

// Outcome is how one target's run ended.
type Outcome string

// The outcomes of a target's run.
const (
	Done    Outcome = "done"
	Skipped Outcome = "skipped" // already at its target: nothing outdated
	Failed  Outcome = "failed"
	Paused  Outcome = "paused" // stopped on purpose (cancel, a wave gate, a window)
)

// Result is one target's run: its outcome and, unless done, why.
type Result struct {
	Outcome Outcome
	Err     error
}

// Runner runs one target to its end in its own cluster, through the
// per-group session: a target with nothing outdated is Skipped, a run in
// flight is finished, never started twice.
type Runner interface {
	Run(ctx context.Context, t Target) Result
}

// Evaluate evaluates a stage's after-stage gates over from..to.
type Evaluate func(ctx context.Context, gates []string, from, to time.Time) ([]gate.Verdict, error)

// Scheduler runs a fleet's stages in order: a stage's targets at most
// MaxConcurrency at once; a failed or paused target (past MaxFailures)
// starts no more; then the soak, the gates and the approval.
type Scheduler struct {
	Fleet  *Fleet
	Store  *Store
	Runner Runner
	Gates  Evaluate
	Out    io.Writer
	// Now and Sleep are the clock; Poll how often an approval is looked for.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	Poll  time.Duration

	// outcomes counts the targets' outcomes of this run, for its summary;
	// written under runStage's lock.
	outcomes map[Outcome]int
}

// TargetFailure is a target that failed or paused.
type TargetFailure struct {
	Target Target
	Result Result
}

// StageError is a stage stopped by its targets: no new target started.
type StageError struct {
	Stage      string
	Failures   []TargetFailure
	NotStarted int
	Stopped    bool // past maxFailures or paused: the fleet stopped
}

func (e *StageError) Error() string {
	parts := make([]string, 0, len(e.Failures))
	for _, f := range e.Failures {
		parts = append(parts, fmt.Sprintf("%q %s: %v", f.Target.ID(), f.Result.Outcome, f.Result.Err))
	}
	if !e.Stopped {
		return fmt.Sprintf("stage %q finished with %d failed targets (within maxFailures): %s; run the fleet again to retry them", e.Stage, len(e.Failures), strings.Join(parts, "; "))
	}
	return fmt.Sprintf("fleet stopped in stage %q, %d targets not started: %s; fix it and run the fleet again (it retries the failed ones)", e.Stage, e.NotStarted, strings.Join(parts, "; "))
}

// Unwrap is the first failure's error: its exit code is the fleet's.
func (e *StageError) Unwrap() error { return e.Failures[0].Result.Err }

// GateError is an after-stage gate that failed: the next stage does not
// start.
type GateError struct {
	Stage    string
	Verdicts []gate.Verdict
}

func (e *GateError) Error() string {
	lines := make([]string, 0, len(e.Verdicts))
	for _, v := range gate.Failed(e.Verdicts) {
		lines = append(lines, v.String())
	}
	return fmt.Sprintf("fleet stopped after stage %q: %s; run the fleet again to evaluate the gates again", e.Stage, strings.Join(lines, "; "))
}

// ChangedError is a fleet file that differs from the fleet in flight.
type ChangedError struct {
	Name, What string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("fleet %q is in flight with another plan: %s changed; run it with the file it started with, or \"fleet abort\" it first", e.Name, e.What)
}

// Start loads the fleet's record, or creates it; a record of another
// plan refuses the file.
func (s *Scheduler) Start(ctx context.Context) (*Record, error) {
	rec, err := s.Store.Load(ctx)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = NewRecord(s.Fleet)
		rec.Started = s.now()
		return rec, s.Store.Create(ctx, rec)
	}
	if what := rec.Changed(s.Fleet); what != "" {
		return nil, &ChangedError{Name: s.Fleet.Name, What: what}
	}
	return rec, nil
}

// Run runs every stage in order, from wherever the record says.
func (s *Scheduler) Run(ctx context.Context) error {
	if _, err := s.Start(ctx); err != nil {
		return err
	}
	var tolerated []*StageError
	for _, st := range s.Fleet.Stages {
		err := s.runStage(ctx, st)
		var se *StageError
		if errors.As(err, &se) && !se.Stopped {
			tolerated = append(tolerated, se)
		} else if err != nil {
			return err
		}
		if err := s.afterStage(ctx, st); err != nil {
			return err
		}
	}
	if len(tolerated) > 0 {
		return tolerated[0]
	}
	fmt.Fprintf(s.Out, "fleet %q finished: %d done, %d skipped (already at their target)\n", s.Fleet.Name, s.outcomes[Done], s.outcomes[Skipped])
	return nil
}

func (s *Scheduler) mark(ctx context.Context, stage string, change func(*StageRecord)) (*StageRecord, error) {
	rec, err := s.Store.Update(ctx, func(r *Record) error {
		sr := r.Stage(stage)
		if sr == nil {
			return fmt.Errorf("the fleet's record has no stage %q", stage)
		}
		change(sr)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec.Stage(stage), nil
}

func (s *Scheduler) now() *time.Time {
	t := s.Now().UTC()
	return &t
}
