package upgrade

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// GateFailedError stops a run whose gate failed before a wave, with
// --on-gate-fail pause (or a strategy that cannot turn around live): the
// run is paused as by cancel, and resume soaks and evaluates again.
type GateFailedError struct {
	Wave     int
	Failed   []gate.Verdict
	Replaced []string
	Phase    plan.Phase
}

func (e *GateFailedError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, v := range e.Failed {
		parts[i] = v.String()
	}
	replaced := "no node replaced yet"
	if len(e.Replaced) > 0 {
		replaced = fmt.Sprintf("%d nodes replaced: %s", len(e.Replaced), strings.Join(quoteEach(e.Replaced), ", "))
	}
	return fmt.Sprintf("paused before wave %d: %s; %s", e.Wave, strings.Join(parts, "; "), replaced)
}

// Unwrap makes the stop a pause: exit 8, recorded as paused.
func (e *GateFailedError) Unwrap() error { return &PausedError{Phase: e.Phase} }

// waveGate holds the run at the start of each gated wave (plan.Wave):
// once the last batch's workloads are back, it soaks, evaluates the gates
// over the soak and records their verdicts; a failed gate pauses the run
// or turns a blue/green run around.
type waveGate struct {
	e      *Engine
	passed map[int]bool // waves whose gates passed in this process
}

// awaitStart holds state s until it may start: inside a maintenance
// window, then past its wave's gates.
func (e *Engine) awaitStart(ctx context.Context, s plan.State, first bool) error {
	if err := e.awaitWindow(ctx, s, first); err != nil {
		return err
	}
	if e.gates == nil {
		e.gates = &waveGate{e: e, passed: map[int]bool{}}
	}
	return e.gates.await(ctx, s)
}

func (g *waveGate) await(ctx context.Context, s plan.State) error {
	e := g.e
	if !plan.BatchPhase(s.Phase) {
		return nil
	}
	wave := e.cfg.Plan.WaveOf(s.Batch)
	if wave == nil || !wave.Gated || g.passed[wave.Number] {
		return nil
	}
	if err := e.settleRecovery(ctx); err != nil {
		return err
	}
	wp := e.cfg.Plan.Waves
	rec := e.cfg.Record
	if rec == nil {
		rec = &state.Record{}
	}
	wg := rec.StartGate(wave.Number, e.cfg.Now(), time.Duration(wp.Soak))
	if err := e.save(ctx); err != nil {
		return err
	}
	if err := g.soak(ctx, s, wave, wg); err != nil {
		return err
	}
	return g.evaluate(ctx, s, wave, wg)
}

// soak waits out the soak recorded in wg (a resumed run the rest of it);
// cancel pauses it and rollback turns a blue/green run around.
func (g *waveGate) soak(ctx context.Context, s plan.State, wave *plan.Wave, wg *state.WaveGate) error {
	e := g.e
	left := wg.SoakFrom.Add(wg.Soak).Sub(e.cfg.Now())
	if left <= 0 {
		return nil
	}
	e.logf("wave %d/%d (%d nodes) waits: soak until %s, then %d gates", wave.Number, g.lastWave(), len(wave.Nodes), wg.SoakFrom.Add(wg.Soak).Format(time.RFC3339), len(e.cfg.Plan.Waves.Gates))
	e.progress.waitingFor(fmt.Sprintf("the soak before wave %d", wave.Number))
	defer e.progress.waitingFor("")
	return e.waitUntil(ctx, s, left)
}

func (g *waveGate) lastWave() int {
	ws := g.e.cfg.Plan.Waves.Waves
	return ws[len(ws)-1].Number
}

// evaluate evaluates the gates over the soak, records the verdicts, and
// lets the wave start when all passed.
func (g *waveGate) evaluate(ctx context.Context, s plan.State, wave *plan.Wave, wg *state.WaveGate) error {
	e := g.e
	wp := e.cfg.Plan.Waves
	ev := gate.Evaluator{PrometheusURL: wp.PrometheusURL, AlertmanagerURL: wp.AlertmanagerURL, Env: []string{fmt.Sprintf("NODEUPGRADE_WAVE=%d", wave.Number)}}
	specs, err := gate.ParseAll(wp.Gates)
	if err != nil {
		return err
	}
	now := e.cfg.Now()
	verdicts := ev.EvaluateAll(ctx, specs, wg.SoakFrom, now)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	at := now.UTC().Truncate(time.Second)
	replaced := append(append([]string(nil), e.cfg.EarlierDone...), e.done...)
	wg.Evaluated, wg.Verdicts, wg.Replaced = &at, verdicts, len(replaced)
	failed := gate.Failed(verdicts)
	wg.Pass = len(failed) == 0
	if err := e.save(ctx); err != nil {
		return err
	}
	for _, v := range verdicts {
		e.logf("wave %d: %s", wave.Number, v.String())
	}
	if wg.Pass {
		g.passed[wave.Number] = true
		return nil
	}
	if wp.OnFail == plan.OnGateFailRollback && e.liveRollback() {
		e.logf("%s", e.cfg.Color.Yellow(fmt.Sprintf("wave %d: a gate failed: rolling back (--on-gate-fail rollback)", wave.Number)))
		return errRollbackRequested
	}
	return &GateFailedError{Wave: wave.Number, Failed: failed, Replaced: replaced, Phase: s.Phase}
}
