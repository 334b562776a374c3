package plugin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
)

// fleetKubeconfig has contexts dev and prod-a, whose servers answer
// nothing: a bad fleet file must be refused before any is asked.
const fleetKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: x}
contexts:
- name: dev
  context: {cluster: nowhere, user: u}
- name: prod-a
  context: {cluster: nowhere, user: u}
current-context: dev
`

const goodFleet = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: img-42}
defaults:
  run: {provider: none, target-label: "img=new"}
stages:
- name: canary
  targets:
  - {context: dev, nodeGroup: ng1}
- name: prod
  maxConcurrency: 1
  targets:
  - {context: prod-a, nodeGroup: ng1}
`

func TestBadFleetFilesExitTwoBeforeAnyCluster(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(fleetKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown key", "maxConcurrency: 1\n", "maxConcurrency: 1\n  maxConcurency: 3\n", `unknown key "stages[1].maxConcurency" (value 3)`},
		{"empty stage", "  targets:\n  - {context: prod-a, nodeGroup: ng1}\n", "  targets: []\n", `stages[1] "prod": targets is empty`},
		{"duplicate target", "{context: prod-a, nodeGroup: ng1}", "{context: dev, nodeGroup: ng1}", `duplicate target "dev/ng1" (also in stage "canary")`},
		{"unknown context", "{context: prod-a,", "{context: prod-b,", `unknown context "prod-b"`},
		{"no context selected", "{context: prod-a,", "{contextSelector: \"eu-*\",", `contextSelector "eu-*" selects no context`},
		{"maxConcurrency 0", "maxConcurrency: 1", "maxConcurrency: 0", `maxConcurrency "0": must be a count or percentage of at least 1`},
		{"gate without its server", "- name: prod\n", "  afterStage: {gates: [\"prometheus:up < 1\"]}\n- name: prod\n", `needs its server: set defaults.run.prometheus-url`},
		{"unknown run flag", "target-label: \"img=new\"", "target-label: \"img=new\", max-unavailabel: 2", `run: unknown flag: --max-unavailabel`},
		{"a flag the fleet sets", "target-label: \"img=new\"", "target-label: \"img=new\", context: prod-a", `--context is the fleet's to set`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(goodFleet, tc.from) {
				t.Fatalf("the good file has no %q", tc.from)
			}
			file := filepath.Join(t.TempDir(), "fleet.yaml")
			if err := os.WriteFile(file, []byte(strings.Replace(goodFleet, tc.from, tc.to, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, verb := range [][]string{{"plan"}, {"run", "--yes"}, {"status"}} {
				var out, errOut bytes.Buffer
				cmd := NewCmdNodeUpgrade(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
				cmd.SetArgs(append([]string{"fleet", verb[0], "-f", file, "--kubeconfig", kc}, verb[1:]...))
				code := PrintError(&errOut, cmd.ExecuteContext(context.Background()))
				if code != ExitUsage || !oneLineOf(errOut.String()) || !strings.Contains(errOut.String(), tc.want) {
					t.Errorf("fleet %s: exit %d, want %d with one line naming %q:\n%s%s", verb[0], code, ExitUsage, tc.want, out.String(), errOut.String())
				}
			}
		})
	}
}

func oneLineOf(s string) bool { return strings.Count(strings.TrimRight(s, "\n"), "\n") == 0 && s != "" }

func TestFleetStatusWatchEnds(t *testing.T) {
	row := func(status string, alive bool) fleet.Row {
		return fleet.Row{Cluster: "c", Group: "ng", Status: status, Alive: alive}
	}
	tests := []struct {
		name  string
		rows  []fleet.Row
		ended bool
		code  int
	}{
		{"every target finished", []fleet.Row{row(StatusFinished, false), row(StatusFinished, false)}, true, ExitOK},
		{"one runs", []fleet.Row{row(StatusFinished, false), row(StatusRunning, true)}, false, ExitOK},
		{"between stages: the next not started", []fleet.Row{row(StatusFinished, false), row(fleet.StatusNotStarted, false)}, false, ExitOK},
		{"one failed, none runs: stopped", []fleet.Row{row(StatusFailed, false), row(fleet.StatusNotStarted, false)}, true, ExitPaused},
		{"one failed while another runs", []fleet.Row{row(StatusFailed, false), row(StatusRunning, true)}, false, ExitOK},
		{"a cluster that does not answer", []fleet.Row{row(StatusFinished, false), row(fleet.StatusUnknown, false)}, false, ExitOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ended, err := fleetEnded(&FleetStatus{Name: "f", Targets: tc.rows})
			if ended != tc.ended || ExitCode(err) != tc.code {
				t.Errorf("ended %v exit %d (%v), want %v exit %d", ended, ExitCode(err), err, tc.ended, tc.code)
			}
		})
	}
}
