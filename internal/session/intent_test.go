package session

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// errKilled is the interruption each case simulates: the command's act
// fails right after its intent was saved.
var errKilled = errors.New("killed")

// failAfterAsk makes the first call of verb on resource after the intent
// was saved (the first write of a record that names it asked) fail.
func failAfterAsk(client *fake.Clientset, verb, resource string) {
	asked, failed := false, false
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if asked && !failed && a.GetVerb() == verb && a.GetResource().Resource == resource {
			failed = true
			return true, nil, errKilled
		}
		if u, ok := a.(k8stesting.UpdateAction); ok {
			if cm, ok := u.GetObject().(*corev1.ConfigMap); ok && strings.Contains(cm.Data["record.json"], `"asked":`) {
				asked = true
			}
		}
		return false, nil, nil
	})
}

// TestControlIntentRecordedFirst: every control records what was asked
// (which, by whom, when) in the run's record before it acts, a live
// run's too: killed right after, the record names the control asked and
// not answered, and nothing of the act was done. A live run's own next
// write, from its copy of the record, keeps it.
func TestControlIntentRecordedFirst(t *testing.T) {
	soakUntil := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	stopped := state.Record{Strategy: "eks", State: state.StateInterrupted, LastError: InterruptedError, Phase: "Drain",
		Request: &plan.Request{NodeGroup: "g", TargetLabels: []string{"img=new"}, MaxUnavailable: "1", Provider: "none", Strategy: "eks",
			PostDrainWait: time.Second, NodeReadyTimeout: time.Minute, DrainTimeout: time.Minute, TerminateTimeout: time.Minute,
			DeregistrationTimeout: time.Minute, MaxAge: time.Hour, DeleteNode: true, IgnoreChecks: []string{"no-room"}}}
	soaking := state.Record{Strategy: string(plan.StrategyBlueGreen), State: state.StateSoaking, Phase: string(plan.PhaseSoak),
		Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "g"}}}
	soaking.Cloud.SoakUntil = &soakUntil
	draining := soaking
	draining.State, draining.Phase, draining.Cloud = state.StateRunning, "Drain", nil
	ui := Prompt{Print: func(*plan.Plan) error { return nil }, Yes: true}
	cancel := func(ctx context.Context, s *Session, run *Run) error {
		_, err := s.Controls().Cancel(ctx, run)
		return err
	}
	complete := func(ctx context.Context, s *Session, run *Run) error {
		_, err := s.Controls().Complete(ctx, run)
		return err
	}
	for _, tc := range []struct {
		name    string
		rec     state.Record
		alive   bool
		control Command
		// the act that fails once the intent is saved
		verb, resource string
		act            func(ctx context.Context, s *Session, run *Run) error
	}{
		{name: "cancel of a live run, killed before the request reached it", rec: draining, alive: true, control: CmdCancel, verb: "patch", resource: "configmaps",
			act: cancel},
		{name: "cancel of a stopped run, killed before it was marked paused", rec: stopped, control: CmdCancel, verb: "patch", resource: "configmaps",
			act: cancel},
		{name: "complete of a live soak, killed before the request reached it", rec: soaking, alive: true, control: CmdComplete, verb: "patch", resource: "configmaps",
			act: complete},
		{name: "complete of a stopped soak, killed before the soak's end was saved", rec: soaking, control: CmdComplete, verb: "update", resource: "configmaps",
			act: complete},
		{name: "rollback of a live blue/green run, killed before the request reached it", rec: draining, alive: true, control: CmdRollback, verb: "patch", resource: "configmaps",
			act: func(ctx context.Context, s *Session, run *Run) error {
				_, err := s.Controls().Rollback(ctx, run, RollbackOptions{}, ui)
				return err
			}},
		{name: "resume, killed before it took the lock", rec: stopped, control: CmdResume, verb: "create", resource: "leases",
			act: func(ctx context.Context, s *Session, run *Run) error { return s.Controls().Resume(ctx, run, ui) }},
		{name: "rollback run of a stopped run, killed before it took the lock", rec: stopped, control: CmdRollback, verb: "create", resource: "leases",
			act: func(ctx context.Context, s *Session, run *Run) error {
				return s.Controls().rerunRecorded(ctx, run.Record, CmdRollback, ui)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset(paceCluster(time.Now().Add(-time.Hour))...)
			var out bytes.Buffer
			s := &Session{Client: client, StateNamespace: "kube-system", IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}
			rec := tc.rec
			rec.NodeGroup, rec.StartedAt = "g", time.Now().Add(-time.Minute)
			if err := s.store().Save(ctx, &rec); err != nil {
				t.Fatal(err)
			}
			if tc.alive {
				rec.Holder = "elsewhere/1"
				lock := &state.Lock{Client: client, Namespace: "kube-system", Group: "g", Holder: rec.Holder, Duration: time.Minute}
				if err := lock.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
			}
			failAfterAsk(client, tc.verb, tc.resource)
			if err := tc.act(ctx, s, look(t, s)); !errors.Is(err, errKilled) {
				t.Fatalf("%s: %v, want it killed after its intent was saved (out: %s)", tc.control, err, out.String())
			}
			after := look(t, s)
			if a := after.Record.Asked; a == nil || a.Control != string(tc.control) || a.By != state.HolderIdentity() || a.At.IsZero() || a.Answered {
				t.Errorf("the record says asked %+v; want %s by %s, not answered", a, tc.control, state.HolderIdentity())
			}
			if after.Request != "" || (after.Record.Cloud != nil && after.Record.Cloud.SoakUntil != nil && !after.Record.Cloud.SoakUntil.Equal(soakUntil)) {
				t.Errorf("the act was done: request %q, soak until %v", after.Request, after.Record.Cloud)
			}
		})
	}
}

// TestRunAnswersWhatWasAsked: the attempt that carries out a resume or a
// rollback asked (this command's, or its in-cluster Job's pod's; a
// finished run's rollback starts a new record) marks it answered as it
// starts under the lock; any other leaves what was asked as it was.
func TestRunAnswersWhatWasAsked(t *testing.T) {
	at := time.Now().UTC()
	for _, tc := range []struct {
		name         string
		asked        string
		rollback     bool // the attempt rolls back
		finished     bool
		wantAnswered bool
	}{
		{name: "resume carries out its resume", asked: "resume", wantAnswered: true},
		{name: "a finished run's rollback carries out its rollback in the new record", asked: "rollback", rollback: true, finished: true, wantAnswered: true},
		{name: "a run forward leaves a rollback asked", asked: "rollback"},
		{name: "a run leaves a cancel asked", asked: "cancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &state.Record{NodeGroup: "g", StartedAt: at.Add(-time.Hour), Phase: "Drain", Asked: &state.ControlAsk{Control: tc.asked, At: at}}
			if tc.finished {
				rec = nextRecord(rec, "g", at)
			}
			pl := &Planned{Plan: &plan.Plan{Strategy: "eks"}, Request: &Request{Request: plan.Request{NodeGroup: "g"}, Rollback: tc.rollback}}
			startAttempt(rec, pl, "me/1", nil)
			if a := rec.Asked; a == nil || a.Control != tc.asked || a.Answered != tc.wantAnswered {
				t.Errorf("asked %+v, want %s answered %v", a, tc.asked, tc.wantAnswered)
			}
		})
	}
}
