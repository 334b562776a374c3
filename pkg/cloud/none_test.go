package cloud

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
