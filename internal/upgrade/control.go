package upgrade

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Control carries requests from other terminals to a run.
type Control interface {
	Pending(ctx context.Context) (string, error)
	Watch(ctx context.Context) (<-chan string, error)
	Clear(ctx context.Context) error
}

// PausedError ends a run paused by "cancel": "resume" continues it.
type PausedError struct{ Phase plan.Phase }

func (e *PausedError) Error() string {
	// The next steps are the session's (session.StoppedError): which
	// ones the run takes depends on its record, not on this phase alone.
	if e.Phase == "" {
		return "paused by cancel before its first phase"
	}
	return fmt.Sprintf("paused by cancel in phase %s", e.Phase)
}

// SoakingError ends a run left at its soak (--no-wait): a later run or
// resume goes on once the soak is over, or after "complete".
type SoakingError struct{ Until time.Time }

func (e *SoakingError) Error() string {
	return fmt.Sprintf("soaking until %s (%s left)",
		e.Until.UTC().Format(time.RFC3339), time.Until(e.Until).Round(time.Second))
}

// errRollbackRequested turns a waiting phase into the rollback.
var errRollbackRequested = errors.New("rollback requested")

// checkRequests acts on a pending request at a safe point: cancel pauses
// (except while blue is deleted: that cannot be paused), rollback turns a
// blue/green run around before blue is deleted.
func (e *Engine) checkRequests(ctx context.Context, s plan.State) (*plan.State, error) {
	if e.cfg.Control == nil || s.Phase == plan.PhaseDeleteBlue || s.Phase == plan.PhaseRollback {
		return nil, nil
	}
	req, err := e.cfg.Control.Pending(ctx)
	if err != nil {
		return nil, err
	}
	switch req {
	case state.RequestCancel:
		return nil, &PausedError{Phase: s.Phase}
	case state.RequestRollback:
		// Only a run that can be turned around live takes it; the others
		// are rolled back once stopped.
		if !e.liveRollback() {
			return nil, nil
		}
		if err := e.cfg.Control.Clear(ctx); err != nil {
			return nil, err
		}
		return &plan.State{Phase: plan.PhaseRollback, Batch: s.Batch}, nil
	}
	return nil, nil
}
