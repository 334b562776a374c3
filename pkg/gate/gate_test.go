package gate

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in        string
		kind      Kind
		query     string
		op        Op
		threshold float64
		matchers  []Matcher
		command   string
		err       string
	}{
		{in: "prometheus:sum(rate(errors[1m]))<0.01", kind: Prometheus, query: "sum(rate(errors[1m]))", op: Less, threshold: 0.01},
		{in: "prometheus: histogram_quantile(0.99, rate(lat_bucket[5m])) <= 0.25", kind: Prometheus, query: "histogram_quantile(0.99, rate(lat_bucket[5m]))", op: LessEq, threshold: 0.25},
		{in: "prometheus:up{job=\"web\"}>=1", kind: Prometheus, query: "up{job=\"web\"}", op: GreaterEq, threshold: 1},
		{in: "prometheus:count(x > 5)>3", kind: Prometheus, query: "count(x > 5)", op: Greater, threshold: 3},
		{in: "alertmanager:severity=critical", kind: Alertmanager, matchers: []Matcher{{"severity", "=", "critical"}}},
		{in: "alertmanager:severity=~\"critical|page\", team!=db", kind: Alertmanager, matchers: []Matcher{{"severity", "=~", "critical|page"}, {"team", "!=", "db"}}},
		{in: "exec:./smoke.sh --fast", kind: Exec, command: "./smoke.sh --fast"},
		{in: "prometheus:rate(errors[1m])", err: `invalid --gate "prometheus:rate(errors[1m])": prometheus: needs QUERY<THRESHOLD`},
		{in: "prometheus:<0.1", err: "needs a query before the comparison"},
		{in: "prometheus:x<abc", err: "with a number for THRESHOLD"},
		{in: "alertmanager:", err: "needs label matchers"},
		{in: "alertmanager:critical", err: `matcher "critical" must be LABEL=VALUE`},
		{in: "exec:", err: "exec: needs a command"},
		{in: "datadog:x<1", err: `unknown kind "datadog"`},
		{in: "x<1", err: "must be prometheus:QUERY<THRESHOLD"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("Parse(%q) = %v, want one line containing %q", tt.in, err, tt.err)
				}
				if !strings.HasPrefix(err.Error(), "invalid --gate ") {
					t.Fatalf("error %q does not name --gate", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind != tt.kind || s.Query != tt.query || s.Op != tt.op || s.Threshold != tt.threshold || s.Command != tt.command || s.Text != tt.in {
				t.Fatalf("Parse(%q) = %+v", tt.in, s)
			}
			if len(s.Matchers) != len(tt.matchers) {
				t.Fatalf("matchers %v, want %v", s.Matchers, tt.matchers)
			}
			for i := range s.Matchers {
				if s.Matchers[i] != tt.matchers[i] {
					t.Fatalf("matchers %v, want %v", s.Matchers, tt.matchers)
				}
			}
		})
	}
}

func TestNeedsFlag(t *testing.T) {
	specs, err := ParseAll([]string{"exec:true", "prometheus:x<1", "alertmanager:a=b"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ prom, am, want string }{
		{"", "http://am", `--gate "prometheus:x<1" needs --prometheus-url`},
		{"http://p", "", `--gate "alertmanager:a=b" needs --alertmanager-url`},
		{"http://p", "http://am", ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := NeedsFlag(specs, tt.prom, tt.am); got != tt.want {
				t.Fatalf("NeedsFlag = %q, want %q", got, tt.want)
			}
		})
	}
}
