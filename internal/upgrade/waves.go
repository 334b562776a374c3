package upgrade

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
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
	cfg        *Config
	recoveries *recoveries
	windows    *windowWait
	tally      *tally
	progress   *progress
	save       func(ctx context.Context) error
	logf       func(format string, args ...any)
	passed     map[int]bool // waves whose gates passed in this process
}

// awaitStart holds state s until it may start: inside a maintenance
// window, then past its wave's gates.
func (e *Engine) awaitStart(ctx context.Context, s plan.State, first bool) error {
	if err := e.windows.awaitWindow(ctx, s, first); err != nil {
		return err
	}
	return e.gates.await(ctx, s)
}

func (g *waveGate) await(ctx context.Context, s plan.State) error {
	if !plan.BatchPhase(s.Phase) {
		return nil
	}
	wave := g.cfg.Plan.WaveOf(s.Batch)
	if wave == nil || !wave.Gated || g.passed[wave.Number] {
		return nil
	}
	if err := g.recoveries.settleRecovery(ctx); err != nil {
		return err
	}
	wp := g.cfg.Plan.Waves
	rec := g.cfg.Record
	if rec == nil {
		rec = &state.Record{}
	}
	wg := rec.StartGate(wave.Number, g.cfg.Now(), time.Duration(wp.Soak))
	if err := g.save(ctx); err != nil {
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
	g.cfg.Journal.Enter(report.PhaseWaveSoak, 0)
	left := wg.SoakFrom.Add(wg.Soak).Sub(g.cfg.Now())
	if left <= 0 {
		return nil
	}
	g.logf("wave %d/%d (%d nodes) waits: soak until %s, then %d gates", wave.Number, g.lastWave(), len(wave.Nodes), wg.SoakFrom.Add(wg.Soak).Format(time.RFC3339), len(g.cfg.Plan.Waves.Gates))
	g.progress.waitingFor(fmt.Sprintf("the soak before wave %d", wave.Number))
	defer g.progress.waitingFor("")
	return g.windows.waitUntil(ctx, left)
}

func (g *waveGate) lastWave() int {
	ws := g.cfg.Plan.Waves.Waves
	return ws[len(ws)-1].Number
}

// evaluate evaluates the gates over the soak, records the verdicts, and
// lets the wave start when all passed.
func (g *waveGate) evaluate(ctx context.Context, s plan.State, wave *plan.Wave, wg *state.WaveGate) error {
	wp := g.cfg.Plan.Waves
	ev := gate.Evaluator{PrometheusURL: wp.PrometheusURL, AlertmanagerURL: wp.AlertmanagerURL, Env: []string{fmt.Sprintf("NODEUPGRADE_WAVE=%d", wave.Number)}, Dir: g.cfg.GateDir}
	specs, err := gate.ParseAll(wp.Gates)
	if err != nil {
		return err
	}
	now := g.cfg.Now()
	verdicts := ev.EvaluateAll(ctx, specs, wg.SoakFrom, now)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	at := now.UTC().Truncate(time.Second)
	replaced := append(append([]string(nil), g.cfg.EarlierDone...), g.tally.done...)
	wg.Evaluated, wg.Verdicts, wg.Replaced = &at, verdicts, len(replaced)
	failed := gate.Failed(verdicts)
	wg.Pass = len(failed) == 0
	if err := g.save(ctx); err != nil {
		return err
	}
	for _, v := range verdicts {
		g.logf("wave %d: %s", wave.Number, v.String())
	}
	if wg.Pass {
		g.passed[wave.Number] = true
		return nil
	}
	if wp.OnFail == plan.OnGateFailRollback && g.windows.liveRollback {
		g.logf("%s", g.cfg.Color.Yellow(fmt.Sprintf("wave %d: a gate failed: rolling back (--on-gate-fail rollback)", wave.Number)))
		return errRollbackRequested
	}
	return &GateFailedError{Wave: wave.Number, Failed: failed, Replaced: replaced, Phase: s.Phase}
}
