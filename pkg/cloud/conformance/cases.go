package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// testCase is one case of the suite; skip says why it does not apply.
type testCase struct {
	name string
	skip string
	run  func(t *testing.T)
}

// cases are the suite's cases for what the provider declares: each served
// strategy run, killed and run again, aborted; the service's controls;
// faults; and the refusal of each strategy it does not serve.
func (s *suite) cases() []testCase {
	var out []testCase
	for _, st := range strategies {
		if !s.can.Has(st.need) && s.serviceRuns(st) {
			out = append(out, testCase{name: "run " + st.title() + " by the service", run: func(t *testing.T) { s.runs(t, st) }})
			continue
		}
		if !s.can.Has(st.need) {
			why := fmt.Sprintf("%s does not declare %s", s, capabilityName[st.need])
			out = append(out, testCase{name: "run " + st.title(), skip: why},
				testCase{name: "refuses " + st.title(), run: func(t *testing.T) { s.refuses(t, st) }})
			continue
		}
		out = append(out,
			testCase{name: "run " + st.title(), run: func(t *testing.T) { s.runs(t, st) }},
			testCase{name: "kill and run again " + st.title(), run: func(t *testing.T) { s.killAndRerun(t, st) }},
			testCase{name: "abort " + st.title(), run: func(t *testing.T) { s.abort(t, st) }})
	}
	out = append(out, s.controlCase(), s.faultsCase())
	return out
}

// runs: the run ends with every node on the target and in service.
func (s *suite) runs(t *testing.T, st strategy) {
	client, env, _ := setUp(t, s.h, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustRun(t, ctx, newDriver(client, s.h, st))
	s.inService(t, client, env)
}

// interrupted starts a run of st with the kubelets held (no new machine
// joins), and kills it (its context cancelled) at its first node
// removal or its first change of the cloud, whichever comes first: the
// run ends mid-way, as a killed process does at the same point. It
// returns the run's driver, whose record the next command reads, and the
// kubelet stand-in, still held.
func (s *suite) interrupted(t *testing.T, st strategy) (kubernetes.Interface, Env, *Kubelet, *driver) {
	t.Helper()
	client, env, k := setUp(t, s.h, Options{})
	k.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client.PrependReactor("delete", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		cancel()
		return false, nil, nil
	})
	d := newDriver(client, s.h, st)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) { return len(env.Changes()) > 0, nil })
		cancel()
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the run finished before it was killed; calls %q", env.Changes())
		}
		t.Logf("the killed run ended: %v", err)
	case <-time.After(time.Minute):
		t.Fatalf("the killed run did not stop; calls %q", env.Changes())
	}
	return client, env, k, d
}

// killAndRerun: a run again, with the killed run's record, finishes it.
func (s *suite) killAndRerun(t *testing.T, st strategy) {
	client, env, k, d := s.interrupted(t, st)
	k.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustRun(t, ctx, d)
	s.inService(t, client, env)
}

// abort: abort of a killed run puts the group back in service; where the
// cloud's service runs the update, the provider may instead refuse while
// the update runs, with advice (cloud.UpdateAborter); the next run then
// finishes.
func (s *suite) abort(t *testing.T, st strategy) {
	client, env, k, d := s.interrupted(t, st)
	err := d.Abort(context.Background())
	k.Release()
	var refused *refusal
	switch {
	case err == nil:
		s.noRunMarks(t, client)
	case st.need == plan.CapManagedUpdate && errors.As(err, &refused) && refused.advice != "":
		t.Logf("abort refused while the service's update runs: %s", refused.advice)
	default:
		t.Fatalf("abort: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustRun(t, ctx, d)
	s.inService(t, client, env)
}

// noRunMarks checks no node is cordoned or carries a NoSchedule taint
// after an abort (a node whose machine the abort deleted may be so until
// it goes).
func (s *suite) noRunMarks(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	settled(t, client, func(nodes []corev1.Node) []string {
		var out []string
		for _, n := range nodes {
			if n.Spec.Unschedulable || len(n.Spec.Taints) > 0 {
				out = append(out, fmt.Sprintf("node %q after abort: cordoned %v, taints %v", n.Name, n.Spec.Unschedulable, n.Spec.Taints))
			}
		}
		return out
	})
}

// controlCase: where the service's update can be cancelled and resumed,
// cancel pauses the run and resume finishes it.
func (s *suite) controlCase() testCase {
	c := testCase{name: "cancel and resume the service's update"}
	switch {
	case !s.can.Has(plan.CapManagedUpdate):
		c.skip = fmt.Sprintf("%s does not declare %s", s, capabilityName[plan.CapManagedUpdate])
	case !slices.Contains(s.controls, "cancel") || !slices.Contains(s.controls, "resume"):
		c.skip = fmt.Sprintf("%s declares no cloud.UpdateCanceller and cloud.UpdateResumer (controls %q)", s, s.controls)
	default:
		c.run = s.cancelResume
	}
	return c
}

func (s *suite) cancelResume(t *testing.T) {
	client, env, k := setUp(t, s.h, Options{})
	k.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := newDriver(client, s.h, strategies[len(strategies)-1])
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	waitFor(t, time.Minute, "the run to start the service's update", func() string {
		if d.rec.updateID() == "" {
			return fmt.Sprintf("no update yet; calls %q", env.Changes())
		}
		return ""
	})
	p := openProvider(t, s.h, client, d.st)
	if err := d.Cancel(ctx, p); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	// A service may let the nodes under way finish (GKE): they join now.
	k.Release()
	if err := <-done; !errors.Is(err, errPaused) {
		t.Fatalf("run after cancel: want it paused (%v), got %v; calls %q", errPaused, err, env.Changes())
	}
	if err := d.Resume(ctx, p); err != nil {
		t.Fatalf("resume: %v", err)
	}
	s.inService(t, client, env)
}

// faultsRate is the share of the cloud's answers failed in the faults
// case (issue 54: "100% of runs finish under 5% injected 429/5xx/lost
// answers").
const faultsRate = 0.05

// faultsCase: a run finishes while the fake fails faultsRate of answers.
func (s *suite) faultsCase() testCase {
	c := testCase{name: "run under cloud faults"}
	st := s.served()
	if len(st) == 0 {
		c.skip = fmt.Sprintf("%s serves no strategy", s)
		return c
	}
	if s.h.NoFaults != "" {
		c.skip = fmt.Sprintf("%s is not held to it: %s", s, s.h.NoFaults)
		return c
	}
	c.run = func(t *testing.T) {
		// A run makes few calls: the served strategies run in turn, each
		// on a fake of its own with the faults seeded anew, until a run
		// met a fault; every run must finish.
		for i := range faultsAttempts {
			st := st[i%len(st)]
			client, env, _ := setUp(t, s.h, Options{Faults: faultsRate, Seed: faultsSeed + uint64(i)})
			if env.Faults == nil {
				t.Fatalf("the fake of %s injects no faults, and the harness says not why (Harness.NoFaults)", s)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			mustRun(t, ctx, newDriver(client, s.h, st))
			cancel()
			s.inService(t, client, env)
			if n := env.Faults(); n > 0 {
				t.Logf("the fake injected %d faults in the run of %s", n, st.title())
				return
			}
		}
		t.Errorf("the fakes injected no fault in %d runs: the case proved nothing", faultsAttempts)
	}
	return c
}

// faultsSeed is the first seed of the faults case, faultsAttempts how
// many runs it makes at most.
const (
	faultsSeed     = 54
	faultsAttempts = 6
)

// refuses: a strategy that needs what the provider does not declare is
// refused by the plan, naming the provider, and nothing changes.
func (s *suite) refuses(t *testing.T, st strategy) {
	if st.name == "" {
		t.Skipf("%s: the service's update has no strategy of its own to refuse", s)
	}
	client, env, _ := setUp(t, s.h, Options{})
	_, _, err := newDriver(client, s.h, st).Plan(context.Background())
	if err == nil || !strings.Contains(err.Error(), s.h.Provider) {
		t.Errorf("plan %s: %v, want a refusal naming %q", st.title(), err, s.h.Provider)
	}
	if ch := env.Changes(); len(ch) > 0 {
		t.Errorf("a refused plan changed the cloud: %q", ch)
	}
}

// waitFor waits up to timeout until check finds nothing wrong, and fails
// the test with what it found last.
func waitFor(t *testing.T, timeout time.Duration, what string, check func() string) {
	t.Helper()
	var found string
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		found = check()
		return found == "", nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s: %s", what, found)
	}
}
