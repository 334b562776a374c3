package cloud

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestAwaitJoined(t *testing.T) {
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

// TestAwaitJoinedWatchEndedByServer: the API server ends a watch when its
// timeout passes; the wait lists again and sees the node that joined
// meanwhile.
func TestAwaitJoinedWatchEndedByServer(t *testing.T) {
	client := fake.NewClientset(node("a", "i-1"))
	lists := 0
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		return false, nil, nil
	})
	ended := false
	client.PrependWatchReactor("nodes", func(k8stesting.Action) (bool, watch.Interface, error) {
		if ended {
			return false, nil, nil
		}
		ended = true
		// i-2 joins while no watch is open: only the next list sees it.
		if err := client.Tracker().Add(node("b", "i-2")); err != nil {
			return true, nil, err
		}
		w := watch.NewFake()
		w.Stop()
		return true, w, nil
	})
	if err := AwaitJoined(context.Background(), client, []plan.Machine{{ID: "i-1"}, {ID: "i-2"}}, 10*time.Second); err != nil {
		t.Fatalf("a node that joined while the watch was ended: %v", err)
	}
	if lists != 2 {
		t.Errorf("listed %d times, want 2: once before the ended watch and once after", lists)
	}
}

// TestAwaitJoinedRefused: when the API server refuses the list or the
// watch, the wait ends at once with the server's error, not a claim that
// the machines did not join in time.
func TestAwaitJoinedRefused(t *testing.T) {
	forbidden := apierrors.NewForbidden(corev1.Resource("nodes"), "", errors.New("no rights"))
	for _, verb := range []string{"list", "watch"} {
		t.Run("the "+verb+" refused", func(t *testing.T) {
			client := fake.NewClientset(node("a", "i-1"))
			if verb == "watch" {
				client.PrependWatchReactor("nodes", func(k8stesting.Action) (bool, watch.Interface, error) {
					return true, nil, forbidden
				})
			} else {
				client.PrependReactor(verb, "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, forbidden
				})
			}
			err := AwaitJoined(context.Background(), client, []plan.Machine{{ID: "i-1"}, {ID: "i-2"}}, time.Hour)
			if err == nil || !strings.Contains(err.Error(), "no rights") {
				t.Fatalf("error %v, want the API server's refusal", err)
			}
		})
	}
}

func node(name, id string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id}}
}
