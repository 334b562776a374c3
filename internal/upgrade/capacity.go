package upgrade

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// clusterView keeps nodes and pods in informer caches for the run: listed
// once, then watched, so checking room before each batch costs no requests.
type clusterView struct {
	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	changed chan struct{}
	// workloads are the replica controllers the recovery waits read,
	// watched from the first batch that needs them
	workloads *workloadView
	// pdbs are watched from the first service update the run follows,
	// and drains noted from then on (held.go)
	pdbs   cache.SharedIndexInformer
	drains *drainsSeen
}

const byNodeIndex = "node"

func newClusterView(ctx context.Context, client kubernetes.Interface) (*clusterView, error) {
	v := &clusterView{changed: make(chan struct{}, 1)}
	v.factory = informers.NewSharedInformerFactory(client, 0)
	v.nodes = v.factory.Core().V1().Nodes().Informer()
	v.pods = v.factory.Core().V1().Pods().Informer()
	// Keep only what the plan's snapshot keeps: a 150,000-pod cache stays
	// small, and the estimate reads the pods the plan's estimate read.
	if err := v.pods.SetTransform(snapshot.Slim); err != nil {
		return nil, err
	}
	if err := v.pods.AddIndexers(cache.Indexers{byNodeIndex: func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}, byOwnerIndex: indexByOwner}); err != nil {
		return nil, err
	}
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { v.signal() },
		UpdateFunc: func(any, any) { v.signal() },
		DeleteFunc: func(any) { v.signal() },
	}
	if _, err := v.nodes.AddEventHandler(notify); err != nil {
		return nil, err
	}
	v.workloads = newWorkloadView(v.factory, ctx.Done())
	v.workloads.podsOf = v.ownedPods
	// Only a pod turning Ready can bring a workload back: the recovery
	// waits are not woken by the rest of a busy cluster's pod updates.
	if _, err := v.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			v.signal()
			if p, ok := obj.(*corev1.Pod); ok && podutils.IsPodReady(p) {
				v.workloads.podReady()
			}
		},
		UpdateFunc: func(old, obj any) {
			v.signal()
			was, wasPod := old.(*corev1.Pod)
			p, ok := obj.(*corev1.Pod)
			if ok && podutils.IsPodReady(p) && (!wasPod || !podutils.IsPodReady(was)) {
				v.workloads.podReady()
			}
		},
		DeleteFunc: func(any) { v.signal() },
	}); err != nil {
		return nil, err
	}
	v.factory.Start(ctx.Done())
	for typ, ok := range v.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			v.factory.Shutdown() // ctx is done: the informers are ending
			return nil, fmt.Errorf("error when watching %v: the cache did not sync", typ)
		}
	}
	return v, nil
}

func (v *clusterView) signal() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}

// autoscalerPod names a running pod of what adds nodes for pending pods.
func (v *clusterView) autoscalerPod() string {
	for _, obj := range v.pods.GetStore().List() {
		if p := obj.(*corev1.Pod); capacity.IsAutoscaler(p) {
			return p.Namespace + "/" + p.Name
		}
	}
	return ""
}

// Informer and PodsOn make the view the drains' pod source.
func (v *clusterView) Informer() cache.SharedIndexInformer { return v.pods }

func (v *clusterView) PodsOn(node string) []*corev1.Pod { return v.podsOn(node) }

func (v *clusterView) podsOn(node string) []*corev1.Pod {
	objs, _ := v.pods.GetIndexer().ByIndex(byNodeIndex, node)
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Pod))
	}
	return out
}

func (v *clusterView) allNodes() []*corev1.Node {
	objs := v.nodes.GetStore().List()
	out := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Node))
	}
	return out
}

// room estimates whether the pods of batch fit elsewhere.
func (v *clusterView) room(batch []string, excluded sets.Set[string]) capacity.Room {
	var toEvict []*corev1.Pod
	for _, n := range batch {
		for _, p := range v.podsOn(n) {
			if plan.Evictable(p) {
				toEvict = append(toEvict, p)
			}
		}
	}
	return capacity.Estimate(toEvict, v.allNodes(), v.podsOn, excluded)
}

// waitForRoom re-estimates on every change to nodes or pods (at most every
// minInterval) until the batch fits or ctx ends; seen is told each
// estimate that does not fit.
func (v *clusterView) waitForRoom(ctx context.Context, batch []string, excluded sets.Set[string], minInterval time.Duration, seen func(capacity.Room)) (capacity.Room, error) {
	for {
		r := v.room(batch, excluded)
		if r.Fits() {
			return r, nil
		}
		seen(r)
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-v.changed:
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(minInterval): // let bursts of pod updates settle
		}
	}
}
