package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	plugin "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
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
			out = append(out, testCase{name: "run " + st.name + " by the service", run: func(t *testing.T) { s.runs(t, st) }})
			continue
		}
		if !s.can.Has(st.need) {
			why := fmt.Sprintf("%s does not declare %s", s, capabilityName[st.need])
			out = append(out, testCase{name: "run " + st.name, skip: why},
				testCase{name: "refuses " + st.name, run: func(t *testing.T) { s.refuses(t, st) }})
			continue
		}
		out = append(out,
			testCase{name: "run " + st.name, run: func(t *testing.T) { s.runs(t, st) }},
			testCase{name: "kill and run again " + st.name, run: func(t *testing.T) { s.killAndRerun(t, st) }},
			testCase{name: "abort " + st.name, run: func(t *testing.T) { s.abort(t, st) }})
	}
	out = append(out, s.controlCase(), s.faultsCase())
	return out
}

// runs: the run ends with every node on the target and in service.
func (s *suite) runs(t *testing.T, st strategy) {
	client, env, _ := setUp(t, s.h, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustRun(t, ctx, client, s.runArgs(st))
	s.inService(t, client, env)
}

// interrupted starts a run of st with the kubelets held (no new machine
// joins), and kills it (its context cancelled) at its first node
// removal, or once it changed the cloud and waits for machines: the run
// ends mid-way, as a killed process does at the same point. It returns
// the kubelet stand-in, still held.
func (s *suite) interrupted(t *testing.T, st strategy) (kubernetes.Interface, Env, *Kubelet) {
	t.Helper()
	client, env, k := setUp(t, s.h, Options{})
	k.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client.PrependReactor("delete", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		cancel()
		return false, nil, nil
	})
	done := make(chan int, 1)
	go func() {
		_, _, code := plugin.Drive(ctx, client, "run", s.runArgs(st)...)
		done <- code
	}()
	waitFor(t, func() bool { return len(env.Changes()) > 0 || ctx.Err() != nil }, "the run to change the cloud", env)
	// Let the run reach its wait for the machines it asked for.
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code == plugin.ExitOK {
			t.Fatalf("the run finished before it was killed; calls %q", env.Changes())
		}
	case <-time.After(time.Minute):
		t.Fatal("the killed run did not stop")
	}
	return client, env, k
}

// killAndRerun: the same command again finishes a killed run.
func (s *suite) killAndRerun(t *testing.T, st strategy) {
	client, env, k := s.interrupted(t, st)
	k.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustRun(t, ctx, client, s.runArgs(st))
	s.inService(t, client, env)
}

// abort: abort of a killed run puts the group back in service; where the
// cloud's service runs the update, it may instead refuse (exit 2) while
// the update runs, naming the command that acts on it; the next run then
// finishes.
func (s *suite) abort(t *testing.T, st strategy) {
	client, env, k := s.interrupted(t, st)
	stdout, stderr, code := plugin.Drive(context.Background(), client, "abort", s.h.NodeGroup, "--yes")
	k.Release()
	managed := st.need == plan.CapManagedUpdate
	switch {
	case code == plugin.ExitOK:
		s.noRunMarks(t, client)
	case managed && code == plugin.ExitUsage && strings.Contains(stdout+stderr, "kubectl nodeupgrade "):
		t.Logf("abort refused while the service's update runs: %s", strings.TrimSpace(stderr))
	default:
		t.Fatalf("abort: exit %d:\n%s%s", code, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mustRun(t, ctx, client, s.runArgs(st))
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
// cancel pauses the run (exit 8) and resume finishes it.
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
	st := strategies[len(strategies)-1]
	client, env, k := setUp(t, s.h, Options{})
	k.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		stdout, stderr, code := plugin.Drive(ctx, client, "run", s.runArgs(st)...)
		done <- fmt.Sprintf("%d\n%s%s", code, stdout, stderr)
	}()
	waitFor(t, func() bool { return len(env.Changes()) > 0 }, "the service's update to start", env)
	time.Sleep(300 * time.Millisecond)
	if stdout, stderr, code := plugin.Drive(ctx, client, "cancel", s.h.NodeGroup); code != plugin.ExitOK {
		t.Fatalf("cancel: exit %d: %s%s", code, stdout, stderr)
	}
	// A service may let the nodes under way finish (GKE): they join now.
	k.Release()
	if r := <-done; !strings.HasPrefix(r, fmt.Sprint(plugin.ExitPaused)+"\n") {
		t.Fatalf("run after cancel: want exit %d, got %s", plugin.ExitPaused, r)
	}
	if stdout, stderr, code := plugin.Drive(ctx, client, "resume", s.h.NodeGroup, "--yes"); code != plugin.ExitOK {
		t.Fatalf("resume: exit %d: %s%s", code, stdout, stderr)
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
		client, env, _ := setUp(t, s.h, Options{Faults: faultsRate})
		if env.Faults == nil {
			t.Fatalf("the fake of %s injects no faults, and the harness says not why (Harness.NoFaults)", s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		mustRun(t, ctx, client, s.runArgs(st[0]))
		s.inService(t, client, env)
		if env.Faults() == 0 {
			t.Errorf("the fake injected no fault in the run: the case proved nothing")
		}
	}
	return c
}

// refuses: a strategy that needs what the provider does not declare is
// refused by plan with exit 2, naming the provider, and nothing changes.
func (s *suite) refuses(t *testing.T, st strategy) {
	if st.args == nil {
		t.Skipf("%s: the service's update has no --strategy of its own to refuse", s)
	}
	client, env, _ := setUp(t, s.h, Options{})
	stdout, stderr, code := plugin.Drive(context.Background(), client, "plan", s.args(st)...)
	if code != plugin.ExitUsage || !strings.Contains(stderr, s.h.Provider) {
		t.Errorf("plan %s: exit %d, want %d naming %q:\n%s%s", st.name, code, plugin.ExitUsage, s.h.Provider, stdout, stderr)
	}
	if ch := env.Changes(); len(ch) > 0 {
		t.Errorf("a refused plan changed the cloud: %q", ch)
	}
}

// waitFor waits up to a minute for cond.
func waitFor(t *testing.T, cond func() bool, what string, env Env) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s; calls %q", what, env.Changes())
}
