package scenario

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// KubeletVersions has the nodes of simulated machines report the kubelet
// version each machine runs, all their life, as a kubelet does. kwok
// writes its own version into nodeInfo whenever it makes a node Ready:
// when it joins, and again after the node lifecycle controller marked it
// Unknown (on a loaded machine kwok's leases come late); each time, the
// machine's version is set back. A cloud fake sets a machine's version
// when its node joins and forgets it when the node leaves.
type KubeletVersions struct {
	c    kubernetes.Interface
	mu   sync.Mutex
	want map[string]string // node name: "v1.31.2-..."
}

// WatchKubeletVersions starts keeping the versions set, until ctx ends.
func WatchKubeletVersions(ctx context.Context, c kubernetes.Interface) (*KubeletVersions, error) {
	k := &KubeletVersions{c: c, want: map[string]string{}}
	f := informers.NewSharedInformerFactory(c, 0)
	inf := f.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.keep(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.keep(ctx, obj) },
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	return k, nil
}

// Set makes node report version from now on; a nil KubeletVersions
// keeps none (a fake without a cluster).
func (k *KubeletVersions) Set(node, version string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.want[node] = version
}

// Forget stops keeping node's version: its machine is gone.
func (k *KubeletVersions) Forget(node string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.want, node)
}

// keep sets the version back on a Ready node that reports another. A
// write that fails (a conflict is someone else's write) is tried again
// at the node's next event.
func (k *KubeletVersions) keep(ctx context.Context, obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok || !nodeReady(n) {
		return
	}
	k.mu.Lock()
	want := k.want[n.Name]
	k.mu.Unlock()
	if want == "" || n.Status.NodeInfo.KubeletVersion == want {
		return
	}
	n = n.DeepCopy()
	n.Status.NodeInfo.KubeletVersion = want
	_, _ = k.c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
}
