package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate/gatetest"
)

const series = `errors_ratio{service="web"}`

// TestEvaluatePrometheus runs the real Prometheus scraping an exporter the
// test sets: a window whose every sample passes passes; one bad sample
// fails it though the last is good; what cannot be evaluated fails and
// says why.
func TestEvaluatePrometheus(t *testing.T) {
	exp := gatetest.NewExporter(t)
	exp.Set(series, 0.001)
	prom := gatetest.Prometheus(t, []string{exp.URL}, "", "")
	ctx := context.Background()
	ev := gate.Evaluator{PrometheusURL: prom}
	good := waitValue(t, ev, "errors_ratio", 0.001)
	exp.Set(series, 0.5)
	bad := waitValue(t, ev, "errors_ratio", 0.5)
	exp.Set(series, 0.001)
	after := waitValue(t, ev, "errors_ratio", 0.001)

	tests := []struct {
		name, gate string
		from, to   time.Time
		pass       bool
		reason     gate.Reason
		value      string
		detail     string
	}{
		{name: "every sample passes", gate: "prometheus:errors_ratio<0.01", from: good.Add(-time.Second), to: good, pass: true},
		{name: "a bad sample in the window fails, though the last passes", gate: "prometheus:errors_ratio<0.01", from: good, to: after, reason: gate.ReasonThreshold, value: "0.5"},
		{name: "instant", gate: "prometheus:errors_ratio>0.1", from: bad, to: bad, pass: true},
		{name: "no data", gate: "prometheus:no_such_series<1", from: good, to: after, reason: gate.ReasonNoData, detail: "matched no series"},
		{name: "query error", gate: "prometheus:sum(rate(errors_ratio))<1", from: good, to: after, reason: gate.ReasonQueryError, detail: "bad_data"},
		{name: "a labelled vector", gate: `prometheus:label_replace(vector(1),"a","b","c","d")>0`, from: after, to: after, pass: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := gate.Parse(tt.gate)
			if err != nil {
				t.Fatal(err)
			}
			v := ev.Evaluate(ctx, spec, tt.from, tt.to)
			if v.Pass != tt.pass || v.Reason != tt.reason || !strings.HasPrefix(v.Value, tt.value) || !strings.Contains(v.Detail, tt.detail) {
				t.Fatalf("verdict %+v; want pass %v reason %q value %q detail %q", v, tt.pass, tt.reason, tt.value, tt.detail)
			}
			if !tt.pass && !strings.Contains(v.String(), tt.gate) {
				t.Fatalf("%q does not name the gate", v.String())
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		spec, _ := gate.Parse("prometheus:errors_ratio<0.01")
		v := gate.Evaluator{PrometheusURL: "http://127.0.0.1:1"}.Evaluate(ctx, spec, after, after)
		if v.Pass || v.Reason != gate.ReasonUnreachable || !strings.Contains(v.Detail, "--prometheus-url") {
			t.Fatalf("verdict %+v", v)
		}
	})
	t.Run("the threshold's message", func(t *testing.T) {
		spec, _ := gate.Parse("prometheus:errors_ratio<0.01")
		v := ev.Evaluate(ctx, spec, good, after)
		for _, want := range []string{`query "errors_ratio"`, "was 0.5", "threshold < 0.01"} {
			if !strings.Contains(v.String(), want) {
				t.Fatalf("%q lacks %q", v.String(), want)
			}
		}
	})
}

// waitValue waits until an instant query of q gives want, and returns
// when it did.
func waitValue(t *testing.T, ev gate.Evaluator, q string, want float64) time.Time {
	t.Helper()
	spec, err := gate.Parse("prometheus:" + q + "<1e300")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		now := time.Now()
		v := ev.Evaluate(context.Background(), spec, now, now)
		if v.Pass && strings.HasPrefix(v.Value, strings.TrimSpace(jsonFloat(want))+" ") {
			return now
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s never gave %g", q, want)
	return time.Time{}
}

func jsonFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// TestEvaluateAlertmanager posts alerts to the real Alertmanager as
// Prometheus does (POST /api/v2/alerts): a matching active alert fails
// the gate, naming it; others do not.
func TestEvaluateAlertmanager(t *testing.T) {
	am := gatetest.Alertmanager(t)
	ctx := context.Background()
	body, _ := json.Marshal([]map[string]any{{
		"labels":   map[string]string{"alertname": "HighErrorRate", "severity": "critical", "team": "web"},
		"startsAt": time.Now().Add(-time.Minute).Format(time.RFC3339),
	}})
	res, err := http.Post(am+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("posting the alert: %s", res.Status)
	}
	ev := gate.Evaluator{AlertmanagerURL: am}
	tests := []struct {
		gate   string
		pass   bool
		reason gate.Reason
		value  string
	}{
		{gate: "alertmanager:severity=critical", reason: gate.ReasonFiring, value: "HighErrorRate"},
		{gate: "alertmanager:severity=~crit.*,team=web", reason: gate.ReasonFiring, value: "HighErrorRate"},
		{gate: "alertmanager:severity=warning", pass: true},
		{gate: "alertmanager:severity=critical,team!=web", pass: true},
	}
	for _, tt := range tests {
		t.Run(tt.gate, func(t *testing.T) {
			spec, err := gate.Parse(tt.gate)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			v := ev.Evaluate(ctx, spec, now, now)
			if v.Pass != tt.pass || v.Reason != tt.reason || v.Value != tt.value {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		spec, _ := gate.Parse("alertmanager:severity=critical")
		v := gate.Evaluator{AlertmanagerURL: "http://127.0.0.1:1"}.Evaluate(ctx, spec, time.Now(), time.Now())
		if v.Pass || v.Reason != gate.ReasonUnreachable || !strings.Contains(v.Detail, "--alertmanager-url") {
			t.Fatalf("verdict %+v", v)
		}
	})
}

func TestEvaluateExec(t *testing.T) {
	tests := []struct {
		gate   string
		pass   bool
		value  string
		detail string
	}{
		{gate: "exec:true", pass: true, value: "exit status 0"},
		{gate: "exec:echo checking; echo broken >&2; exit 3", value: "exit status 3", detail: "broken"},
		{gate: `exec:test "$NODEUPGRADE_WAVE" = 2`, pass: true, value: "exit status 0"},
	}
	ev := gate.Evaluator{Env: []string{"NODEUPGRADE_WAVE=2"}}
	for _, tt := range tests {
		t.Run(tt.gate, func(t *testing.T) {
			spec, err := gate.Parse(tt.gate)
			if err != nil {
				t.Fatal(err)
			}
			v := ev.Evaluate(context.Background(), spec, time.Now(), time.Now())
			if v.Pass != tt.pass || v.Value != tt.value || v.Detail != tt.detail {
				t.Fatalf("verdict %+v", v)
			}
		})
	}
}
