package plugin

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// abortNode is a node of node group "ng", tainted by a run if tainted.
func abortNode(name string, tainted bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"eks.amazonaws.com/nodegroup": "ng"}}}
	if tainted {
		n.Spec.Unschedulable = true
		n.Spec.Taints = []corev1.Taint{{Key: "eks.amazonaws.com/nodegroup", Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

func runAbort(t *testing.T, client kubernetes.Interface, o AbortOptions) (string, string, int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o.IOStreams, o.client, o.StateNamespace, o.NodeGroup, o.pollInterval = streams, client, state.DefaultNamespace, "ng", 10*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := o.Validate()
	if err == nil {
		err = o.Run(ctx)
	}
	code := PrintError(errOut, err)
	return out.String(), errOut.String(), code
}

func TestAbortRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		phase plan.Phase
		alive bool
		here  bool // the holder is this process, on this machine
		want  string
	}{
		{name: "live run on this machine without --wait", phase: plan.PhaseDrain, alive: true, here: true, want: `the run on "ng" is alive (` + state.HolderIdentity() + `); stop it with "kubectl nodeupgrade cancel ng" first, or use abort --wait`},
		// Another machine's process may be gone (a laptop that died): the
		// lease's end tells, and --wait waits for it.
		{name: "run on another machine without --wait", phase: plan.PhaseDrain, alive: true, want: `the run on "ng" holds its lock from another machine (elsewhere/1), renewed Ns ago; if that run is gone (killed, its machine down), the lock runs out in Ns; abort --wait waits for that`},
		{name: "live run deleting blue", phase: plan.PhaseDeleteBlue, alive: true, want: "deleting blue, which cannot be stopped or undone"},
		{name: "killed run deleting blue", phase: plan.PhaseDeleteBlue, want: `deleting blue, which cannot be stopped or undone; run the same command again or "kubectl nodeupgrade resume ng" to go on`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := recordFor("ng")
			rec.Phase = string(tc.phase)
			var alive []string
			if tc.alive {
				alive = []string{"ng"}
			}
			client := statusFixture(t, []*state.Record{rec}, alive...)
			if tc.here {
				holdHere(t, client, "ng")
			}
			if _, err := client.CoreV1().Nodes().Create(context.Background(), abortNode("n5", true), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := runAbort(t, client, AbortOptions{})
			// The seconds depend on how busy the machine is.
			stderr = regexp.MustCompile(`\b\d+s\b`).ReplaceAllString(stderr, "Ns")
			if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want exit %d with %q\nstdout: %s", code, stderr, ExitUsage, tc.want, out)
			}
			n, _ := client.CoreV1().Nodes().Get(context.Background(), "n5", metav1.GetOptions{})
			if !n.Spec.Unschedulable || len(n.Spec.Taints) != 1 {
				t.Errorf("a refused abort changed node n5: %+v", n.Spec)
			}
		})
	}
}

// TestAbortWaitOnALiveLocalRun: abort --wait on a run of this machine
// waits for it to stop without a word of a run gone on another machine.
func TestAbortWaitOnALiveLocalRun(t *testing.T) {
	rec := recordFor("ng")
	client := statusFixture(t, []*state.Record{rec}, "ng")
	holdHere(t, client, "ng")
	go func() {
		// the run stops at its safe point: its lock goes
		time.Sleep(300 * time.Millisecond)
		_ = client.CoordinationV1().Leases(state.DefaultNamespace).Delete(context.Background(), state.ObjectName("ng"), metav1.DeleteOptions{})
	}()
	out, stderr, _ := runAbort(t, client, AbortOptions{Wait: true, Yes: true})
	if !strings.Contains(out, "waiting for it to stop") || strings.Contains(out+stderr, "another machine") {
		t.Errorf("stdout %q, stderr %q: want the wait told, and no word of another machine", out, stderr)
	}
}

// holdHere makes this process the holder of group's lock.
func holdHere(t *testing.T, client kubernetes.Interface, group string) {
	t.Helper()
	leases := client.CoordinationV1().Leases(state.DefaultNamespace)
	lease, err := leases.Get(context.Background(), state.ObjectName(group), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	me := state.HolderIdentity()
	lease.Spec.HolderIdentity = &me
	if _, err := leases.Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAbortConfirms: abort takes --yes as run does, and on a terminal
// without it asks first; no answer changes nothing.
func TestAbortConfirms(t *testing.T) {
	for _, tc := range []struct {
		name     string
		yes      bool
		terminal bool
		answer   string
		want     int
	}{
		{name: "--yes", yes: true, terminal: true, want: ExitOK},
		{name: "terminal, yes", terminal: true, answer: "y\n", want: ExitOK},
		{name: "terminal, no", terminal: true, answer: "n\n", want: ExitUsage},
		{name: "no terminal: no question", want: ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := statusFixture(t, nil)
			if _, err := client.CoreV1().Nodes().Create(context.Background(), abortNode("n5", true), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			o := AbortOptions{Yes: tc.yes, isTerminal: func() bool { return tc.terminal }}
			streams, in, out, errOut := genericiooptions.NewTestIOStreams()
			in.WriteString(tc.answer)
			o.IOStreams, o.client, o.StateNamespace, o.NodeGroup = streams, client, state.DefaultNamespace, "ng"
			err := o.Validate()
			if err == nil {
				err = o.Run(context.Background())
			}
			code := PrintError(errOut, err)
			asked := strings.Contains(errOut.String(), "Abort the run on \"ng\"")
			if code != tc.want || asked != (tc.terminal && !tc.yes) {
				t.Errorf("exit %d, asked %v; want %d, asked %v\nstdout: %s\nstderr: %s", code, asked, tc.want, tc.terminal && !tc.yes, out, errOut)
			}
			n, _ := client.CoreV1().Nodes().Get(context.Background(), "n5", metav1.GetOptions{})
			if back := !n.Spec.Unschedulable && len(n.Spec.Taints) == 0; back != (tc.want == ExitOK) {
				t.Errorf("node n5 back in service: %v, want %v", back, tc.want == ExitOK)
			}
		})
	}
	t.Run("the flag parses", func(t *testing.T) {
		cmd := NewCmdAbort(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
		if err := cmd.ParseFlags([]string{"--yes", "-y"}); err != nil {
			t.Error(err)
		}
	})
}

// No record (a first run killed before it wrote one): the nodes with the
// run's taint are put back; nothing is recorded.
func TestAbortWithNoRecordUntaintsTheGroup(t *testing.T) {
	client := statusFixture(t, nil)
	for _, n := range []*corev1.Node{abortNode("a", true), abortNode("b", true), abortNode("c", false)} {
		if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code := runAbort(t, client, AbortOptions{})
	if code != ExitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	for _, want := range []string{`untainted and uncordoned 2 nodes: "a", "b"`, `node group "ng" is back in service; no run was recorded, so no size was changed`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable || len(n.Spec.Taints) > 0 {
			t.Errorf("node %q left %+v", n.Name, n.Spec)
		}
	}
	if rec, err := (&state.Store{Client: client, Namespace: state.DefaultNamespace}).Load(context.Background(), "ng"); err != nil || rec != nil {
		t.Errorf("record %+v %v: abort with nothing recorded must not make one", rec, err)
	}
}

// A run whose process is gone, stopped in its batches: abort puts the
// group back and marks the record aborted, which status shows.
func TestAbortMarksTheRecordAborted(t *testing.T) {
	rec := recordFor("ng")
	rec.Phase, rec.InFlight, rec.Done = string(plan.PhaseCordon), []string{"a"}, nil
	rec.Request = &plan.Request{NodeGroup: "ng", Strategy: "eks", MaxUnavailable: "1", Provider: "none",
		TargetLabels: []string{"image=new"}, DrainTimeout: time.Minute, NodeReadyTimeout: time.Minute, MaxAge: time.Hour}
	client := statusFixture(t, []*state.Record{rec})
	requests := &state.Requests{Store: &state.Store{Client: client, Namespace: state.DefaultNamespace}, Group: "ng"}
	if err := requests.Send(context.Background(), state.RequestCancel); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*corev1.Node{abortNode("a", true), abortNode("b", true)} {
		n.Labels["image"] = "old"
		if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code := runAbort(t, client, AbortOptions{})
	if code != ExitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if !strings.Contains(out, `node group "ng" is back in service; its run is marked aborted (aborted in phase Cordon)`) {
		t.Errorf("output:\n%s", out)
	}
	got, err := (&state.Store{Client: client, Namespace: state.DefaultNamespace}).Load(context.Background(), "ng")
	if err != nil || got.AbortedAt == nil || got.FinishedAt == nil || len(got.InFlight) != 0 {
		t.Fatalf("record %+v %v: want aborted and finished", got, err)
	}
	if s := describeRun(got, false, "", time.Now()); s.Status != StatusAborted {
		t.Errorf("status %q, want %q", s.Status, StatusAborted)
	}
	if req, _ := requests.Pending(context.Background()); req != "" {
		t.Errorf("request %q left pending", req)
	}
	nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == "eks.amazonaws.com/nodegroup" }) {
			t.Errorf("node %q left %+v", n.Name, n.Spec)
		}
	}
}

// A run stopped at its --not-after is put back in service by abort: the
// windows hold runs, never abort.
func TestAbortAfterNotAfter(t *testing.T) {
	rec := recordFor("ng")
	rec.Phase, rec.Done = string(plan.PhaseRecover), nil
	rec.Note = "stopped before batch 2/2: no maintenance window opens before --not-after 2020-01-01T00:00:00Z"
	rec.Request = &plan.Request{NodeGroup: "ng", Strategy: "eks", MaxUnavailable: "1", Provider: "none",
		TargetLabels: []string{"image=new"}, DrainTimeout: time.Minute, NodeReadyTimeout: time.Minute, MaxAge: time.Hour,
		Windows: []string{"Sat 22:00-06:00 Europe/Berlin"}, NotAfter: "2020-01-01"}
	client := statusFixture(t, []*state.Record{rec})
	n := abortNode("a", true)
	n.Labels["image"] = "old"
	if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runAbort(t, client, AbortOptions{})
	if code != ExitOK || !strings.Contains(out, "back in service") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
}
