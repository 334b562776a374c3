package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// fakeRunner answers each target with its scripted outcome (Done when
// none) and keeps the order they started in and the most at once.
type fakeRunner struct {
	mu       sync.Mutex
	outcomes map[string]Outcome
	started  []string
	running  int
	most     int
	release  chan struct{} // when set, every run (or only hold's) waits on it
	hold     string
}

func (f *fakeRunner) Run(_ context.Context, t Target) Result {
	f.mu.Lock()
	f.started = append(f.started, t.ID())
	f.running++
	f.most = max(f.most, f.running)
	f.mu.Unlock()
	if f.release != nil && (f.hold == "" || f.hold == t.ID()) {
		<-f.release
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running--
	o := f.outcomes[t.ID()]
	if o == "" {
		o = Done
	}
	if o == Failed || o == Paused {
		return Result{Outcome: o, Err: fmt.Errorf("%s of %s", o, t.ID())}
	}
	return Result{Outcome: o}
}

func stage(name string, n, conc, maxFail int) ResolvedStage {
	st := ResolvedStage{Name: name, MaxConcurrency: conc, MaxFailures: maxFail}
	for i := range n {
		st.Targets = append(st.Targets, Target{Stage: name, Context: fmt.Sprintf("%s-%d", name, i), NodeGroup: "ng"})
	}
	st.Hash = hashOf(st)
	return st
}

func scheduler(r Runner, stages ...ResolvedStage) *Scheduler {
	fl := &Fleet{Name: "f", Stages: stages}
	fl.Hash = hashOf(fl.Stages)
	return &Scheduler{
		Fleet: fl, Runner: r, Out: io.Discard,
		Store: &Store{Client: fake.NewClientset(), Namespace: "kube-system", Name: "f"},
		Now:   time.Now, Poll: time.Millisecond,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Gates: func(context.Context, []string, time.Time, time.Time) ([]gate.Verdict, error) { return nil, nil },
	}
}

func TestStagesRunInOrderWithinConcurrency(t *testing.T) {
	r := &fakeRunner{release: make(chan struct{})}
	go func() {
		for range 7 {
			r.release <- struct{}{}
		}
	}()
	s := scheduler(r, stage("canary", 1, 1, 0), stage("prod", 6, 2, 0))
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.started) != 7 || r.started[0] != "canary-0/ng" || r.most > 2 {
		t.Fatalf("started %v, at most %d at once; want canary first, 7 targets, at most 2 at once", r.started, r.most)
	}
	rec, _ := s.Store.Load(context.Background())
	if rec.Stage("prod").TargetsDone == nil {
		t.Error("prod's end not recorded")
	}
}

func TestFailureSemantics(t *testing.T) {
	tests := []struct {
		name        string
		outcomes    map[string]Outcome
		maxFailures int
		wantStarted int
		wantStopped bool
	}{
		{"a failure stops new targets", map[string]Outcome{"s-0/ng": Failed}, 0, 1, true},
		{"a pause stops whatever maxFailures", map[string]Outcome{"s-0/ng": Paused}, 5, 1, true},
		{"failures within maxFailures go on", map[string]Outcome{"s-0/ng": Failed}, 1, 4, false},
		{"past maxFailures stops", map[string]Outcome{"s-0/ng": Failed, "s-1/ng": Failed}, 1, 2, true},
		{"skipped targets are no failure", map[string]Outcome{"s-0/ng": Skipped}, 0, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &fakeRunner{outcomes: tt.outcomes}
			s := scheduler(r, stage("s", 4, 1, tt.maxFailures), stage("next", 1, 1, 0))
			err := s.Run(context.Background())
			var se *StageError
			if len(r.started) != tt.wantStarted+boolInt(!tt.wantStopped) {
				t.Errorf("started %v", r.started)
			}
			if errors.As(err, &se) != (len(tt.outcomes) > 0 && tt.outcomes["s-0/ng"] != Skipped) || (se != nil && se.Stopped != tt.wantStopped) {
				t.Fatalf("err %v", err)
			}
			if tt.wantStopped && slices.Contains(r.started, "next-0/ng") {
				t.Error("the next stage started after the fleet stopped")
			}
		})
	}
}

// syncBuffer closes seen once said is written.
type syncBuffer struct {
	mu   sync.Mutex
	b    strings.Builder
	said string
	seen chan struct{}
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.b.String(), w.said)
	w.b.Write(p)
	if !had && strings.Contains(w.b.String(), w.said) {
		close(w.seen)
	}
	return len(p), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestInFlightTargetsRunToTheirEnd(t *testing.T) {
	// s-0 runs until released; s-1, started beside it, fails meanwhile
	r := &fakeRunner{outcomes: map[string]Outcome{"s-1/ng": Failed}, release: make(chan struct{}), hold: "s-0/ng"}
	s := scheduler(r, stage("s", 4, 2, 0))
	out := &syncBuffer{said: "s-1/ng failed", seen: make(chan struct{})}
	s.Out = out
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	<-out.seen // the failure is counted before it is said
	r.release <- struct{}{}
	err := <-done
	var se *StageError
	if !errors.As(err, &se) || se.NotStarted != 2 || len(r.started) != 2 {
		t.Fatalf("err %v, started %v", err, r.started)
	}
	if !strings.Contains(err.Error(), `"s-1/ng" failed`) || !strings.Contains(err.Error(), "2 targets not started") {
		t.Errorf("message %q", err)
	}
}

func TestGateFailureStopsAndRerunEvaluatesAgain(t *testing.T) {
	first, second := stage("canary", 1, 1, 0), stage("prod", 1, 1, 0)
	first.Gates, first.Soak = []string{"exec:check"}, time.Minute
	first.Hash = hashOf(first)
	r := &fakeRunner{}
	s := scheduler(r, first, second)
	fail := gate.Verdict{Gate: "exec:check", Kind: gate.Exec, What: "check", Value: "exit status 1", Reason: gate.ReasonExit}
	s.Gates = func(context.Context, []string, time.Time, time.Time) ([]gate.Verdict, error) {
		return []gate.Verdict{fail}, nil
	}
	err := s.Run(context.Background())
	var ge *GateError
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), `gate "exec:check" failed`) || slices.Contains(r.started, "prod-0/ng") {
		t.Fatalf("err %v, started %v", err, r.started)
	}
	fail.Pass = true
	if err := s.Run(context.Background()); err != nil || !slices.Contains(r.started, "prod-0/ng") {
		t.Fatalf("re-run: err %v, started %v", err, r.started)
	}
}

func TestApprovalHoldsTheNextStage(t *testing.T) {
	first := stage("canary", 1, 1, 0)
	first.Approval = true
	first.Hash = hashOf(first)
	r := &fakeRunner{}
	s := scheduler(r, first, stage("prod", 1, 1, 0))
	polls := 0
	s.Sleep = func(ctx context.Context, _ time.Duration) error {
		polls++
		if polls == 3 {
			return Approve(ctx, s.Store, "canary", "alice", time.Now())
		}
		if slices.Contains(r.started, "prod-0/ng") {
			t.Error("prod started before the approval")
		}
		return nil
	}
	if err := s.Run(context.Background()); err != nil || !slices.Contains(r.started, "prod-0/ng") || polls != 3 {
		t.Fatalf("err %v, started %v, polls %d", err, r.started, polls)
	}
}

func TestChangedPlanRefused(t *testing.T) {
	s := scheduler(&fakeRunner{}, stage("canary", 1, 1, 0), stage("prod", 2, 1, 0))
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	changed := scheduler(&fakeRunner{}, stage("canary", 1, 1, 0), stage("prod", 3, 1, 0))
	changed.Store = s.Store
	var ce *ChangedError
	if err := changed.Run(context.Background()); !errors.As(err, &ce) || !strings.Contains(err.Error(), `stage "prod"`) {
		t.Fatalf("got %v, want the changed stage named", err)
	}
}

func TestStageQuotas(t *testing.T) {
	st := stage("prod", 3, 2, 0)
	q := func(needed, free int64) *plan.Plan {
		return &plan.Plan{Capacity: &plan.CapacityPlan{Quotas: []plan.QuotaUse{{Scope: "aws/1/us-east-1/L-1216C47A", Name: "Running On-Demand Standard instances", Unit: "vCPU", Needed: needed, Free: free}}}}
	}
	tests := []struct {
		name  string
		plans map[string]*plan.Plan
		want  string
	}{
		{"two at once fit", map[string]*plan.Plan{"prod-0/ng": q(8, 20), "prod-1/ng": q(8, 20), "prod-2/ng": q(8, 20)}, ""},
		{"the two largest do not fit", map[string]*plan.Plan{"prod-0/ng": q(8, 20), "prod-1/ng": q(16, 20), "prod-2/ng": q(2, 20)}, "needs 24 vCPU with its targets running at once, 20 free"},
		{"the least free counts", map[string]*plan.Plan{"prod-0/ng": q(8, 20), "prod-1/ng": q(8, 12)}, "needs 16 vCPU"},
		{"no capacity counts nothing", map[string]*plan.Plan{"prod-0/ng": {}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := StageQuotas(st, tt.plans)
			got := ""
			if len(bs) > 0 {
				got = bs[0].String()
			}
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRows(t *testing.T) {
	fl := &Fleet{Stages: []ResolvedStage{stage("a", 1, 1, 0), stage("b", 2, 1, 0)}}
	rows := Rows(context.Background(), fl, func(_ context.Context, tg Target) (Row, bool, error) {
		switch tg.Context {
		case "a-0":
			return Row{Status: "finished", Done: 3}, true, nil
		case "b-0":
			return Row{}, false, errors.New("connection refused")
		}
		return Row{}, false, nil
	})
	want := []Row{
		{Stage: "a", Cluster: "a-0", Group: "ng", Status: "finished", Done: 3},
		{Stage: "b", Cluster: "b-0", Group: "ng", Status: StatusUnknown, Error: "connection refused"},
		{Stage: "b", Cluster: "b-1", Group: "ng", Status: StatusNotStarted},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows %+v", rows)
	}
}

// TestSkippedTargets: a target already at its target is recorded skipped
// in its stage's record, said so in the summary, and shown "skipped" by
// the rows where its own record has nothing newer; run again and done, it
// is skipped no more.
func TestSkippedTargets(t *testing.T) {
	r := &fakeRunner{outcomes: map[string]Outcome{"s-0/ng": Skipped}}
	s := scheduler(r, stage("s", 2, 1, 0))
	var out strings.Builder
	s.Out = &out
	ctx := context.Background()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	rec, _ := s.Store.Load(ctx)
	if got := rec.Stage("s").Skipped; !slices.Equal(got, []string{"s-0/ng"}) {
		t.Errorf("recorded skipped %v, want [s-0/ng]", got)
	}
	if !strings.Contains(out.String(), `fleet "f" finished: 1 done, 1 skipped`) {
		t.Errorf("summary:\n%s", out.String())
	}
	rows := []Row{
		{Stage: "s", Cluster: "s-0", Group: "ng", Status: StatusNotStarted},
		{Stage: "s", Cluster: "s-0", Group: "ng", Status: "finished"},
		{Stage: "s", Cluster: "s-0", Group: "ng", Status: "running", Alive: true},
		{Stage: "s", Cluster: "s-0", Group: "ng", Status: "failed"},
		{Stage: "s", Cluster: "s-1", Group: "ng", Status: "finished"},
	}
	rec.MarkSkipped(rows)
	for i, want := range []string{StatusSkipped, StatusSkipped, "running", "failed", "finished"} {
		if rows[i].Status != want {
			t.Errorf("row %d (%s/%s was %+v): %q, want %q", i, rows[i].Cluster, rows[i].Group, rows[i], rows[i].Status, want)
		}
	}
	r.outcomes = nil
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, _ = s.Store.Load(ctx); len(rec.Stage("s").Skipped) != 0 {
		t.Errorf("run again and done, still recorded skipped: %v", rec.Stage("s").Skipped)
	}
}
