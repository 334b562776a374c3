package upgrade

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport/retrytest"
)

// TestNodeWritesSentTwice: each of the run's writes to nodes, when the API
// server carried it out and its answer was lost, succeeds when sent again
// (transport.Retrying), and leaves the node as one write would: one taint,
// one label, the cordon as asked.
func TestNodeWritesSentTwice(t *testing.T) {
	t.Parallel()
	names := []string{"old-1", "old-2"}
	excluded := func(n *corev1.Node) {
		n.Labels[ExcludeLBLabel] = "true"
		n.Annotations = map[string]string{ExcludedByRunAnnotation: "true"}
	}
	tests := []struct {
		name  string
		marks []func(*corev1.Node) // the nodes' before the write
		verb  string
		write func(ctx context.Context, e *Engine) error
		want  func(n *corev1.Node) string // what is wrong with the node, or ""
	}{
		{"taint", nil, "update", func(ctx context.Context, e *Engine) error { return e.taintAll(ctx) },
			func(n *corev1.Node) string { return countTaints(n, 1) }},
		{"cordon", nil, "patch", func(ctx context.Context, e *Engine) error { return e.setUnschedulable(ctx, names, true) },
			func(n *corev1.Node) string { return problem(n.Spec.Unschedulable, "not cordoned") }},
		{"load-balancer exclusion", nil, "update", func(ctx context.Context, e *Engine) error { return e.excludeFromLoadBalancers(ctx, names) },
			func(n *corev1.Node) string {
				return problem(excludedByRun(n) && n.Labels[ExcludeLBLabel] == "true", "not excluded")
			}},
		{"annotation", nil, "patch", func(ctx context.Context, e *Engine) error {
			v := "true"
			return e.annotateNodes(ctx, names, "nodeupgrade.dev/test", &v)
		}, func(n *corev1.Node) string {
			return problem(n.Annotations["nodeupgrade.dev/test"] == "true", "not annotated")
		}},
		{"marks taken off", []func(*corev1.Node){tainted, cordoned, excluded}, "update", func(ctx context.Context, e *Engine) error {
			_, err := e.releaseMarks(ctx, names, func(*corev1.Node) bool { return true }, "NodeUpgradeReleased", "released")
			return err
		}, func(n *corev1.Node) string {
			return countTaints(n, 0) + problem(!n.Spec.Unschedulable && !excludedByRun(n) && n.Labels[ExcludeLBLabel] == "", " still marked")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var objs []runtime.Object
			p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Batches: []plan.Batch{{}}}
			for _, name := range names {
				n := groupNode(name, "z1", "1")
				n.ResourceVersion = "1"
				for _, mark := range tc.marks {
					mark(n)
				}
				objs = append(objs, n)
				p.Batches[0].Nodes = append(p.Batches[0].Nodes, plan.PlannedNode{Name: name})
			}
			client := fake.NewClientset(objs...)
			strictNodes(client)
			e, err := New(Config{Client: client, Plan: p, Taint: testTaint, Out: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop, err := e.watchCluster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			resent := retrytest.SentTwice(client, tc.verb)
			if err := tc.write(ctx, e); err != nil {
				t.Fatalf("writes sent twice: %v", err)
			}
			for _, name := range names {
				if !slices.Contains(resent.Writes(), fmt.Sprintf("%s nodes/%s", tc.verb, name)) {
					t.Errorf("the %s of node %q was not sent twice: %v", tc.verb, name, resent.Writes())
				}
			}
			for name, n := range nodesIn(t, client) {
				if wrong := tc.want(&n); wrong != "" {
					t.Errorf("node %q: %s", name, wrong)
				}
			}
		})
	}
}

func countTaints(n *corev1.Node, want int) string {
	if got := len(n.Spec.Taints); got != want {
		return fmt.Sprintf("%d taints %v, want %d", got, n.Spec.Taints, want)
	}
	return ""
}

func problem(ok bool, otherwise string) string {
	if ok {
		return ""
	}
	return otherwise
}
