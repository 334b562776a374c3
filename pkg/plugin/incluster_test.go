package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestInClusterJobFailsOnTheFinalExitCodes holds the Job's failure policy
// to the plugin's exit codes: those a new pod would only repeat end the
// Job; the others start a new pod, which resumes.
func TestInClusterJobFailsOnTheFinalExitCodes(t *testing.T) {
	pl := &session.Planned{Plan: &plan.Plan{NodeGroup: "demo", NodeGroupLabel: "pool", Taint: "pool=unschedulable:NoSchedule"}, Request: &session.Request{}}
	pl.Request.NodeGroup = "demo"
	job, err := session.BuildJob(pl, pl.Request, session.InCluster{Image: "img", ServiceAccount: "sa"}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	final := job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values
	tests := []struct {
		code  int
		final bool
	}{
		{ExitUsage, true}, {ExitPodEvictionError, true}, {ExitBlockers, true}, {ExitLocked, true},
		{ExitNodeCreation, true}, {ExitPaused, true}, {ExitHookFailed, true},
		{ExitFailure, false}, {ExitUnreachable, false}, {ExitCloudUnreachable, false}, {137, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			if got := slices.Contains(final, int32(tt.code)); got != tt.final {
				t.Errorf("exit %d ends the Job: %v, want %v", tt.code, got, tt.final)
			}
		})
	}
}

func TestInClusterFlagsRefusedWhereTheyDoNotApply(t *testing.T) {
	tests := []struct {
		name  string
		ic    inClusterOptions
		given []string
		hooks bool
		want  string
	}{
		{"--image-ref alone", inClusterOptions{ImageRef: "x"}, []string{"image-ref"}, false, "--image-ref is only used with --in-cluster"},
		{"--service-account alone", inClusterOptions{}, []string{"service-account"}, false, "--service-account is only used with --in-cluster"},
		{"--job-node-selector alone", inClusterOptions{NodeSelector: map[string]string{"pool": "system"}}, []string{"job-node-selector"}, false, "--job-node-selector is only used with --in-cluster"},
		{"command hooks", inClusterOptions{InCluster: true, ImageRef: "x"}, []string{"in-cluster"}, true, "cannot run command hooks"},
		{"by the Job's pod", inClusterOptions{InCluster: true, Job: "j", ImageRef: "x"}, []string{"in-cluster"}, false, "own pod"},
		{"accepted", inClusterOptions{InCluster: true, ImageRef: "x"}, []string{"in-cluster", "image-ref"}, false, ""},
		{"a rollback's flag typed", inClusterOptions{}, []string{session.RollbackFlag}, false, "only used by an in-cluster rollback's own pod"},
		{"a rollback's flag in its pod", inClusterOptions{Job: "j"}, []string{session.RollbackFlag, session.JobFlag}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			given := map[string]bool{}
			for _, g := range tt.given {
				given[g] = true
			}
			err := tt.ic.validate(given, tt.hooks)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || ExitCode(err) != ExitUsage):
				t.Fatalf("error %v (exit %d), want exit %d saying %q", err, ExitCode(err), ExitUsage, tt.want)
			}
		})
	}
}

func TestStatusSaysWhereAnInClusterRunRuns(t *testing.T) {
	tests := []struct {
		holder string
		alive  bool
		want   string
	}{
		{"nodeupgrade-demo-x7k2p/1", true, "runs in the cluster: Job kube-system/nodeupgrade-demo, pod nodeupgrade-demo-x7k2p"},
		{"nodeupgrade-demo-x7k2p/1", false, ""},
		{"laptop/42", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.holder, func(t *testing.T) {
			s := RunStatus{Record: &state.Record{NodeGroup: "demo", Holder: tt.holder}, Alive: tt.alive}
			if got := inClusterWhere(s, "kube-system"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFollowerOfAJobGone: a followed Job deleted (abort supersedes the Job
// of the run it stopped) ends the following with the run as its record
// has it, not an error of the Job's.
func TestFollowerOfAJobGone(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	now := time.Now().UTC().Truncate(time.Second)
	if err := (&state.Store{Client: c, Namespace: "kube-system"}).Save(ctx, &state.Record{NodeGroup: "demo", Phase: "Done", StartedAt: now, FinishedAt: &now}); err != nil {
		t.Fatal(err)
	}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	sess := &session.Session{Client: c, StateNamespace: "kube-system", IOStreams: streams}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: session.JobName("demo"), Namespace: "kube-system", UID: "gone"}}
	ic := &inClusterOptions{}
	if err := ic.follow(ctx, sess, streams, c, job, "demo", now); err != nil {
		t.Fatalf("follow: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "is gone") || !strings.Contains(out.String(), "demo: finished") {
		t.Errorf("output does not say the Job is gone, then how the run ended:\n%s", out)
	}
}
