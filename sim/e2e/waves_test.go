package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/internal/plugin"
	healthgate "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate/gatetest"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// errorRate is the exporter's series the gate reads; the alert rule
// fires on it as well.
const (
	errorRate  = `errors_ratio{service="web"}`
	errorQuery = "max(errors_ratio)"
	alertRules = `groups:
- name: web
  rules:
  - alert: WebErrorRate
    expr: max(errors_ratio) > 0.01
    labels:
      severity: critical
`
)

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

// TestGatedWavesPauseOnABadSeriesAndResume runs the real Prometheus and
// Alertmanager: Prometheus scrapes an exporter the test sets and sends
// its alert rule's alerts to Alertmanager. An unreachable Prometheus is
// refused before anything changes (exit 5); a run killed in the soak
// before wave 2 evaluates the gates on resume, which fail on the series
// the test turned bad (exit 8, naming the query, the value and the
// threshold, and the firing alert), with only wave 1 replaced; once the
// series is healthy again, resume finishes. 0 PDB violations throughout.
func TestGatedWavesPauseOnABadSeriesAndResume(t *testing.T) {
	t.Parallel()
	const name = "gated"
	setupGroup(t, name, 6, 3, scenario.App{Name: "web", Replicas: 4, MaxUnavailable: num(1)})
	exp := gatetest.NewExporter(t)
	exp.Set(errorRate, 0)
	am := gatetest.Alertmanager(t)
	prom := gatetest.Prometheus(t, []string{exp.URL}, alertRules, am)
	ctx := testContext(t, 6*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	args := []string{"run", name, "--target-label", target, "--max-unavailable", "2", "--post-drain-wait", "0s", "--seed", "1", "--yes",
		"--waves", "1,2,3", "--wave-soak", "4s", "--gate", "prometheus:" + errorQuery + "<0.01", "--gate", "alertmanager:severity=critical", "--alertmanager-url", am}

	// An unreachable Prometheus: plan says so, run refuses, nothing changes.
	r := plugin(t, append(args, "--prometheus-url", "http://127.0.0.1:1")...)
	if r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "gate-failing") || !strings.Contains(r.stderr, "unreachable") {
		t.Fatalf("run with an unreachable Prometheus: want exit %d naming the gate, got %s", nodeupgrade.ExitBlockers, r)
	}
	assertUntouched(t, ctx, groupKey, name)
	args = append(args, "--prometheus-url", prom)
	pl := plugin(t, append([]string{"plan"}, args[1:]...)...)
	if pl.code != nodeupgrade.ExitOK || !strings.Contains(pl.stdout, "Waves (soak 4s") || !strings.Contains(pl.stdout, "WaveSoak") || !strings.Contains(pl.stdout, "passed") {
		t.Fatalf("plan shows no waves, soak or passing gates: %s", pl)
	}

	// Killed in the soak before wave 2.
	run := startBackground(t, pluginCmd(args...))
	if !run.waitFor("wave 2/3", "waits: soak") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not soak before wave 2:\n%s", out)
	}
	_ = run.cmd.Process.Kill()
	run.wait(t, time.Minute)
	if left := outdatedLeft(t, name); left != 5 {
		t.Fatalf("%d outdated nodes left after wave 1, want 5", left)
	}
	// The service goes bad: resume evaluates the pending gates and pauses.
	exp.Set(errorRate, 0.5)
	waitAlert(t, am)
	r = plugin(t, "resume", name)
	if r.code != nodeupgrade.ExitPaused {
		t.Fatalf("resume with the series bad: want exit %d, got %s", nodeupgrade.ExitPaused, r)
	}
	for _, want := range []string{"paused before wave 2", `query "` + errorQuery + `" was 0.5`, "threshold < 0.01", "WebErrorRate", "1 nodes replaced"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the pause does not say %q:\n%s", want, r.stderr)
		}
	}
	if left := outdatedLeft(t, name); left != 5 {
		t.Fatalf("%d outdated nodes left after the failed gate, want 5 (only wave 1 replaced)", left)
	}
	st := plugin(t, "status", name)
	if !strings.Contains(st.stdout, "paused") || !strings.Contains(st.stdout, "gate") {
		t.Errorf("status after the failed gate:\n%s", st)
	}

	// Healthy again: resume soaks, evaluates and finishes.
	exp.Set(errorRate, 0.001)
	waitHealthy(t, prom, am)
	r = plugin(t, "resume", name)
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume after recovery: %s", r)
	}
	if !strings.Contains(r.stdout, "wave 3: gate") {
		t.Errorf("resume did not gate wave 3:\n%s", r.stdout)
	}
	assertNoViolations(t, violations)
	assertUpgraded(t, name, 3)
	t.Logf("gated waves: refused, killed, paused and resumed in %s", time.Since(start).Round(time.Second))
}

// waitAlert waits until Alertmanager has the rule's alert.
func waitAlert(t *testing.T, am string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if v := alertGate(am); !v.Pass && v.Value == "WebErrorRate" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("Alertmanager never had the alert WebErrorRate")
}

// waitHealthy waits until Prometheus sees the series healthy and the
// alert is resolved in Alertmanager.
func waitHealthy(t *testing.T, prom, am string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if evaluate(prom, am, "prometheus:"+errorQuery+"<0.01").Pass && evaluate(prom, am, "alertmanager:severity=critical").Pass {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the series or the alert never recovered")
}

func alertGate(am string) healthgate.Verdict {
	return evaluate("", am, "alertmanager:severity=critical")
}

// evaluate evaluates one gate now.
func evaluate(prom, am, g string) healthgate.Verdict {
	spec, _ := healthgate.Parse(g)
	now := time.Now()
	return healthgate.Evaluator{PrometheusURL: prom, AlertmanagerURL: am}.Evaluate(context.Background(), spec, now, now)
}
