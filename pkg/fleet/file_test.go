package fleet

import (
	"errors"
	"strings"
	"testing"
)

const good = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: img-42}
defaults:
  run: {provider: none, max-unavailable: 1, prometheus-url: "http://prom:9090"}
stages:
- name: canary
  targets:
  - {context: dev, nodeGroup: ng1}
  afterStage: {soak: 10m, gates: ["prometheus:sum(rate(errors[5m])) < 1"], approval: true}
- name: prod
  maxConcurrency: 50%
  maxFailures: 1
  targets:
  - {contextSelector: "prod-*", nodeGroup: ng1, run: {max-unavailable: 2}}
`

var contexts = []string{"dev", "prod-a", "prod-b", "prod-c"}

func TestResolveGood(t *testing.T) {
	f, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	var checked [][]string
	fl, err := Resolve(f, Options{Contexts: contexts, CheckRun: func(a []string) error { checked = append(checked, a); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(fl.Stages) != 2 || len(fl.Stages[1].Targets) != 3 || fl.Stages[1].MaxConcurrency != 2 {
		t.Fatalf("resolved %+v", fl.Stages)
	}
	if got := strings.Join(fl.Stages[1].Targets[0].Args, " "); got != "--max-unavailable=2 --prometheus-url=http://prom:9090 --provider=none" {
		t.Errorf("args %q", got)
	}
	if len(checked) != 2 {
		t.Errorf("run flags checked %d times, want once per target spec", len(checked))
	}
	if fl.Hash == "" || fl.Stages[0].Hash == fl.Stages[1].Hash {
		t.Errorf("hashes %q %q %q", fl.Hash, fl.Stages[0].Hash, fl.Stages[1].Hash)
	}
}

func TestBadFiles(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown key", "maxFailures: 1\n", "maxFailures: 1\n  maxConcurency: 3\n", `unknown key "stages[1].maxConcurency" (value 3)`},
		{"unknown top key", "kind: FleetPlan\n", "kind: FleetPlan\nstagez: 1\n", `unknown key "stagez" (value 1)`},
		{"wrong kind", "kind: FleetPlan", "kind: Fleet", `kind "Fleet": want "FleetPlan"`},
		{"wrong apiVersion", "v1alpha1", "v1", `apiVersion "nodeupgrade.dev/v1": want`},
		{"no name", "{name: img-42}", "{}", "metadata.name is empty"},
		{"empty stage targets", "  targets:\n  - {contextSelector: \"prod-*\", nodeGroup: ng1, run: {max-unavailable: 2}}\n", "  targets: []\n", `stages[1] "prod": targets is empty`},
		{"duplicate target", `{contextSelector: "prod-*"`, `{contextSelector: "*"`, `duplicate target "dev/ng1" (also in stage "canary")`},
		{"unknown context", "context: dev", "context: staging", `unknown context "staging"`},
		{"selector selects none", `"prod-*"`, `"eu-*"`, `contextSelector "eu-*" selects no context`},
		{"maxConcurrency 0", "maxConcurrency: 50%", "maxConcurrency: 0", `maxConcurrency "0": must be a count or percentage of at least 1`},
		{"maxConcurrency 0%", "maxConcurrency: 50%", "maxConcurrency: 0%", `maxConcurrency "0%"`},
		{"negative maxFailures", "maxFailures: 1", "maxFailures: -1", "maxFailures -1"},
		{"gate without server", `prometheus-url: "http://prom:9090"`, `x: y`, `afterStage gate "prometheus:sum(rate(errors[5m])) < 1" needs its server: set defaults.run.prometheus-url`},
		{"bad gate", `"prometheus:sum(rate(errors[5m])) < 1"`, `"graphite:x"`, "afterStage.gates"},
		{"bad soak", "soak: 10m", "soak: ten", `afterStage.soak "ten"`},
		{"both context kinds", "{context: dev,", "{context: dev, contextSelector: d*,", "give one of context and contextSelector"},
		{"no group", "{context: dev, nodeGroup: ng1}", "{context: dev}", "give one of nodeGroup and selector"},
		{"nested run value", "run: {max-unavailable: 2}", "run: {max-unavailable: {a: 1}}", "run.max-unavailable: want a value"},
		{"duplicate stage", "- name: prod", "- name: canary", `duplicate stage name "canary"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(good, tt.from) {
				t.Fatalf("the good file lacks %q", tt.from)
			}
			f, err := Parse([]byte(strings.Replace(good, tt.from, tt.to, 1)))
			if err == nil {
				_, err = Resolve(f, Options{Contexts: contexts})
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !IsFileError(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want a one-line fleet file error with %q", err, tt.want)
			}
		})
	}
}

func TestResolveChecksRunFlags(t *testing.T) {
	f, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(f, Options{Contexts: contexts, CheckRun: func([]string) error { return errors.New(`unknown flag: --max-unavailable`) }})
	if err == nil || !strings.Contains(err.Error(), `stages[0] "canary" targets[0]: run: unknown flag`) {
		t.Fatalf("got %v", err)
	}
}
