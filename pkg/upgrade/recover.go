package upgrade

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Owner is a controller whose pods were evicted.
type Owner struct {
	Kind, Namespace, Name string
}

func (o Owner) String() string { return fmt.Sprintf("%s %q", o.Kind, o.Namespace+"/"+o.Name) }

// OwnersOf returns the distinct replica controllers of pods, sorted. Pods of
// other kinds (Jobs, bare pods) have nothing to wait for.
func OwnersOf(pods []corev1.Pod) []Owner {
	seen := map[Owner]bool{}
	for i := range pods {
		ref := metav1.GetControllerOf(&pods[i])
		if ref == nil {
			continue
		}
		switch ref.Kind {
		case "ReplicaSet", "StatefulSet", "ReplicationController":
			seen[Owner{Kind: ref.Kind, Namespace: pods[i].Namespace, Name: ref.Name}] = true
		}
	}
	out := make([]Owner, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ownerWaits bounds the workloads WaitOwnersReady watches at once.
const ownerWaits = 32

// WaitOwnersReady waits, with one list+watch per workload and no polling,
// until every workload has its desired replicas available (Deployments and
// ReplicaSets, honouring minReadySeconds) or ready (StatefulSets). ReplicaSets
// are waited for as their Deployment. A deleted workload counts as done. The
// workloads are waited for at once (up to ownerWaits), so a batch that
// touched a hundred of them waits as long as the slowest, not the sum of
// their round trips; the first error ends the others. pending, if not nil,
// is told the workloads not yet seen Ready, at the start and whenever one
// is.
//
// controllers, if not nil, remembers the Deployment of each ReplicaSet
// across calls, since a run waits for the same workloads batch after batch
// (one GET per ReplicaSet per run, not per batch). A ReplicaSet whose
// Deployment is deleted during the run (orphaned, or adopted by another)
// is then not waited for: its remembered Deployment is gone, which counts
// as done.
func WaitOwnersReady(ctx context.Context, client kubernetes.Interface, owners []Owner, controllers *ControllerCache, pending func([]Owner)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		seen    = map[Owner]bool{}
		waiting = slices.Clone(owners)
		first   error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
			cancel()
		}
		mu.Unlock()
	}
	ready := func(o Owner) {
		mu.Lock()
		defer mu.Unlock()
		if i := slices.Index(waiting, o); i >= 0 {
			waiting = slices.Delete(waiting, i, i+1)
		}
		if pending != nil {
			pending(slices.Clone(waiting))
		}
	}
	if pending != nil {
		pending(slices.Clone(waiting))
	}
	slots := make(chan struct{}, ownerWaits)
	for _, given := range owners {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			o, gone, err := controllers.waitFor(ctx, client, given)
			switch {
			case err != nil:
				fail(err)
				return
			case gone:
				ready(given) // nothing to wait for
				return
			}
			mu.Lock()
			dup := seen[o]
			seen[o] = true
			mu.Unlock()
			if !dup {
				if err := waitOwnerReady(ctx, client, o); err != nil {
					fail(err)
					return
				}
			}
			ready(given)
		})
	}
	wg.Wait()
	return first
}

// ControllerCache remembers which Deployment controls each ReplicaSet
// looked up; its zero value is ready to use, and a nil one remembers
// nothing.
type ControllerCache struct {
	mu sync.Mutex
	of map[Owner]Owner
}

// waitFor returns the workload to wait for in o's place: a ReplicaSet's
// Deployment, if it has one, else o itself; gone says o no longer exists.
func (c *ControllerCache) waitFor(ctx context.Context, client kubernetes.Interface, o Owner) (Owner, bool, error) {
	if o.Kind != "ReplicaSet" {
		return o, false, nil
	}
	if c != nil {
		c.mu.Lock()
		d, ok := c.of[o]
		c.mu.Unlock()
		if ok {
			return d, false, nil
		}
	}
	rs, err := client.AppsV1().ReplicaSets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return o, true, nil
	case err != nil:
		return o, false, err
	}
	d := o
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
		d = Owner{Kind: "Deployment", Namespace: o.Namespace, Name: ref.Name}
	}
	if c != nil {
		c.mu.Lock()
		if c.of == nil {
			c.of = map[Owner]Owner{}
		}
		c.of[o] = d
		c.mu.Unlock()
	}
	return d, false, nil
}

func waitOwnerReady(ctx context.Context, client kubernetes.Interface, o Owner) error {
	var lw *cache.ListWatch
	var obj runtime.Object
	switch o.Kind {
	case "Deployment":
		obj, lw = &appsv1.Deployment{}, namedListWatch(client.AppsV1().Deployments(o.Namespace), o.Name)
	case "ReplicaSet":
		obj, lw = &appsv1.ReplicaSet{}, namedListWatch(client.AppsV1().ReplicaSets(o.Namespace), o.Name)
	case "StatefulSet":
		obj, lw = &appsv1.StatefulSet{}, namedListWatch(client.AppsV1().StatefulSets(o.Namespace), o.Name)
	case "ReplicationController":
		obj, lw = &corev1.ReplicationController{}, namedListWatch(client.CoreV1().ReplicationControllers(o.Namespace), o.Name)
	default:
		return nil
	}
	var last string
	// a real server streams the initial list (watch-list); the fake clientset cannot
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, client), obj, func(store cache.Store) (bool, error) {
		return len(store.List()) == 0, nil // gone: nothing to wait for
	}, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return true, nil
		}
		ready, status := ownerReady(ev.Object)
		last = status
		return ready, nil
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if last != "" {
			return fmt.Errorf("%s has %s: %w", o, last, err)
		}
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// ownerReady reports whether a replica controller is back to its desired
// count, and a short status for error messages.
func ownerReady(obj runtime.Object) (bool, string) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.AvailableReplicas >= want,
			fmt.Sprintf("%d/%d available", o.Status.AvailableReplicas, want)
	case *appsv1.ReplicaSet:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.AvailableReplicas >= want,
			fmt.Sprintf("%d/%d available", o.Status.AvailableReplicas, want)
	case *appsv1.StatefulSet:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.ReadyReplicas >= want,
			fmt.Sprintf("%d/%d ready", o.Status.ReadyReplicas, want)
	case *corev1.ReplicationController:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.AvailableReplicas >= want,
			fmt.Sprintf("%d/%d available", o.Status.AvailableReplicas, want)
	}
	return true, ""
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// listWatcher is the List and Watch of a typed client of one kind.
type listWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// namedListWatch lists and watches the one object of c called name.
func namedListWatch[L runtime.Object](c listWatcher[L], name string) *cache.ListWatch {
	only := func(opts *metav1.ListOptions) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			only(&opts)
			return c.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			only(&opts)
			return c.Watch(ctx, opts)
		},
	}
}
