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
	askedAt  []*state.ServiceAsk // the stored record's Asked when each call came
	resumeID string
}

func (f *serviceFake) call(name string) error {
	f.called = append(f.called, name)
	rec, _ := f.s.store().Load(context.Background(), "g")
	var asked *state.ServiceAsk
	if rec != nil && rec.Managed != nil {
		asked = rec.Managed.Asked
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
		wantCalled bool
		wantErr    bool
		wantUpdate string // the update the record follows after
	}{
		{name: "cancel", cmd: CmdCancel, phase: plan.PhaseUpdate, wantCalled: true, wantUpdate: "u1"},
		{name: "cancel the service refuses", cmd: CmdCancel, phase: plan.PhaseUpdate, fail: boom, wantCalled: true, wantErr: true, wantUpdate: "u1"},
		{name: "complete in the soak", cmd: CmdComplete, phase: plan.PhaseSoak, wantCalled: true, wantUpdate: "u1"},
		{name: "cancel of a finished run is refused", cmd: CmdCancel, phase: plan.PhaseDone, finished: true, wantErr: true, wantUpdate: "u1"},
		{name: "resume", cmd: CmdResume, phase: plan.PhaseUpdate, wantCalled: true, wantUpdate: "u2"},
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
			f := &serviceFake{s: s, fail: tc.fail, resumeID: "u2"}
			_, err := s.Controls().ServiceControl(ctx, look(t, s), tc.cmd, f, "u1")
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s: %v, want error %v", tc.cmd, err, tc.wantErr)
			}
			if (len(f.called) > 0) != tc.wantCalled {
				t.Fatalf("the service was called %q, want called %v", f.called, tc.wantCalled)
			}
			after := look(t, s).Record.Managed
			if after.UpdateID != tc.wantUpdate {
				t.Errorf("the record follows update %q, want %q", after.UpdateID, tc.wantUpdate)
			}
			if !tc.wantCalled {
				if after.Asked != nil {
					t.Errorf("a refused %s recorded %+v", tc.cmd, after.Asked)
				}
				return
			}
			if got := f.askedAt[0]; got == nil || got.Control != string(tc.cmd) || got.Update != "u1" || got.Answered {
				t.Errorf("when the service was called, the record said asked %+v; want %s of u1, not yet answered", got, tc.cmd)
			}
			if after.Asked == nil || after.Asked.Control != string(tc.cmd) || after.Asked.Answered != (tc.fail == nil) {
				t.Errorf("after: asked %+v, want %s answered %v", after.Asked, tc.cmd, tc.fail == nil)
			}
		})
	}
}
