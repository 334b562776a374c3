package session

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
)

// paceCluster is group "g" of 4 nodes, Ready 3 s after their creation,
// and a Ready pod on each, Ready 2 s after its own.
func paceCluster(t0 time.Time) []runtime.Object {
	var objs []runtime.Object
	for i := range 4 {
		name := fmt.Sprintf("n%d", i)
		objs = append(objs, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0),
				Labels: map[string]string{"eks.amazonaws.com/nodegroup": "g", "img": "old", corev1.LabelHostname: name}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(3 * time.Second))}}},
		}, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "p" + name, CreationTimestamp: metav1.NewTime(t0),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: new(true)}}},
			Spec: corev1.PodSpec{NodeName: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(2 * time.Second))}}},
		})
	}
	return objs
}

// TestPlanAndRunEstimateAlike: plan and run, given the same flags, plan
// with the same pace and print the same estimate; the pace is the last
// run's on the group where it measured one, else the group's nodes' and
// pods'.
func TestPlanAndRunEstimateAlike(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	lastRun := report.History{Runs: []report.Run{{StartedAt: t0, Attempts: []report.Attempt{{StartedAt: t0,
		Phases: map[string]report.Duration{"ScaleUp": report.Duration(14 * time.Second)},
		Nodes:  []report.Node{{Name: "old", Batch: 1, DrainStart: new(t0), Drained: new(t0.Add(7 * time.Second))}}}}}}}
	tests := []struct {
		name    string
		history *report.History
		assumes string
	}{
		{"no run before", nil,
			"nodes Ready in 4s (from the creation to Ready of the group's 4 nodes), a drain in 3s (from the scheduling to Ready of 3 pods of the group), post-drain wait 5s"},
		{"the last run's", &lastRun,
			"nodes Ready in 14s (from the last run on this group), a drain in 7s (from the last run on this group, 1 batch), post-drain wait 5s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := &Session{Client: fake.NewClientset(paceCluster(t0)...), StateNamespace: "kube-system", IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}
			if tc.history != nil {
				if err := s.store().SaveReports(context.Background(), "g", *tc.history); err != nil {
					t.Fatal(err)
				}
			}
			flags := plan.Request{NodeGroup: "g", TargetLabels: []string{"img=new"}, MaxUnavailable: "1", Provider: "none", Seed: 1,
				PostDrainWait: 5 * time.Second, NodeReadyTimeout: time.Minute, DrainTimeout: time.Minute, TerminateTimeout: time.Minute,
				DeregistrationTimeout: time.Minute, MaxAge: time.Hour, DeleteNode: true}
			var estimates []string
			for _, cmd := range []string{"plan", "run"} {
				r := &Request{Request: flags}
				validate := r.Validate
				if cmd == "run" {
					validate = r.ValidateRun
					r.JoinTimeout = r.NodeReadyTimeout // as Execute sets it
				}
				if err := validate(); err != nil {
					t.Fatalf("%s: %v", cmd, err)
				}
				pl, err := s.Plan(context.Background(), r)
				if err != nil {
					t.Fatalf("%s: %v", cmd, err)
				}
				if got := pl.EstimateAssumptions(); got != tc.assumes {
					t.Errorf("%s assumes %q\nwant %q", cmd, got, tc.assumes)
				}
				estimates = append(estimates, plan.FormatDuration(pl.EstimatedDuration())+"; "+pl.EstimateAssumptions())
			}
			if estimates[0] != estimates[1] {
				t.Errorf("plan and run estimate apart:\n%s", strings.Join(estimates, "\n"))
			}
		})
	}
}

// TestHistoryPaceInWholeSeconds: the last run's figures, measured to the
// nanosecond, reach the plan up to the second, each saying where from.
func TestHistoryPaceInWholeSeconds(t *testing.T) {
	got := historyPace(report.Pace{Join: 14 * time.Second, Drain: 2100 * time.Millisecond, DrainBatches: 3, Settings: 1067 * time.Millisecond})
	want := plan.Pace{Join: plan.Duration(14 * time.Second), JoinFrom: "the last run on this group",
		Drain: plan.Duration(3 * time.Second), DrainFrom: "the last run on this group, 3 batches",
		Settings: plan.Duration(2 * time.Second), SettingsFrom: "the last run on this group"}
	if got != want {
		t.Errorf("pace %+v\nwant %+v", got, want)
	}
}
