package cloud

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport/retrytest"
)

// TestNoneRemoveNodeSentTwice: the removal of provider none, when the API
// server carried it out and its answer was lost, is done when sent again
// (transport.Retrying): a delete finds the node gone, a label is set once.
func TestNoneRemoveNodeSentTwice(t *testing.T) {
	tests := []struct {
		name       string
		deleteNode bool
		verb       string
		check      func(n *corev1.Node, err error) bool
	}{
		{"delete the Node", true, "delete", func(_ *corev1.Node, err error) bool { return err != nil }},
		{"label it done", false, "patch", func(n *corev1.Node, err error) bool {
			return err == nil && n.Labels[plan.StateLabel] == plan.StateDone
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old-1"}})
			resent := retrytest.SentTwice(client, tc.verb)
			if err := (&None{Client: client, DeleteNode: tc.deleteNode}).RemoveNode(context.Background(), "old-1"); err != nil {
				t.Fatalf("removal sent twice: %v", err)
			}
			if len(resent.Writes()) != 1 {
				t.Fatalf("writes sent twice: %v, want the removal", resent.Writes())
			}
			n, err := client.CoreV1().Nodes().Get(context.Background(), "old-1", metav1.GetOptions{})
			if !tc.check(n, err) {
				t.Errorf("node %v, %v after the removal", n, err)
			}
		})
	}
}

// TestNoneRemoveNode: provider none deletes the Node object, or labels it
// done and keeps its other labels; a node already gone is removed; the
// API server's refusal comes back.
func TestNoneRemoveNode(t *testing.T) {
	forbidden := apierrors.NewForbidden(corev1.Resource("nodes"), "old-1", errors.New("no rights"))
	for _, tc := range []struct {
		name       string
		deleteNode bool
		nodes      []runtime.Object
		refuse     string // the verb the API server refuses
		wantErr    bool
		check      func(n *corev1.Node, err error) bool
	}{
		{name: "delete the Node", deleteNode: true, nodes: []runtime.Object{oldNode()},
			check: func(_ *corev1.Node, err error) bool { return apierrors.IsNotFound(err) }},
		{name: "label it done", nodes: []runtime.Object{oldNode()},
			check: func(n *corev1.Node, err error) bool {
				return err == nil && n.Labels[plan.StateLabel] == plan.StateDone && n.Labels["pool"] == "a"
			}},
		{name: "a node deleted already", deleteNode: true},
		{name: "a node to label that is gone already"},
		{name: "a delete the API server refuses", deleteNode: true, nodes: []runtime.Object{oldNode()}, refuse: "delete", wantErr: true,
			check: func(n *corev1.Node, err error) bool { return err == nil }},
		{name: "a label the API server refuses", nodes: []runtime.Object{oldNode()}, refuse: "patch", wantErr: true,
			check: func(n *corev1.Node, err error) bool { return err == nil && n.Labels[plan.StateLabel] == "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.nodes...)
			if tc.refuse != "" {
				client.PrependReactor(tc.refuse, "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, forbidden
				})
			}
			err := (&None{Client: client, DeleteNode: tc.deleteNode}).RemoveNode(context.Background(), "old-1")
			if tc.wantErr != apierrors.IsForbidden(err) || !tc.wantErr && err != nil {
				t.Fatalf("RemoveNode: %v, want the refusal: %v", err, tc.wantErr)
			}
			if tc.check == nil {
				return
			}
			if n, err := client.CoreV1().Nodes().Get(context.Background(), "old-1", metav1.GetOptions{}); !tc.check(n, err) {
				t.Errorf("node %v, %v after the removal", n, err)
			}
		})
	}
}

func oldNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old-1", Labels: map[string]string{"pool": "a"}}}
}

// TestNoneDescribe: the plan says what removal means with provider none.
func TestNoneDescribe(t *testing.T) {
	for _, tc := range []struct {
		deleteNode bool
		want       string
	}{
		{true, "delete the Node object"},
		{false, "leave the node cordoned and labelled " + plan.StateLabel + "=" + plan.StateDone},
	} {
		t.Run(tc.want, func(t *testing.T) {
			n := &None{DeleteNode: tc.deleteNode}
			if n.Name() != NoneName || n.Describe() != tc.want {
				t.Errorf("%q: %q, want %q: %q", n.Name(), n.Describe(), NoneName, tc.want)
			}
		})
	}
}
