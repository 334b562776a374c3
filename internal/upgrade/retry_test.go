package upgrade

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
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
		{"taint", nil, "update", func(ctx context.Context, e *Engine) error { return (&eksRun{e.toolkit()}).taintAll(ctx) },
			func(n *corev1.Node) string { return countTaints(n, 1) }},
		{"cordon", nil, "patch", func(ctx context.Context, e *Engine) error { return e.nodes.setUnschedulable(ctx, names, true) },
			func(n *corev1.Node) string { return problem(n.Spec.Unschedulable, "not cordoned") }},
		{"load-balancer exclusion", nil, "update", func(ctx context.Context, e *Engine) error { return e.nodes.excludeFromLoadBalancers(ctx, names) },
			func(n *corev1.Node) string {
				return problem(excludedByRun(n) && n.Labels[ExcludeLBLabel] == "true", "not excluded")
			}},
		{"annotation", nil, "patch", func(ctx context.Context, e *Engine) error {
			v := "true"
			return e.nodes.annotateNodes(ctx, names, "nodeupgrade.dev/test", &v)
		}, func(n *corev1.Node) string {
			return problem(n.Annotations["nodeupgrade.dev/test"] == "true", "not annotated")
		}},
		{"marks taken off", []func(*corev1.Node){tainted, cordoned, excluded}, "update", func(ctx context.Context, e *Engine) error {
			_, err := e.nodes.releaseMarks(ctx, names, func(*corev1.Node) bool { return true }, "NodeUpgradeReleased", "released")
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

// TestStopBeforeAnyEvictionTakesTheMarksOff: the server carried the
// batch's load-balancer exclusion out and the connection was lost before
// its answer, the retries spent. No eviction was asked for: the run takes
// every taint, cordon, label and annotation it set off again, as the
// server has them (the exclusion it never saw answered included), and says
// what it was doing when it stopped.
func TestStopBeforeAnyEvictionTakesTheMarksOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		strategy plan.StrategyName
		released int // nodes marked when the run stopped
	}{
		{"eks: every outdated node tainted, then the batch's excluded", "eks", 3},
		{"surge, provider none: the batch's node cordoned, then excluded", "surge", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := []*corev1.Node{imageNode("old-a1", "z1", "old"), imageNode("old-a2", "z1", "old"), imageNode("old-b1", "z2", "old"), imageNode("new-b2", "z2", "new")}
			var objs []runtime.Object
			for _, n := range nodes {
				objs = append(objs, n, appPod("pod-"+n.Name, n.Name, "100m"))
			}
			client := newTestClient(objs...)
			p := buildPlan(t, client, plan.Input{Strategy: tc.strategy, MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			lost := retrytest.AnswerLost(client.Clientset, "update", func(a k8stesting.Action) bool {
				n, ok := a.(k8stesting.UpdateAction).GetObject().(*corev1.Node)
				return ok && n.Labels[ExcludeLBLabel] == "true"
			}, &url.Error{Op: "Put", URL: "https://api.example:6443/api/v1/nodes/old-a1", Err: &transport.RetriesExhausted{
				Verb: "PUT", Target: "nodes/old-a1", Reason: "connection to the API server lost", Attempts: 9, For: 3 * time.Minute, Timeout: 3 * time.Minute}})
			cfg := cloudRun(p, client, &cloud.None{Client: client, DeleteNode: true})
			cfg.Drain = drainOpts()
			got := runEngine(t, cfg, nil)
			if got.err == nil || !strings.Contains(got.err.Error(), "error when labelling node") {
				t.Fatalf("error %v, want the exclusion's", got.err)
			}
			if len(lost.Writes()) != 1 {
				t.Fatalf("no exclusion was carried out with its answer lost: %v", lost.Writes())
			}
			if ev := client.evictedPods(); len(ev) != 0 {
				t.Fatalf("evicted %v: the stop was meant before any eviction", ev)
			}
			for name, n := range client.nodes(t) {
				if slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == testTaint.Key }) || n.Spec.Unschedulable ||
					n.Labels[ExcludeLBLabel] != "" || excludedByRun(&n) {
					t.Errorf("node %q left marked: taints %v, unschedulable %v, labels %v, annotations %v", name, n.Spec.Taints, n.Spec.Unschedulable, n.Labels, n.Annotations)
				}
			}
			if want := fmt.Sprintf("%d outdated nodes are schedulable again", tc.released); !strings.Contains(got.out, want) {
				t.Errorf("output:\n%s", got.out)
			}
		})
	}
}
