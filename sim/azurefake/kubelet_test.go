package azurefake

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kubelet stands in for the kubelets of a fake clientset's nodes: it
// marks every node Ready once it exists, unless held (a machine that has
// not joined yet). The fake's tests keep their own, not the providers'
// conformance helper, so that no plugin code takes part in them.
type kubelet struct {
	client kubernetes.Interface
	mu     sync.Mutex
	held   bool
}

func startKubelet(t *testing.T, client kubernetes.Interface) *kubelet {
	t.Helper()
	k := &kubelet{client: client}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			k.tick(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return k
}

// Hold keeps new nodes NotReady until Release; it returns once no tick
// is calling the clientset.
func (k *kubelet) Hold()    { k.mu.Lock(); k.held = true; k.mu.Unlock() }
func (k *kubelet) Release() { k.mu.Lock(); k.held = false; k.mu.Unlock() }

func (k *kubelet) tick(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held {
		return
	}
	list, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range list.Items {
		n := &list.Items[i]
		if ready(n) {
			continue
		}
		now := metav1.Now()
		n.Status.Conditions = append(withoutReady(n.Status.Conditions), corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now})
		_, _ = k.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	}
}

func withoutReady(cs []corev1.NodeCondition) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	for _, c := range cs {
		if c.Type != corev1.NodeReady {
			out = append(out, c)
		}
	}
	return out
}
