package fleet

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
)

// runStage runs the stage's targets, at most MaxConcurrency at once; once
// a target pauses, or more than MaxFailures fail, no new target starts
// and those in flight run to their end.
func (s *Scheduler) runStage(ctx context.Context, st ResolvedStage) error {
	if _, err := s.mark(ctx, st.Name, func(r *StageRecord) {
		if r.Entered == nil {
			r.Entered = s.now()
		}
	}); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "stage %q: %d targets, %d at once\n", st.Name, len(st.Targets), st.MaxConcurrency)
	se := &StageError{Stage: st.Name}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, st.MaxConcurrency)
	stopped := func() bool { mu.Lock(); defer mu.Unlock(); return se.Stopped }
	for i, t := range st.Targets {
		slots <- struct{}{}
		if stopped() || ctx.Err() != nil {
			se.NotStarted = len(st.Targets) - i
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			res := s.Runner.Run(ctx, t)
			if res.Outcome == Done || res.Outcome == Skipped {
				if err := s.noteSkipped(ctx, st.Name, t, res.Outcome == Skipped); err != nil {
					res = Result{Outcome: Failed, Err: err}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			s.count(res.Outcome)
			if res.Outcome == Failed || res.Outcome == Paused {
				se.Failures = append(se.Failures, TargetFailure{Target: t, Result: res})
				se.Stopped = se.Stopped || res.Outcome == Paused || len(se.Failures) > st.MaxFailures
			}
			fmt.Fprintf(s.Out, "stage %q: %s %s\n", st.Name, t.ID(), describe(res))
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(se.Failures) > 0 {
		return se
	}
	_, err := s.mark(ctx, st.Name, func(r *StageRecord) {
		if r.TargetsDone == nil {
			r.TargetsDone = s.now()
		}
	})
	return err
}

// noteSkipped keeps in the stage's record whether t was skipped: the
// target's own record cannot say it (a run with nothing to do writes
// none), and fleet status reads it there.
func (s *Scheduler) noteSkipped(ctx context.Context, stage string, t Target, skipped bool) error {
	_, err := s.mark(ctx, stage, func(r *StageRecord) {
		r.Skipped = slices.DeleteFunc(r.Skipped, func(id string) bool { return id == t.ID() })
		if skipped {
			r.Skipped = append(r.Skipped, t.ID())
		}
	})
	return err
}

// count keeps the outcomes of this coordinator's targets for its summary.
func (s *Scheduler) count(o Outcome) {
	if s.outcomes == nil {
		s.outcomes = map[Outcome]int{}
	}
	s.outcomes[o]++
}

func describe(r Result) string {
	if r.Err != nil {
		return fmt.Sprintf("%s: %v", r.Outcome, r.Err)
	}
	return string(r.Outcome)
}

// afterStage soaks, evaluates the gates over the soak and waits for the
// approval; each decision is recorded once, so a re-run goes on from it.
func (s *Scheduler) afterStage(ctx context.Context, st ResolvedStage) error {
	if err := s.gates(ctx, st); err != nil {
		return err
	}
	if !st.Approval {
		return nil
	}
	waiting := false
	for {
		rec, err := s.Store.Load(ctx)
		if err != nil {
			return err
		}
		if sr := rec.Stage(st.Name); sr != nil && sr.Approved != nil {
			return nil
		}
		if !waiting {
			fmt.Fprintf(s.Out, "stage %q: waiting for approval: kubectl nodeupgrade fleet approve %s %s\n", st.Name, s.Fleet.Name, st.Name)
			waiting = true
		}
		if err := s.Sleep(ctx, s.Poll); err != nil {
			return err
		}
	}
}

func (s *Scheduler) gates(ctx context.Context, st ResolvedStage) error {
	if st.Soak == 0 && len(st.Gates) == 0 {
		return nil
	}
	sr, err := s.mark(ctx, st.Name, func(r *StageRecord) {
		// a new soak unless one is under way: a failed verdict is
		// evaluated again over a fresh window, never skipped
		if r.GatesPassed == nil && (r.SoakFrom == nil || len(gate.Failed(r.Verdicts)) > 0) {
			r.SoakFrom, r.Verdicts = s.now(), nil
		}
	})
	if err != nil || sr.GatesPassed != nil {
		return err
	}
	until := sr.SoakFrom.Add(st.Soak)
	if d := until.Sub(s.Now()); d > 0 {
		fmt.Fprintf(s.Out, "stage %q: soaking until %s\n", st.Name, until.Format(time.RFC3339))
		if err := s.Sleep(ctx, d); err != nil {
			return err
		}
	}
	verdicts, err := s.Gates(ctx, st.Gates, *sr.SoakFrom, until)
	if err != nil {
		return err
	}
	pass := len(gate.Failed(verdicts)) == 0
	if _, err := s.mark(ctx, st.Name, func(r *StageRecord) {
		r.Verdicts = verdicts
		if pass {
			r.GatesPassed = s.now()
		}
	}); err != nil {
		return err
	}
	if !pass {
		return &GateError{Stage: st.Name, Verdicts: verdicts}
	}
	return nil
}

// Approve records the approval of a stage; who names the approver.
func Approve(ctx context.Context, store *Store, stage, who string, now time.Time) error {
	_, err := store.Update(ctx, func(r *Record) error {
		sr := r.Stage(stage)
		if sr == nil {
			return fmt.Errorf("fleet %q has no stage %q", r.Name, stage)
		}
		t := now.UTC()
		sr.Approved, sr.ApprovedBy = &t, who
		return nil
	})
	return err
}
