package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// serviceFake is a service's update with every control; each call reads
// the stored record first, as the command's intent must be there by then.
type serviceFake struct {
	s        *Session
	fail     error
	called   []string
	askedAt  []*state.ControlAsk // the stored record's Asked when each call came
	resumeID string
}

func (f *serviceFake) call(name string) error {
	f.called = append(f.called, name)
	rec, _ := f.s.store().Load(context.Background(), "g")
	var asked *state.ControlAsk
	if rec != nil {
		asked = rec.Asked
	}
	f.askedAt = append(f.askedAt, asked)
	return f.fail
}

func (f *serviceFake) Name() string      { return "fake" }
func (f *serviceFake) Describe() string  { return "fake" }
func (f *serviceFake) GroupName() string { return "g" }
func (f *serviceFake) Settings(context.Context) (plan.UpdateSettings, error) {
	return plan.UpdateSettings{}, nil
}
func (f *serviceFake) Configure(context.Context, plan.UpdateSettings) error { return nil }
func (f *serviceFake) StartUpdate(context.Context, bool) (string, error)    { return "u1", nil }
func (f *serviceFake) Progress(context.Context, string) (cloud.UpdateProgress, error) {
	return cloud.UpdateProgress{}, nil
}
func (f *serviceFake) CancelUpdate(context.Context, string) error   { return f.call("cancel") }
func (f *serviceFake) CompleteUpdate(context.Context, string) error { return f.call("complete") }
func (f *serviceFake) ResumeUpdate(context.Context, string) (string, error) {
	return f.resumeID, f.call("resume")
}

// TestServiceControlRecordsIntentFirst: cancel, complete and resume of a
// service's update are session methods that check the lifecycle, record
// what was asked, then call the service: the service's call finds the
// intent stored; a call that fails leaves it there, unanswered; a refused
// one calls nothing and records nothing.
func TestServiceControlRecordsIntentFirst(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("the service refused")
	for _, tc := range []struct {
		name       string
		cmd        Command
		phase      plan.Phase
		fail       error
		finished   bool
		alive      bool // a live process follows the update
		wantCalled bool
		wantErr    bool
		wantUpdate string // the update the record follows after
	}{
		{name: "cancel", cmd: CmdCancel, phase: plan.PhaseUpdate, wantCalled: true, wantUpdate: "u1"},
		{name: "cancel the service refuses", cmd: CmdCancel, phase: plan.PhaseUpdate, fail: boom, wantCalled: true, wantErr: true, wantUpdate: "u1"},
		{name: "complete in the soak", cmd: CmdComplete, phase: plan.PhaseSoak, wantCalled: true, wantUpdate: "u1"},
		{name: "cancel of a finished run is refused", cmd: CmdCancel, phase: plan.PhaseDone, finished: true, wantErr: true, wantUpdate: "u1"},
		{name: "resume", cmd: CmdResume, phase: plan.PhaseUpdate, wantCalled: true, wantUpdate: "u2"},
		// The live run reads the service's answer itself; what was asked
		// is in its record all the same.
		{name: "cancel of a live run's update", cmd: CmdCancel, phase: plan.PhaseUpdate, alive: true, wantCalled: true, wantUpdate: "u1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{Client: fake.NewClientset(), StateNamespace: "kube-system"}
			rec := &state.Record{NodeGroup: "g", Strategy: string(plan.StrategyBlueGreen), State: state.StateInterrupted, LastError: InterruptedError,
				Phase: string(tc.phase), StartedAt: time.Now(), Managed: &state.ManagedRecord{Group: "g", UpdateID: "u1"}}
			if tc.finished {
				now := time.Now()
				rec.State, rec.FinishedAt, rec.LastError = state.StateFinished, &now, ""
			}
			if err := s.store().Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if tc.alive {
				lock := &state.Lock{Client: s.Client, Namespace: "kube-system", Group: "g", Holder: "elsewhere/1", Duration: time.Minute}
				if err := lock.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
			}
			f := &serviceFake{s: s, fail: tc.fail, resumeID: "u2"}
			_, err := s.Controls().ServiceControl(ctx, look(t, s), tc.cmd, f, "u1")
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s: %v, want error %v", tc.cmd, err, tc.wantErr)
			}
			if (len(f.called) > 0) != tc.wantCalled {
				t.Fatalf("the service was called %q, want called %v", f.called, tc.wantCalled)
			}
			stored := look(t, s).Record
			if stored.Managed.UpdateID != tc.wantUpdate {
				t.Errorf("the record follows update %q, want %q", stored.Managed.UpdateID, tc.wantUpdate)
			}
			if !tc.wantCalled {
				if stored.Asked != nil {
					t.Errorf("a refused %s recorded %+v", tc.cmd, stored.Asked)
				}
				return
			}
			if got := f.askedAt[0]; got == nil || got.Control != string(tc.cmd) || got.Update != "u1" || got.Answered || got.By == "" {
				t.Errorf("when the service was called, the record said asked %+v; want %s of u1 by this process, not yet answered", got, tc.cmd)
			}
			if stored.Asked == nil || stored.Asked.Control != string(tc.cmd) || stored.Asked.Answered != (tc.fail == nil) {
				t.Errorf("after: asked %+v, want %s answered %v", stored.Asked, tc.cmd, tc.fail == nil)
			}
		})
	}
}
