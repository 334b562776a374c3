package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// execute runs the root command with args against a kubeconfig that points
// nowhere: every case here must fail before the cluster is contacted.
func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var in, out, errOut bytes.Buffer
	cmd := NewCmdNodeUpgrade(genericiooptions.IOStreams{In: &in, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append(args, "--kubeconfig", "/nonexistent/kubeconfig", "--server", "https://127.0.0.1:1"))
	err := cmd.ExecuteContext(context.Background())
	code = PrintError(&errOut, err)
	return out.String(), errOut.String(), code
}

func TestBadInputExitsTwoBeforeTouchingTheCluster(t *testing.T) {
	tgt := "--target-label=eks.amazonaws.com/nodegroup-image=ami-new"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no node group", []string{"plan", tgt}, "missing NODEGROUP"},
		{"node group and selector", []string{"plan", "ng", "-l", "a=b", tgt}, "use one"},
		{"no target with provider none", []string{"plan", "ng", "--provider", "none"}, "--target-label"},
		{"ami with provider none", []string{"plan", "ng", tgt, "--provider", "none", "--ami", "ami-1"}, "--ami needs --provider aws"},
		{"malformed ami", []string{"plan", "ng", "--ami", "ubuntu-24.04"}, `invalid --ami "ubuntu-24.04"`},
		{"ami and version", []string{"plan", "ng", "--ami", "ami-1", "--launch-template-version", "2"}, "cannot be used together"},
		{"malformed version", []string{"plan", "ng", "--launch-template-version", "latest"}, `invalid --launch-template-version "latest"`},
		{"version 0", []string{"plan", "ng", "--launch-template-version", "0"}, `invalid --launch-template-version "0"`},
		{"malformed target", []string{"plan", "ng", "--target-label", "novalue"}, `invalid --target-label "novalue"`},
		{"max-unavailable 0", []string{"plan", "ng", tgt, "--max-unavailable", "0"}, `invalid --max-unavailable "0"`},
		{"max-unavailable 101", []string{"plan", "ng", tgt, "--max-unavailable", "101"}, `invalid --max-unavailable "101"`},
		{"max-unavailable -1", []string{"plan", "ng", tgt, "--max-unavailable", "-1"}, `invalid --max-unavailable "-1"`},
		{"max-unavailable abc", []string{"plan", "ng", tgt, "--max-unavailable", "abc"}, `invalid --max-unavailable "abc"`},
		{"max-unavailable 150%", []string{"plan", "ng", tgt, "--max-unavailable", "150%"}, `invalid --max-unavailable "150%"`},
		{"bad taint", []string{"plan", "ng", tgt, "--taint", "x"}, `invalid --taint "x"`},
		{"unknown provider", []string{"plan", "ng", tgt, "--provider", "gcp"}, `invalid --provider "gcp"`},
		{"bad output", []string{"plan", "ng", tgt, "-o", "table"}, `invalid --output "table"`},
		{"wide check", []string{"check", "ng", tgt, "-o", "wide"}, `invalid --output "wide"`},
		{"days out of range", []string{"plan", "ng", tgt, "--strategy", "autoscaled-blue-green", "--wait-period", "8d"}, `invalid --wait-period 8d: must be from 0 to 7 days`},
		{"keep-blue out of range", []string{"run", "ng", tgt, "--yes", "--strategy", "blue-green", "--keep-blue", "8d"}, `invalid --keep-blue 8d: must be from 0 to 7 days`},
		{"keep-blue without blue-green", []string{"plan", "ng", tgt, "--keep-blue", "10m"}, "--keep-blue needs --strategy blue-green"},
		{"not a duration", []string{"run", "ng", tgt, "--post-drain-wait", "2x"}, `"--post-drain-wait"`},
		{"dry-run server", []string{"run", "ng", tgt, "--dry-run=server"}, `invalid --dry-run "server"`},
		{"dry-run unknown", []string{"run", "ng", tgt, "--dry-run=all"}, `invalid --dry-run "all": must be none, client or server`},
		{"version -o name", []string{"version", "-o", "name"}, `invalid --output "name"`},
		{"unknown flag", []string{"plan", "ng", tgt, "--nope"}, "unknown flag: --nope"},
		{"too many args", []string{"plan", "a", "b", tgt}, "too many arguments"},
		{"flag of another strategy", []string{"plan", "ng", tgt, "--batch-soak", "5s"}, "--batch-soak needs --strategy blue-green"},
		{"max-surge without surge", []string{"plan", "ng", tgt, "--max-surge", "2"}, "--max-surge needs --strategy surge"},
		{"max-unavailable with blue-green", []string{"plan", "ng", "--strategy", "blue-green", "--max-unavailable", "2"}, "--max-unavailable needs --strategy eks or surge"},
		{"unknown strategy", []string{"plan", "ng", tgt, "--strategy", "rolling"}, `invalid --strategy "rolling"`},
		{"run without terminal or --yes", []string{"run", "ng", tgt}, "use --yes"},
		{"zero drain timeout", []string{"run", "ng", tgt, "--yes", "--drain-timeout", "0s"}, "invalid --drain-timeout"},
		{"unknown undrainable", []string{"plan", "ng", tgt, "--undrainable", "skip"}, `invalid --undrainable "skip": must be cordon or fail`},
		{"undrainable cordon with blue-green", []string{"run", "ng", "--yes", "--strategy", "blue-green", "--undrainable", "cordon"}, `invalid --undrainable "cordon" with --strategy blue-green`},
		{"negative max-blocked-nodes", []string{"run", "ng", tgt, "--yes", "--undrainable", "cordon", "--max-blocked-nodes", "-1"}, "invalid --max-blocked-nodes -1"},
		{"max-blocked-nodes without cordon", []string{"plan", "ng", tgt, "--max-blocked-nodes", "1"}, "--max-blocked-nodes takes --undrainable cordon"},
		{"zero hook timeout", []string{"plan", "ng", tgt, "--pre-drain-hook", "true", "--hook-timeout", "0s"}, "invalid --hook-timeout 0s: must be positive"},
		{"negative hook timeout", []string{"run", "ng", tgt, "--yes", "--hook-timeout", "-1m"}, "invalid --hook-timeout -1m0s: must be positive"},
		{"missing plan file", []string{"run", "--plan-file", "/nonexistent/plan.json", "--yes"}, `cannot read --plan-file "/nonexistent/plan.json"`},
		{"bad window day", []string{"plan", "ng", tgt, "--window", "Sat-Sonday 22:00-06:00"}, `invalid --window "Sat-Sonday 22:00-06:00": unknown day "Sonday"`},
		{"bad window zone", []string{"run", "ng", tgt, "--yes", "--window", "Sat 22:00-06:00 Europe/Berlinn"}, `unknown time zone "Europe/Berlinn"`},
		{"bad not-after", []string{"run", "ng", tgt, "--yes", "--not-after", "friday"}, `invalid --not-after "friday": want RFC 3339`},
		{"not-after before not-before", []string{"plan", "ng", tgt, "--not-before", "2026-12-05", "--not-after", "2026-12-04"}, "--not-after 2026-12-04 is not after --not-before 2026-12-05"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := execute(t, tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not mention %q", stderr, tc.want)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "error: ") {
				t.Errorf("want exactly one error line, got %q", stderr)
			}
			if stdout != "" {
				t.Errorf("nothing should be printed on stdout, got %q", stdout)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	eviction := &drain.PodEvictionFailure{Node: "n1"}
	lost := &drain.EvictionUnreachable{Node: "n2", Pods: []string{"ns/web"}, Timeout: time.Minute, Err: io.EOF}
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{usageErrorf("bad"), ExitUsage},
		{fmt.Errorf("batch 1: %w", errors.Join(errors.New("other"), eviction)), ExitPodEvictionError},
		{fmt.Errorf("batch 1: %w", &drain.NodeErrors{Nodes: []string{"n2"}, Errs: []error{lost}}), ExitUnreachable},
		{&drain.NodeErrors{Nodes: []string{"n2", "n1"}, Errs: []error{lost, eviction}}, ExitPodEvictionError},
		{errors.New("boom"), ExitFailure},
		{fmt.Errorf("batch 1: %w", &upgrade.HookFailure{Hook: plan.HookPreDrain, Node: "n1", Status: "exit status 1"}), ExitHookFailed},
		{context.Canceled, ExitFailure},
		{&upgrade.WindowClosedError{What: "batch 2/3", NotAfter: time.Now()}, ExitPaused},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := execute(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "kubectl-nodeupgrade ") {
		t.Fatalf("version printed %q, exit %d", stdout, code)
	}
}

// TestRecordedRequestRepeatsTheRun: what run records is the typed request
// with the defaults resolved, so resume repeats it without the command line.
func TestRecordedRequestRepeatsTheRun(t *testing.T) {
	cmd, got := newCmdRun(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
	args := []string{"ng", "--strategy", "blue-green", "--ami", "ami-1", "--target-label", "a=b", "--target-label", "c=d", "--yes", "--batch-soak", "5s", "--seed", "4",
		"--pre-drain-hook", "notify $NODE", "--pre-terminate-hook", "deregister"}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := got.Complete(cmd, cmd.Flags().Args()); err != nil {
		t.Fatal(err)
	}
	r := got.Request.Request
	if r.NodeGroup != "ng" || r.Strategy != "blue-green" || r.Cloud.Image != "ami-1" || r.BlueGreen.BatchSoak != 5*time.Second || r.Seed != 4 ||
		strings.Join(r.TargetLabels, ",") != "a=b,c=d" || r.DrainTimeout != 15*time.Minute || r.PostDrainWait != time.Minute ||
		r.Hooks != (plan.Hooks{PreDrain: "notify $NODE", PreTerminate: "deregister", Timeout: plan.Duration(plan.DefaultHookTimeout)}) {
		t.Fatalf("recorded %+v", r)
	}
	// Through JSON, as the record keeps it.
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back plan.Request
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("request %+v did not survive JSON: %+v, %v", r, back, err)
	}
}

// TestStrategyDefaults: --max-unavailable and --drain-timeout default to
// what the strategy says when not given.
func TestStrategyDefaults(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		wantMaxUnavailable string
		wantDrain          time.Duration
	}{
		{[]string{"ng"}, "1", 15 * time.Minute},
		{[]string{"ng", "--strategy", "surge"}, "0", time.Hour},
		{[]string{"ng", "--strategy", "surge", "--drain-timeout", "5m", "--max-unavailable", "2"}, "2", 5 * time.Minute},
		{[]string{"ng", "--strategy", "autoscaled-blue-green"}, "1", time.Hour},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd, o := newCmdRun(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(cmd, cmd.Flags().Args()); err != nil {
				t.Fatal(err)
			}
			if o.MaxUnavailable != tc.wantMaxUnavailable || o.DrainTimeout != tc.wantDrain {
				t.Errorf("max-unavailable %q, drain-timeout %s", o.MaxUnavailable, o.DrainTimeout)
			}
		})
	}
}

// TestPlanFileWaits: run --plan-file waits as the reviewed plan said (its
// estimates count that wait), unless the wait is given again; resume
// repeats the recorded run's wait, not the plan's.
func TestPlanFileWaits(t *testing.T) {
	saved := plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, NodeGroup: "ng", Strategy: "eks", MaxUnavailableInput: "1",
		PostDrainWait: plan.Duration(2 * time.Second), DeregistrationTimeout: plan.Duration(90 * time.Second)}
	data, err := json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	file := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A plan saved before plans carried the wait.
	old := filepath.Join(t.TempDir(), "old-plan.json")
	if err := os.WriteFile(old, bytes.Replace(data, []byte(`"postDrainWait":"2s",`), nil, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                string
		args                []string // nil: the request comes from a record, as resume makes it
		recorded            plan.Request
		wantWait, wantDereg time.Duration
	}{
		{name: "the plan's waits", args: []string{"--plan-file", "plan.json"}, wantWait: 2 * time.Second, wantDereg: 90 * time.Second},
		{name: "a plan saved before plans carried the wait", args: []string{"--plan-file", old}, wantWait: time.Minute, wantDereg: 90 * time.Second},
		{name: "a wait given again", args: []string{"--plan-file", file, "--post-drain-wait", "0s", "--deregistration-timeout", "1m"}, wantDereg: time.Minute},
		{name: "resume repeats the recorded waits", recorded: plan.Request{PlanFile: file, PostDrainWait: 5 * time.Second, DeregistrationTimeout: time.Minute},
			wantWait: 5 * time.Second, wantDereg: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, o := newCmdRun(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
			if tc.args == nil {
				o.Request = session.Request{Request: tc.recorded}
				err = o.LoadPlanFile()
			} else {
				if err := cmd.ParseFlags(tc.args); err != nil {
					t.Fatal(err)
				}
				err = o.Complete(cmd, cmd.Flags().Args())
			}
			if err != nil {
				t.Fatal(err)
			}
			if !filepath.IsAbs(o.PlanFile) {
				t.Errorf("recorded plan file %q: resume in another directory would not find it", o.PlanFile)
			}
			if o.PostDrainWait != tc.wantWait || o.DeregistrationTimeout != tc.wantDereg {
				t.Errorf("post-drain-wait %s, deregistration-timeout %s; want %s, %s", o.PostDrainWait, o.DeregistrationTimeout, tc.wantWait, tc.wantDereg)
			}
		})
	}
}
