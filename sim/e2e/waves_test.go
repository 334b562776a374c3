package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	healthgate "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate/gatetest"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The exporter's series the prometheus gate reads; the alert rule fires
// on it as well, and Prometheus sends it to Alertmanager.
const (
	errorRate  = `errors_ratio{service="web"}`
	errorQuery = "max(errors_ratio)"
	errorGate  = "prometheus:" + errorQuery + "<0.01"
	alertGate  = "alertmanager:severity=critical"
	alertRules = `groups:
- name: web
  rules:
  - alert: WebErrorRate
    expr: max(errors_ratio) > 0.01
    labels:
      severity: critical
`
)

// gateServers are the real Prometheus and Alertmanager of one test, and
// the exporter Prometheus scrapes every second.
type gateServers struct {
	exp      *gatetest.Exporter
	prom, am string
}

// startGateServers starts them with the series healthy, and returns once
// Prometheus has scraped it: before, a gate sees no data and fails.
func startGateServers(t *testing.T) *gateServers {
	t.Helper()
	g := &gateServers{exp: gatetest.NewExporter(t)}
	g.exp.Set(errorRate, 0)
	g.am = gatetest.Alertmanager(t)
	g.prom = gatetest.Prometheus(t, []string{g.exp.URL}, alertRules, g.am)
	g.waitVerdict(t, errorGate, 0, func(v healthgate.Verdict) bool { return v.Pass })
	return g
}

// evaluate evaluates one gate over the last window (0: now, as plan
// does).
func (g *gateServers) evaluate(spec string, window time.Duration) healthgate.Verdict {
	s, err := healthgate.Parse(spec)
	if err != nil {
		return healthgate.Verdict{Gate: spec, Detail: err.Error()}
	}
	now := time.Now()
	return healthgate.Evaluator{PrometheusURL: g.prom, AlertmanagerURL: g.am}.Evaluate(context.Background(), s, now.Add(-window), now)
}

// waitVerdict waits until the gate's verdict over the last window
// satisfies ok.
func (g *gateServers) waitVerdict(t *testing.T, spec string, window time.Duration, ok func(healthgate.Verdict) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var v healthgate.Verdict
	for time.Now().Before(deadline) {
		if v = g.evaluate(spec, window); ok(v) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gate %q never got there; last verdict: %s", spec, v)
}

// goBad turns the series bad and waits until Alertmanager has the alert.
func (g *gateServers) goBad(t *testing.T) {
	t.Helper()
	g.exp.Set(errorRate, 0.5)
	g.waitVerdict(t, alertGate, 0, func(v healthgate.Verdict) bool {
		return v.Reason == healthgate.ReasonFiring && strings.Contains(v.Value, "WebErrorRate")
	})
}

// healthy turns the series healthy again and waits until Prometheus has
// seen it so for the last 2s: a soak starting now (its start recorded to
// the second) sees no sample of before.
func (g *gateServers) healthy(t *testing.T) {
	t.Helper()
	g.exp.Set(errorRate, 0.001)
	g.waitVerdict(t, errorGate, 2*time.Second, func(v healthgate.Verdict) bool { return v.Pass })
}

// wavesArgs is a gated run's command line.
func wavesArgs(name, waves, soak string, extra ...string) []string {
	args := []string{"run", name, "--target-label", target, "--max-unavailable", "2", "--post-drain-wait", "0s", "--seed", "1", "--yes",
		"--waves", waves, "--wave-soak", soak}
	return append(args, extra...)
}

// outdatedLeft counts the group's nodes not on the target.
func outdatedLeft(t *testing.T, name string) int {
	t.Helper()
	n := 0
	for _, node := range groupNodes(t, testContext(t, time.Minute), groupKey, name) {
		if node.Labels[imageKey] != "ami-new" {
			n++
		}
	}
	return n
}

// assertOutdatedLeft fails the test unless want outdated nodes are left.
func assertOutdatedLeft(t *testing.T, name string, want int, when string) {
	t.Helper()
	if left := outdatedLeft(t, name); left != want {
		t.Fatalf("%d outdated nodes left %s, want %d", left, when, want)
	}
}

// assertSays fails the test for each part out does not contain.
func assertSays(t *testing.T, what, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Errorf("%s does not say %q:\n%s", what, p, out)
		}
	}
}

// watchPDBs watches the namespace's PDBs until the returned func stops
// the watch and asserts none was violated.
func watchPDBs(t *testing.T, ctx context.Context, name string) func() {
	t.Helper()
	w, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	return func() { t.Helper(); assertNoViolations(t, w.Stop()) }
}

// TestGatedWavesOfTwentyNodesFinishWhileHealthy: 20 outdated nodes in
// waves 1,2,7,10 (batches of up to 5) with the real Prometheus and
// Alertmanager: plan shows the waves and gates, the run soaks and passes
// both gates before waves 2, 3 and 4, and finishes with 0 PDB violations.
func TestGatedWavesOfTwentyNodesFinishWhileHealthy(t *testing.T) {
	t.Parallel()
	const name = "waves20"
	setupGroup(t, name, 20, 3, scenario.App{Name: "web", Replicas: 6, MaxUnavailable: num(1)})
	g := startGateServers(t)
	ctx := testContext(t, 5*time.Minute)
	stop := watchPDBs(t, ctx, name)
	start := time.Now()
	args := wavesArgs(name, "1,2,7,10", "2s", "--max-unavailable", "5",
		"--gate", errorGate, "--gate", alertGate, "--prometheus-url", g.prom, "--alertmanager-url", g.am)
	pl := plugin(t, append([]string{"plan"}, args[1:]...)...)
	if pl.code != nodeupgrade.ExitOK {
		t.Fatalf("plan: %s", pl)
	}
	assertSays(t, "plan", pl.stdout, "Waves (soak 2s", "WaveSoak", `gate "`+errorGate+`" passed`, `gate "`+alertGate+`" passed`)
	r := plugin(t, args...)
	stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	for _, wave := range []string{"wave 2: ", "wave 3: ", "wave 4: "} {
		assertSays(t, "the run", r.stdout, wave+`gate "`+errorGate+`" passed`, wave+`gate "`+alertGate+`" passed`)
	}
	assertUpgraded(t, name, 3)
	t.Logf("20 nodes in 4 gated waves: planned and run in %s", time.Since(start).Round(time.Second))
}

// TestGatedWavesPauseOnABadSeriesAndResume: the error rate goes bad in
// the soak after the canary; the run pauses (exit 8) naming the query,
// the value and the threshold, with only the canary replaced; once the
// series is healthy again, resume soaks, evaluates and finishes.
func TestGatedWavesPauseOnABadSeriesAndResume(t *testing.T) {
	t.Parallel()
	const name = "wavebad"
	setupGroup(t, name, 4, 3, scenario.App{Name: "web", Replicas: 4, MaxUnavailable: num(1)})
	g := startGateServers(t)
	ctx := testContext(t, 5*time.Minute)
	stop := watchPDBs(t, ctx, name)
	start := time.Now()
	run := startBackground(t, pluginCmd(wavesArgs(name, "1,3", "3s", "--gate", errorGate, "--prometheus-url", g.prom)...))
	if !run.waitFor("wave 2/2", "waits: soak") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not soak before wave 2:\n%s", out)
	}
	g.exp.Set(errorRate, 0.5)
	code, out := run.wait(t, time.Minute)
	if code != nodeupgrade.ExitPaused {
		t.Fatalf("a bad series in the soak: want exit %d, got %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	assertSays(t, "the pause", out, "paused before wave 2", `query "`+errorQuery+`" was 0.5`, "threshold < 0.01", "1 nodes replaced")
	assertOutdatedLeft(t, name, 3, "after the failed gate (only the canary replaced)")
	st := plugin(t, "status", name)
	assertSays(t, "status", st.stdout, "paused", errorQuery)

	g.healthy(t)
	r := plugin(t, "resume", name, "--yes")
	stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume after recovery: %s", r)
	}
	assertSays(t, "resume", r.stdout, `wave 2: gate "`+errorGate+`" passed`)
	assertUpgraded(t, name, 3)
	assertReportedGates(t, name)
	t.Logf("paused on a bad series and resumed in %s", time.Since(start).Round(time.Second))
}

// assertReportedGates checks report shows wave 2's failed gate (the
// value seen, the threshold) and then its pass, in the table and -o json.
func assertReportedGates(t *testing.T, name string) {
	t.Helper()
	rep := plugin(t, "report", name)
	assertSays(t, "report", rep.stdout, "Gates before waves", "0.5", "< 0.01", "fail (threshold", "pass")
	js := plugin(t, "report", name, "-o", "json")
	var out report.Report
	if err := json.Unmarshal([]byte(js.stdout), &out); err != nil || len(out.Runs) == 0 {
		t.Fatalf("report -o json: %v %s", err, js)
	}
	var verdicts []string
	for _, g := range out.Runs[0].Gates {
		verdicts = append(verdicts, fmt.Sprintf("wave %d %s %s %v", g.Wave, g.Value, g.Threshold, g.Pass))
	}
	if len(verdicts) != 2 || verdicts[0] != "wave 2 0.5 < 0.01 false" || !strings.HasSuffix(verdicts[1], "< 0.01 true") {
		t.Errorf("report -o json gates %q, want wave 2 failed at 0.5 then passed", verdicts)
	}
}

// TestGatedWaveKilledInTheSoakReevaluatesAFiringAlert: a run killed in
// the soak before wave 2 (its gate pending in the record) is resumed
// while a critical alert fires: resume evaluates the gate, never skipping
// it, and the alert holds wave 2 (exit 8, naming it).
func TestGatedWaveKilledInTheSoakReevaluatesAFiringAlert(t *testing.T) {
	t.Parallel()
	const name = "wavekill"
	setupGroup(t, name, 4, 3, scenario.App{Name: "web", Replicas: 4, MaxUnavailable: num(1)})
	g := startGateServers(t)
	ctx := testContext(t, 5*time.Minute)
	stop := watchPDBs(t, ctx, name)
	start := time.Now()
	run := startBackground(t, pluginCmd(wavesArgs(name, "1,3", "3s", "--gate", alertGate, "--alertmanager-url", g.am)...))
	if !run.waitFor("wave 2/2", "waits: soak") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not soak before wave 2:\n%s", out)
	}
	_ = run.cmd.Process.Kill()
	run.wait(t, time.Minute)
	assertOutdatedLeft(t, name, 3, "after the kill in the soak")
	st := plugin(t, "status", name)
	assertSays(t, "status of the killed run", st.stdout, "soak")

	g.goBad(t)
	r := plugin(t, "resume", name, "--yes")
	stop()
	if r.code != nodeupgrade.ExitPaused {
		t.Fatalf("resume while the alert fires: want exit %d, got %s", nodeupgrade.ExitPaused, r)
	}
	assertSays(t, "the pause", r.stderr, "paused before wave 2", "alerts matching", "WebErrorRate")
	assertOutdatedLeft(t, name, 3, "after the alert held wave 2")
	t.Logf("killed in the soak, held by a firing alert in %s", time.Since(start).Round(time.Second))
}

// TestGatedWavesUnreachablePrometheus: a Prometheus that does not answer
// fails the gate at plan and run (exit 5, nothing changed); one that
// stops answering in the soak pauses the run (exit 8) naming it.
func TestGatedWavesUnreachablePrometheus(t *testing.T) {
	t.Parallel()
	const name = "wavedown"
	setupGroup(t, name, 4, 3, scenario.App{Name: "web", Replicas: 4, MaxUnavailable: num(1)})
	g := startGateServers(t)
	ctx := testContext(t, 5*time.Minute)
	start := time.Now()
	down := wavesArgs(name, "1,3", "3s", "--gate", errorGate, "--prometheus-url", "http://127.0.0.1:1")
	pl := plugin(t, append([]string{"plan", "--detailed-exitcode"}, down[1:]...)...)
	if pl.code != nodeupgrade.ExitBlockers {
		t.Fatalf("plan with an unreachable Prometheus: want exit %d, got %s", nodeupgrade.ExitBlockers, pl)
	}
	assertSays(t, "plan", pl.stdout+pl.stderr, "gate-failing", "unreachable")
	r := plugin(t, down...)
	if r.code != nodeupgrade.ExitBlockers {
		t.Fatalf("run with an unreachable Prometheus: want exit %d, got %s", nodeupgrade.ExitBlockers, r)
	}
	assertSays(t, "run", r.stderr, "gate-failing", "unreachable")
	assertUntouched(t, ctx, groupKey, name)
	assertOutdatedLeft(t, name, 4, "after the refused run")

	// Prometheus behind a proxy the test closes in the soak.
	promURL, err := url.Parse(g.prom)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(promURL))
	t.Cleanup(proxy.Close)
	stop := watchPDBs(t, ctx, name)
	run := startBackground(t, pluginCmd(wavesArgs(name, "1,3", "3s", "--gate", errorGate, "--prometheus-url", proxy.URL)...))
	if !run.waitFor("wave 2/2", "waits: soak") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not soak before wave 2:\n%s", out)
	}
	proxy.Close()
	code, out := run.wait(t, time.Minute)
	stop()
	if code != nodeupgrade.ExitPaused {
		t.Fatalf("Prometheus gone in the soak: want exit %d, got %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	assertSays(t, "the pause", out, "paused before wave 2", "could not be evaluated (unreachable)", strings.TrimPrefix(proxy.URL, "http://"))
	assertOutdatedLeft(t, name, 3, "after the unreachable gate")
	t.Logf("unreachable Prometheus refused at plan and paused mid-run in %s", time.Since(start).Round(time.Second))
}

// TestGatedBlueGreenRollsBackOnABadSeries: blue/green in waves 1,2 with
// --on-gate-fail rollback; the error rate goes bad in the soak after the
// canary: the run turns around, and blue is back in service at its own
// sizes with green deleted, 0 PDB violations; the run exits
// ExitRolledBack, not 0.
func TestGatedBlueGreenRollsBackOnABadSeries(t *testing.T) {
	t.Parallel()
	const name = "aws-bg-gate"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	gs := startGateServers(t)
	ctx := testContext(t, 5*time.Minute)
	stop := watchPDBs(t, ctx, name)
	start := time.Now()
	run := startBackground(t, g.cmd(sim.Kubeconfig, "run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "1", "--post-drain-wait", "0s", "--yes",
		"--waves", "1,2", "--wave-soak", "3s", "--gate", errorGate, "--prometheus-url", gs.prom, "--on-gate-fail", "rollback"))
	if !run.waitFor("wave 2/2", "waits: soak") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not soak before wave 2:\n%s", out)
	}
	gs.exp.Set(errorRate, 0.5)
	code, out := run.wait(t, 3*time.Minute)
	stop()
	// Rolled back is not upgraded: a pipeline routes on its own code.
	if code != nodeupgrade.ExitRolledBack {
		t.Fatalf("a bad series with --on-gate-fail rollback: want exit %d having rolled back, got %d:\n%s", nodeupgrade.ExitRolledBack, code, out)
	}
	assertSays(t, "the run", out, `query "`+errorQuery+`" was 0.5`, "rolling back (--on-gate-fail rollback)", "rolled back (--on-gate-fail rollback) before wave 2", "not upgraded")
	if slices.Contains(g.srv.Groups(), name+"-v2") {
		t.Errorf("green was not deleted: %v", g.srv.Groups())
	}
	if gr, _ := g.srv.Group(name); gr.Min != g.original.Min || gr.Desired != g.original.Desired || gr.Max != g.original.Max {
		t.Errorf("blue sizes %d/%d/%d, want the original %d/%d/%d", gr.Min, gr.Desired, gr.Max, g.original.Min, g.original.Desired, g.original.Max)
	}
	assertBackInService(t, name, g.run, false)
	t.Logf("blue/green rolled back on a bad series in %s", time.Since(start).Round(time.Second))
}
