package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestCompleteStoppedSoak: complete on a blue/green run stopped in its
// soak ends the soak in the record, whatever stopped the run, so status
// says "soak over" and resume (which keeps a complete it has not read)
// goes straight on instead of waiting out the rest.
func TestCompleteStoppedSoak(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		stored      state.RunState
		lastError   string
		phase       plan.Phase
		wantRequest string // the request left for the run that resumes it
	}{
		{"--no-wait", state.StateSoaking, "", plan.PhaseSoak, ""},
		{"Ctrl-C", state.StateInterrupted, InterruptedError, plan.PhaseSoak, ""},
		{"killed", state.StateRunning, "", plan.PhaseSoak, ""},
		{"Ctrl-C in a batch soak", state.StateInterrupted, InterruptedError, plan.PhaseBatchSoak, state.RequestComplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{Client: fake.NewClientset(), StateNamespace: "kube-system"}
			until := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
			rec := &state.Record{NodeGroup: "g", Strategy: string(plan.StrategyBlueGreen), State: tc.stored, LastError: tc.lastError,
				Phase: string(tc.phase), StartedAt: time.Now(), Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "g"}}}
			if tc.phase == plan.PhaseSoak {
				rec.Cloud.SoakUntil = &until
			}
			if err := s.store().Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			run := look(t, s)
			if tc.phase == plan.PhaseSoak && run.Status != state.StateSoaking {
				t.Errorf("before complete: status %q, want %q", run.Status, state.StateSoaking)
			}
			asked, err := s.Controls().Complete(ctx, run)
			if err != nil || asked {
				t.Fatalf("complete: asked %v, %v; want the soak ended without a process", asked, err)
			}
			after := look(t, s)
			if tc.phase == plan.PhaseSoak {
				if after.Status != StatusSoakOver || !after.Record.Cloud.SoakUntil.Before(until) {
					t.Errorf("after complete: status %q, soak until %v; want %q, ended now", after.Status, after.Record.Cloud.SoakUntil, StatusSoakOver)
				}
			}
			if err := s.Controls().ClearRequests(ctx, "g", true); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Requests("g").Pending(ctx); got != tc.wantRequest {
				t.Errorf("resume reads request %q, want %q", got, tc.wantRequest)
			}
		})
	}
}

func look(t *testing.T, s *Session) *Run {
	t.Helper()
	run, err := s.Look(context.Background(), "g")
	if err != nil || run == nil {
		t.Fatalf("look: %v, %v", run, err)
	}
	return run
}

// TestCancelAndAskRollback: the controls check the lifecycle before they
// record anything: a refused one leaves no request; a taken one leaves
// the request the run reads.
func TestCancelAndAskRollback(t *testing.T) {
	ctx := context.Background()
	finished := time.Now()
	for _, tc := range []struct {
		name        string
		rec         state.Record
		control     func(s *Session, run *Run) error
		wantErr     bool
		wantRequest string
		wantStatus  state.RunState
	}{
		{"cancel a stopped run", state.Record{Strategy: "eks", State: state.StateFailed, LastError: "boom", Phase: "Drain"},
			func(s *Session, run *Run) error { _, err := s.Controls().Cancel(ctx, run); return err }, false, state.RequestCancel, state.StatePaused},
		{"cancel a finished run", state.Record{Strategy: "eks", State: state.StateFinished, Phase: "Done", FinishedAt: &finished},
			func(s *Session, run *Run) error { _, err := s.Controls().Cancel(ctx, run); return err }, true, "", state.StateFinished},
		{"ask an eks run to roll back", state.Record{Strategy: "eks", State: state.StateFailed, LastError: "boom", Phase: "Drain"},
			func(s *Session, run *Run) error { return s.Controls().AskRollback(ctx, run) }, true, "", state.StateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{Client: fake.NewClientset(), StateNamespace: "kube-system"}
			rec := tc.rec
			rec.NodeGroup, rec.StartedAt = "g", time.Now()
			if err := s.store().Save(ctx, &rec); err != nil {
				t.Fatal(err)
			}
			err := tc.control(s, look(t, s))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if got, _ := s.Requests("g").Pending(ctx); got != tc.wantRequest {
				t.Errorf("request %q, want %q", got, tc.wantRequest)
			}
			if got := look(t, s).Status; got != tc.wantStatus {
				t.Errorf("status %q, want %q", got, tc.wantStatus)
			}
		})
	}
}

// TestOneOwnerOfRequests: of the commands' code (this package and
// pkg/plugin), one place sends a request to a run's process or drops it
// (Controls.ask and clear, controls.go): the run's answers are the
// engine's own.
func TestOneOwnerOfRequests(t *testing.T) {
	call := regexp.MustCompile(`\.(Send|Clear)\(ctx`)
	var found []string
	for _, dir := range []string{".", "../../pkg/plugin"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(src), "\n") {
				if call.MatchString(line) {
					found = append(found, fmt.Sprintf("%s:%d", f, i+1))
				}
			}
		}
	}
	if len(found) != 2 || !strings.HasPrefix(found[0], "controls.go:") || !strings.HasPrefix(found[1], "controls.go:") {
		t.Errorf("requests sent or cleared at %q; want only Controls.ask and Controls.clear (controls.go)", found)
	}
}
