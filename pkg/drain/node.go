package drain

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
)

// nodeDrain is the state of one DrainNode call.
type nodeDrain struct {
	d    *Drainer
	node string

	informer  cache.SharedIndexInformer
	stopWatch context.CancelFunc
	watchDone chan struct{}
	handler   cache.ResourceEventHandlerRegistration // on Options.Pods' informer

	wake chan struct{} // pokes the main loop; buffered 1

	mu      sync.Mutex
	pods    map[types.UID]*podTrack
	evicted []corev1.Pod
	pdbNS   map[string]*nsPDBs
}

type podTrack struct {
	pod  corev1.Pod // as listed, or as last seen by the watch
	gone chan struct{}

	// guarded by nodeDrain.mu
	isGone      bool
	goneClaimed bool // a Gone event is being or has been emitted
	inFlight    bool // an evict/delete call is running
	gonePending bool // the pod left during that call
	terminating bool
	removed     bool // our eviction or delete was accepted
	blocked     string
	pdbs        []PDBStatus
	failed      error // nothing more will be tried
	lastErr     error // a transient error being retried
	lost        bool  // the last attempt's connection was lost before the API server answered
}

func newNodeDrain(d *Drainer, node string) *nodeDrain {
	return &nodeDrain{
		d:     d,
		node:  node,
		wake:  make(chan struct{}, 1),
		pods:  map[types.UID]*podTrack{},
		pdbNS: map[string]*nsPDBs{},
	}
}

func (n *nodeDrain) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// startPodWatch follows the node's pods: in Options.Pods' informer, or
// else with an informer of the node's own (a list, then a watch; it
// re-lists by itself when the watch expires).
func (n *nodeDrain) startPodWatch(ctx context.Context) error {
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.observe(obj) },
		UpdateFunc: func(_, obj any) { n.observe(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				n.markGone(pod.UID)
			}
		},
	}
	if src := n.d.opts.Pods; src != nil {
		n.informer = src.Informer()
		reg, err := n.informer.AddEventHandler(handler)
		if err != nil {
			return fmt.Errorf("watch pods of node %q: %w", n.node, err)
		}
		n.handler = reg
		return nil
	}
	sel := fields.OneTermEqualSelector("spec.nodeName", n.node).String()
	n.informer = coreinformers.NewFilteredPodInformer(n.d.client, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = sel })
	if _, err := n.informer.AddEventHandler(handler); err != nil {
		return fmt.Errorf("watch pods of node %q: %w", n.node, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	n.stopWatch = cancel
	n.watchDone = make(chan struct{})
	go func() {
		defer close(n.watchDone)
		n.informer.RunWithContext(wctx)
	}()
	if !waitSynced(ctx, n.informer) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("watch pods of node %q: cache did not sync", n.node)
	}
	return nil
}

func (n *nodeDrain) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != n.node {
		return
	}
	n.mu.Lock()
	t := n.pods[pod.UID]
	if t != nil && !t.isGone {
		t.pod = *pod
		t.terminating = pod.DeletionTimestamp != nil
	}
	n.mu.Unlock()
	if t != nil {
		n.poke()
	}
}

// markGone records that the pod left. Its Gone event waits for an evict or
// delete call in flight, so callers see Evicted/Deleted before Gone, and
// every Gone before Drained.
func (n *nodeDrain) markGone(uid types.UID) {
	n.mu.Lock()
	t := n.pods[uid]
	if t == nil || t.goneClaimed {
		n.mu.Unlock()
		return
	}
	t.goneClaimed = true
	if t.inFlight {
		t.gonePending = true
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.finishGone(t)
}

func (n *nodeDrain) finishGone(t *podTrack) {
	n.d.emit(Event{Type: EventGone, Node: n.node, Namespace: t.pod.Namespace, Pod: t.pod.Name})
	n.mu.Lock()
	t.isGone = true
	close(t.gone)
	n.mu.Unlock()
	n.poke()
}

// call runs an evict or delete call for t; until settle, markGone holds the
// pod's Gone event back so the caller's own event comes first.
func (n *nodeDrain) call(t *podTrack, fn func() error) error {
	n.mu.Lock()
	t.inFlight = true
	n.mu.Unlock()
	return fn()
}

// settle ends what call began; it reports whether the pod is gone.
func (n *nodeDrain) settle(t *podTrack) bool {
	n.mu.Lock()
	t.inFlight = false
	pending := t.gonePending
	t.gonePending = false
	n.mu.Unlock()
	if pending {
		n.finishGone(t)
	}
	return pending
}

// inStore reports whether the watch still sees the pod with uid.
func (n *nodeDrain) inStore(pod *corev1.Pod) bool {
	obj, exists, err := n.informer.GetStore().GetByKey(pod.Namespace + "/" + pod.Name)
	if err != nil || !exists {
		return false
	}
	p, ok := obj.(*corev1.Pod)
	return ok && p.UID == pod.UID
}

func (n *nodeDrain) close() {
	if n.stopWatch != nil {
		n.stopWatch()
		<-n.watchDone
	}
	if n.handler != nil {
		_ = n.informer.RemoveEventHandler(n.handler)
	}
	n.mu.Lock()
	nss := make([]string, 0, len(n.pdbNS))
	for ns := range n.pdbNS {
		nss = append(nss, ns)
	}
	n.pdbNS = map[string]*nsPDBs{}
	n.mu.Unlock()
	for _, ns := range nss {
		n.d.pdbs.release(ns)
	}
}

// viewOf returns the PDB view the drain holds for ns, or nil.
func (n *nodeDrain) viewOf(ns string) *nsPDBs {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pdbNS[ns]
}

func (n *nodeDrain) pdbsFor(ctx context.Context, ns string) *nsPDBs {
	n.mu.Lock()
	p := n.pdbNS[ns]
	n.mu.Unlock()
	if p != nil {
		return p
	}
	p = n.d.pdbs.acquire(ctx, ns)
	n.mu.Lock()
	if q := n.pdbNS[ns]; q != nil {
		// another pod of this drain got there first; keep one reference
		n.mu.Unlock()
		n.d.pdbs.release(ns)
		return q
	}
	n.pdbNS[ns] = p
	n.mu.Unlock()
	return p
}

func (n *nodeDrain) evictedPods() []corev1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]corev1.Pod(nil), n.evicted...)
}

func (n *nodeDrain) recordRemoved(t *podTrack, pod corev1.Pod) {
	n.mu.Lock()
	if !t.removed {
		t.removed = true
		n.evicted = append(n.evicted, pod)
	}
	n.mu.Unlock()
}

// track adds pods not seen before; it returns the new ones.
func (n *nodeDrain) track(pods []corev1.Pod) []*podTrack {
	var added []*podTrack
	n.mu.Lock()
	for _, p := range pods {
		if _, ok := n.pods[p.UID]; ok {
			continue
		}
		t := &podTrack{pod: p, gone: make(chan struct{}), terminating: p.DeletionTimestamp != nil}
		n.pods[p.UID] = t
		added = append(added, t)
	}
	n.mu.Unlock()
	// a pod missing from the watch's store is not taken as gone here: the
	// store may lag the list as well as lead it; remove() settles it
	return added
}

// newPodsCached reports whether the node may hold pods the drain has not
// seen: always without Options.Pods, else when its cache shows one that is
// neither tracked, nor finished, nor a DaemonSet's or mirror pod (which the
// drain leaves).
func (n *nodeDrain) newPodsCached() bool {
	src := n.d.opts.Pods
	if src == nil {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range src.PodsOn(n.node) {
		if _, seen := n.pods[p.UID]; seen || pods.Finished(p) {
			continue
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
			continue
		}
		return true
	}
	return false
}

// state counts the tracked pods still on the node and those among them that
// nothing more will move (eviction failed for good).
func (n *nodeDrain) state() (left, stuck int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.pods {
		if t.isGone {
			continue
		}
		left++
		if t.failed != nil && !t.terminating {
			stuck++
		}
	}
	return left, stuck
}

// waitSynced waits for the informer's first list: the informer closes a
// channel then, where cache.WaitForCacheSync would poll every 100ms.
func waitSynced(ctx context.Context, inf cache.SharedIndexInformer) bool {
	select {
	case <-inf.HasSyncedChecker().Done():
		return true
	case <-ctx.Done():
		return inf.HasSynced()
	}
}
