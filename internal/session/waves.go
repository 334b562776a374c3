package session

import (
	"context"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// wavesInput is the waves r asks for, and the nodes the unfinished run
// rec replaced already: its first waves. A rollback goes back without
// waves: it restores what the run changed.
func wavesInput(r *Request, rec *state.Record) (plan.Waves, int) {
	if r.Rollback || rollsBackInPlace(rec, r.Request) {
		return plan.Waves{}, 0
	}
	if rec == nil {
		return r.Waves, 0
	}
	return r.Waves, len(rec.Done)
}

// gatePreflight evaluates each gate once, now, before anything changes:
// one that fails or cannot be evaluated is a blocker (gate-failing), so
// run refuses to start (exit 5) and plan says why. A run going on
// (goesOn: an unfinished record) shows the verdicts but is not refused:
// it evaluates the gates over a soak before its next wave, and pauses
// there. Waves asked of a run the cloud's service paces are refused.
func gatePreflight(ctx context.Context, r *Request, p *plan.Plan, goesOn bool) error {
	w := r.Waves
	if !w.Any() {
		return nil
	}
	if p.Managed != nil && p.Waves == nil && len(p.Batches) > 0 {
		return Usagef("--waves and --gate need batches the run paces: the %s runs this update and paces it itself", p.Managed.Service)
	}
	if p.Traits().LeavesRunning {
		return Usagef("--waves and --gate need batches: --strategy %s drains nothing", p.Strategy)
	}
	if p.Waves == nil || len(w.Gates) == 0 {
		return nil
	}
	now := time.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ev := w.Evaluator()
	ev.Dir = r.Dir // a run going on: its own directory
	p.AddGatePreflight(ev.EvaluateAll(ctx, w.Specs(), now, now), !goesOn)
	return nil
}
