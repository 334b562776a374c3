package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Kubelet stands in for the kubelets (kwok, on the simulated cluster) of a
// fake clientset's nodes: it marks every node Ready once it exists, unless
// held. Holding it keeps new machines from joining, which keeps a run (or
// a cloud service's update) waiting where a kill, an abort or a cancel is
// to land.
type Kubelet struct {
	client kubernetes.Interface
	mu     sync.Mutex
	held   bool
}

// StartKubelet starts the stand-in until the test ends.
func StartKubelet(t *testing.T, client kubernetes.Interface) *Kubelet {
	t.Helper()
	k := &Kubelet{client: client}
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

// Hold keeps new nodes NotReady until Release.
func (k *Kubelet) Hold() { k.mu.Lock(); k.held = true; k.mu.Unlock() }

// Release lets them become Ready.
func (k *Kubelet) Release() { k.mu.Lock(); k.held = false; k.mu.Unlock() }

// tick marks the nodes that are not Ready yet Ready.
// It holds the lock throughout, so Hold returns only once no tick is
// calling the clientset.
func (k *Kubelet) tick(ctx context.Context) {
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
		if Ready(n) {
			continue
		}
		setReady(n)
		_, _ = k.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	}
}

// Ready reports whether a node's Ready condition is True.
func Ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func setReady(n *corev1.Node) {
	now := metav1.Now()
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}
	for i, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Status.Conditions[i] = ready
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, ready)
}
