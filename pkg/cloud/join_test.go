package cloud

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestAwaitJoined(t *testing.T) {
	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id}}
	}
	tests := []struct {
		name    string
		before  []*corev1.Node // there when the wait starts
		later   []*corev1.Node // created while it waits
		wantErr string
	}{
		{name: "already joined", before: []*corev1.Node{node("a", "i-1"), node("b", "i-2")}},
		{name: "joins while it waits", before: []*corev1.Node{node("a", "i-1")}, later: []*corev1.Node{node("b", "i-2")}},
		{name: "never joins", before: []*corev1.Node{node("a", "i-1")}, later: []*corev1.Node{node("c", "i-3")}, wantErr: "cannot plan: i-2 did not join as nodes within"},
		{name: "a provider ID that only ends like the ID does not count", before: []*corev1.Node{node("a", "i-1"), node("b", "xi-2")}, wantErr: "i-2 did not join"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			ctx := context.Background()
			for _, n := range tc.before {
				if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			go func() {
				time.Sleep(50 * time.Millisecond)
				for _, n := range tc.later {
					_, _ = client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
				}
			}()
			err := AwaitJoined(ctx, client, []plan.Machine{{ID: "i-1"}, {ID: "i-2"}}, time.Second)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
