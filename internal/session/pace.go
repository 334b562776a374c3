package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
)

// podSampleNodes is how many of the group's nodes' pods the pace reads
// when no run on the group measured a drain.
const podSampleNodes = 3

// pace is what the plan's estimates take of the group's own pace, for
// plan and run alike: the last run on the group (its report history)
// first, then the pods on a few of the group's nodes (plan.Build adds
// the nodes' own join times). Nothing measured is nil; a history or pods
// the command cannot read leave the defaults, as they are only estimates.
func (s Reports) pace(ctx context.Context, r *Request, nodes []corev1.Node) *plan.Pace {
	var pc plan.Pace
	if h, err := s.store().LoadReports(ctx, r.RecordName()); err == nil {
		pc = historyPace(h.Pace())
	}
	if pc.Drain == 0 {
		pc = pc.Or(s.podPace(ctx, nodes))
	}
	if pc == (plan.Pace{}) {
		return nil
	}
	return &pc
}

// historyPace is the last run's pace in the plan's words, each figure
// up to the second, as the plan's other measures are.
func historyPace(h report.Pace) plan.Pace {
	var pc plan.Pace
	if h.Join > 0 {
		pc.Join, pc.JoinFrom = upToSecond(h.Join), "the last run on this group"
	}
	if h.Drain > 0 {
		pc.Drain, pc.DrainFrom = upToSecond(h.Drain), fmt.Sprintf("the last run on this group, %s", plan.Count(h.DrainBatches, "batch"))
	}
	if h.Settings > 0 {
		pc.Settings, pc.SettingsFrom = upToSecond(h.Settings), "the last run on this group"
	}
	return pc
}

func upToSecond(d time.Duration) plan.Duration {
	return plan.Duration((d + time.Second - 1).Truncate(time.Second))
}

// podPace measures the start of the evictable pods on the first few of
// nodes by name.
func (s Reports) podPace(ctx context.Context, nodes []corev1.Node) plan.Pace {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	var pods []corev1.Pod
	for _, name := range names[:min(len(names), podSampleNodes)] {
		list, err := s.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
		if err != nil {
			return plan.Pace{}
		}
		for _, p := range list.Items {
			if p.Spec.NodeName == name && plan.Evictable(&p) {
				pods = append(pods, p)
			}
		}
	}
	return plan.PodStartPace(pods)
}
