package gate

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Reason says why a gate failed; "" when it passed.
type Reason string

// Why a gate failed: the first three say it could not be evaluated.
const (
	ReasonUnreachable Reason = "unreachable"  // the server did not answer
	ReasonQueryError  Reason = "query error"  // the server refused the query or answered nonsense
	ReasonNoData      Reason = "no data"      // the query matched no series in the window
	ReasonThreshold   Reason = "threshold"    // a sample broke the threshold
	ReasonFiring      Reason = "alert firing" // a matching alert is firing
	ReasonExit        Reason = "exit status"  // the command failed
)

// Verdict is one evaluation of one gate: typed, so the record keeps it
// and status and report show it.
type Verdict struct {
	// Gate is the gate as given (--gate).
	Gate string `json:"gate"`
	Kind Kind   `json:"kind"`
	// What is the query, the alert matchers or the command.
	What string `json:"what"`
	// Threshold is a prometheus gate's ("< 0.01").
	Threshold string `json:"threshold,omitempty"`
	// Value is what was seen: the first sample that broke the threshold
	// (else the worst), the firing alerts, or the command's exit status.
	Value string `json:"value,omitempty"`
	// At is when Value was seen (a sample's time).
	At *time.Time `json:"at,omitempty"`
	// From and To are the window evaluated (From == To: an instant).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Pass bool      `json:"pass"`
	// Reason says why it failed; Detail the server's or command's words.
	Reason Reason `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Unevaluated reports whether the gate could not be evaluated at all.
func (v Verdict) Unevaluated() bool {
	return v.Reason == ReasonUnreachable || v.Reason == ReasonQueryError || v.Reason == ReasonNoData
}

// String is the verdict in one line, naming the gate, what it looks at,
// the value seen and the threshold.
func (v Verdict) String() string {
	if v.Pass {
		s := fmt.Sprintf("gate %q passed", v.Gate)
		if v.Value != "" {
			s += fmt.Sprintf(" (worst %s, threshold %s)", v.Value, v.Threshold)
		}
		return s
	}
	switch v.Reason {
	case ReasonThreshold:
		return fmt.Sprintf("gate %q failed: query %q was %s at %s, threshold %s", v.Gate, v.What, v.Value, v.At.UTC().Format(time.RFC3339), v.Threshold)
	case ReasonFiring:
		return fmt.Sprintf("gate %q failed: alerts matching %s firing: %s", v.Gate, v.What, v.Value)
	case ReasonExit:
		s := fmt.Sprintf("gate %q failed: command %q ended with %s", v.Gate, v.What, v.Value)
		if v.Detail != "" {
			s += ": " + v.Detail
		}
		return s
	}
	return fmt.Sprintf("gate %q could not be evaluated (%s): %s", v.Gate, v.Reason, v.Detail)
}

// Evaluator evaluates gates against the servers the flags name.
type Evaluator struct {
	// PrometheusURL and AlertmanagerURL are --prometheus-url and
	// --alertmanager-url.
	PrometheusURL   string
	AlertmanagerURL string
	// HTTP is the client of both; a 30s timeout when nil.
	HTTP *http.Client
	// Env is added to an exec gate's environment (the run's wave, say).
	Env []string
	// ExecTimeout bounds an exec gate; 10m when 0.
	ExecTimeout time.Duration
	// Dir is the directory an exec gate runs in: the run's, wherever the
	// command that goes on with it is typed; the process's when "".
	Dir string
}

// Evaluate evaluates spec over the window from..to: a prometheus gate's
// every sample in it; an alertmanager gate's alerts and an exec gate's
// command now. from == to is an instant (plan's preflight).
func (e Evaluator) Evaluate(ctx context.Context, spec Spec, from, to time.Time) Verdict {
	v := Verdict{Gate: spec.Text, Kind: spec.Kind, What: spec.What(), Threshold: spec.ThresholdText(), From: from.UTC(), To: to.UTC()}
	switch spec.Kind {
	case Prometheus:
		e.prometheus(ctx, spec, &v)
	case Alertmanager:
		e.alertmanager(ctx, spec, &v)
	case Exec:
		e.exec(ctx, spec, &v)
	}
	return v
}

// EvaluateAll evaluates every spec over the window, in order.
func (e Evaluator) EvaluateAll(ctx context.Context, specs []Spec, from, to time.Time) []Verdict {
	out := make([]Verdict, 0, len(specs))
	for _, s := range specs {
		out = append(out, e.Evaluate(ctx, s, from, to))
	}
	return out
}

// Failed returns the verdicts that did not pass.
func Failed(vs []Verdict) []Verdict {
	var out []Verdict
	for _, v := range vs {
		if !v.Pass {
			out = append(out, v)
		}
	}
	return out
}

func (e Evaluator) client() *http.Client {
	if e.HTTP != nil {
		return e.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// NeedsFlag names the flag spec needs and specs lack, or "".
func NeedsFlag(specs []Spec, prometheusURL, alertmanagerURL string) string {
	for _, s := range specs {
		if s.Kind == Prometheus && prometheusURL == "" {
			return fmt.Sprintf("--gate %q needs --prometheus-url", s.Text)
		}
		if s.Kind == Alertmanager && alertmanagerURL == "" {
			return fmt.Sprintf("--gate %q needs --alertmanager-url", s.Text)
		}
	}
	return ""
}
