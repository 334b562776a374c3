package upgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// workloadView keeps the replica controllers the recovery waits read in
// informer caches of the run's factory, each kind listed and watched once
// for the whole run, from the first batch that evicts its pods: a watch
// per workload per batch was 1,390 watches in a 150-node run, and a GET
// per ReplicaSet to find its Deployment.
//
// A cache is as fresh as a list made when the wait starts, give or take
// the watch's latency (milliseconds): either can show a workload whose
// controller has not counted the evictions yet, and the PDBs, which the
// API server checks against the pods themselves, are what hold then.
type workloadView struct {
	factory informers.SharedInformerFactory
	stop    <-chan struct{}

	mu    sync.Mutex
	kinds map[string]cache.SharedIndexInformer
	// changed is closed and replaced on every change to a watched kind,
	// so each wait sees every change after it took the channel.
	changed chan struct{}
	// refused is, by kind, why the API server will not list it (RBAC):
	// the informer would retry for ever, and the wait must not.
	refused map[string]error
	// podsOf, when set, lists the cached pods a controller owns, so a
	// workload counts as back as soon as its pods are (podsBack).
	podsOf func(owner Owner) []*corev1.Pod
}

func newWorkloadView(factory informers.SharedInformerFactory, stop <-chan struct{}) *workloadView {
	return &workloadView{factory: factory, stop: stop, kinds: map[string]cache.SharedIndexInformer{}, changed: make(chan struct{})}
}

// kindsToWatch are the kinds whose caches tell whether owner is back:
// a ReplicaSet's Deployment, if it has one, is what is waited for.
func kindsToWatch(owner Owner) []string {
	if owner.Kind == "ReplicaSet" {
		return []string{"ReplicaSet", "Deployment"}
	}
	return []string{owner.Kind}
}

// kindsOf are the kinds to watch for owners.
func kindsOf(owners []Owner) []string {
	var kinds []string
	for _, o := range owners {
		for _, kind := range kindsToWatch(o) {
			if !slices.Contains(kinds, kind) {
				kinds = append(kinds, kind)
			}
		}
	}
	return kinds
}

// watch starts the caches of the kinds not watched yet, and waits for
// the first list of each.
func (v *workloadView) watch(ctx context.Context, kinds []string) error {
	var synced []cache.InformerSynced
	v.mu.Lock()
	for _, kind := range kinds {
		inf, ok := v.kinds[kind]
		if !ok {
			var err error
			if inf, err = v.newInformer(kind); err != nil {
				v.mu.Unlock()
				return fmt.Errorf("error when watching %ss: %w", kind, err)
			}
			if inf == nil {
				continue
			}
			v.kinds[kind] = inf
		}
		synced = append(synced, inf.HasSynced)
	}
	v.mu.Unlock()
	v.factory.Start(v.stop) // starts the informers not started yet
	return v.waitListed(ctx, kinds, synced)
}

// newInformer sets up the factory's informer of kind: slimmed objects,
// ReplicaSets indexed by Deployment, refusals noted, and every change
// signalled. It returns nil for a kind without one.
func (v *workloadView) newInformer(kind string) (cache.SharedIndexInformer, error) {
	var inf cache.SharedIndexInformer
	switch kind {
	case "Deployment":
		inf = v.factory.Apps().V1().Deployments().Informer()
	case "ReplicaSet":
		inf = v.factory.Apps().V1().ReplicaSets().Informer()
	case "StatefulSet":
		inf = v.factory.Apps().V1().StatefulSets().Informer()
	case "ReplicationController":
		inf = v.factory.Core().V1().ReplicationControllers().Informer()
	default:
		return nil, nil
	}
	err := inf.SetTransform(snapshot.Slim)
	if err == nil && kind == "ReplicaSet" {
		err = inf.AddIndexers(cache.Indexers{byDeploymentIndex: indexByDeployment})
	}
	if err == nil {
		err = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { v.listFailed(kind, err) })
	}
	if err == nil {
		_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { v.signal() },
			UpdateFunc: func(any, any) { v.signal() },
			DeleteFunc: func(any) { v.signal() },
		})
	}
	return inf, err
}

// waitListed waits until every informer of synced has listed its kind,
// a kind's list is refused, or ctx ends. Synced has no event of its own
// (an empty list adds nothing), so it is looked at every 100 ms, as
// cache.WaitForCacheSync does, and at every change and refusal.
func (v *workloadView) waitListed(ctx context.Context, kinds []string, synced []cache.InformerSynced) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		changed := v.changes()
		if err := v.refusal(kinds); err != nil {
			return err
		}
		if !slices.ContainsFunc(synced, func(s cache.InformerSynced) bool { return !s() }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("error when listing %s: %w", strings.Join(kinds, "s, ")+"s", ctx.Err())
		case <-changed:
		case <-tick.C:
		}
	}
}

// listFailed notes why a kind's informer could not list or watch; only a
// refusal that no retry changes is kept, and waits are told.
func (v *workloadView) listFailed(kind string, err error) {
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		return // the informer retries: a restart of the API server, a timeout
	}
	v.mu.Lock()
	if v.refused == nil {
		v.refused = map[string]error{}
	}
	v.refused[kind] = err
	v.mu.Unlock()
	v.signal()
}

// refusal is the error of the first of kinds the API server refuses to
// list, or nil.
func (v *workloadView) refusal(kinds []string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, kind := range kinds {
		if err := v.refused[kind]; err != nil {
			return fmt.Errorf("cannot wait for the evicted workloads to be Ready: listing %ss: %w; grant list and watch on them (deploy/rbac.yaml)", kind, err)
		}
	}
	return nil
}

func (v *workloadView) signal() {
	v.mu.Lock()
	close(v.changed)
	v.changed = make(chan struct{})
	v.mu.Unlock()
}

// podReady wakes the waits when a pod turns Ready, once a wait has
// begun: the first list of a large cluster's pods wakes nothing.
func (v *workloadView) podReady() {
	v.mu.Lock()
	waiting := len(v.kinds) > 0
	v.mu.Unlock()
	if waiting {
		v.signal()
	}
}

func (v *workloadView) changes() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed
}

// get returns the cached object of kind, or nil when there is none.
func (v *workloadView) get(kind, namespace, name string) any {
	v.mu.Lock()
	inf := v.kinds[kind]
	v.mu.Unlock()
	if inf == nil {
		return nil
	}
	obj, ok, _ := inf.GetStore().GetByKey(namespace + "/" + name)
	if !ok {
		return nil
	}
	return obj
}

// status says whether owner has its desired replicas back, and how many
// its controller counts; a workload that is gone has nothing to wait for.
// A ReplicaSet is judged as its Deployment, if it has one: the Deployment
// is what counts the replicas of all its ReplicaSets.
func (v *workloadView) status(owner Owner) (bool, string) {
	obj := v.get(owner.Kind, owner.Namespace, owner.Name)
	if rs, ok := obj.(*appsv1.ReplicaSet); ok {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
			obj = v.get("Deployment", owner.Namespace, ref.Name)
			owner = Owner{Kind: "Deployment", Namespace: owner.Namespace, Name: ref.Name}
		}
	}
	if obj == nil {
		return true, ""
	}
	ready, status := ownerReady(obj.(runtime.Object))
	if !ready && v.podsBack(owner, obj) {
		return true, ""
	}
	return ready, fmt.Sprintf("%s has %s", owner, status)
}

// podsBack says whether owner (obj, cached) has as many of its pods
// Ready as it asks for, as the pod cache shows them. Its controller
// counts the same pods, but only in its next status update (a
// Deployment's one more later), each behind the controller manager's
// rate limit and queue: about a second a round in a batch that evicts
// dozens of pods. Availability after minReadySeconds is left to the
// controller, which times it on the cluster's clock; a StatefulSet's
// readiness, which its status counts, does not wait for it.
func (v *workloadView) podsBack(owner Owner, obj any) bool {
	if v.podsOf == nil {
		return false
	}
	var want, minReady int32
	controllers := []Owner{owner}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		want, minReady = ptrOr(o.Spec.Replicas, 1), o.Spec.MinReadySeconds
		controllers = v.replicaSetsOf(owner)
	case *appsv1.ReplicaSet:
		want, minReady = ptrOr(o.Spec.Replicas, 1), o.Spec.MinReadySeconds
	case *appsv1.StatefulSet:
		want = ptrOr(o.Spec.Replicas, 1)
	case *corev1.ReplicationController:
		want, minReady = ptrOr(o.Spec.Replicas, 1), o.Spec.MinReadySeconds
	default:
		return false
	}
	if minReady > 0 {
		return false
	}
	ready := int32(0)
	for _, c := range controllers {
		for _, p := range v.podsOf(c) {
			if isActive(p) && podutils.IsPodReady(p) {
				ready++
			}
		}
	}
	return ready >= want
}

const byDeploymentIndex = "deployment"

// indexByDeployment indexes ReplicaSets by the Deployment that controls
// them.
func indexByDeployment(obj any) ([]string, error) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
		return []string{rs.Namespace + "/" + ref.Name}, nil
	}
	return nil, nil
}

// replicaSetsOf are the cached ReplicaSets of Deployment d.
func (v *workloadView) replicaSetsOf(d Owner) []Owner {
	v.mu.Lock()
	inf := v.kinds["ReplicaSet"]
	v.mu.Unlock()
	if inf == nil {
		return nil
	}
	objs, _ := inf.GetIndexer().ByIndex(byDeploymentIndex, d.Namespace+"/"+d.Name)
	out := make([]Owner, 0, len(objs))
	for _, obj := range objs {
		rs := obj.(*appsv1.ReplicaSet)
		out = append(out, Owner{Kind: "ReplicaSet", Namespace: rs.Namespace, Name: rs.Name})
	}
	return out
}

// replicas is the replica count owner itself asks for (a ReplicaSet's,
// not its Deployment's); false when it is not cached.
func (v *workloadView) replicas(owner Owner) (int32, bool) {
	var want *int32
	switch o := v.get(owner.Kind, owner.Namespace, owner.Name).(type) {
	case *appsv1.ReplicaSet:
		want = o.Spec.Replicas
	case *appsv1.StatefulSet:
		want = o.Spec.Replicas
	case *corev1.ReplicationController:
		want = o.Spec.Replicas
	default:
		return 0, false
	}
	return ptrOr(want, 1), true
}

// waitReady waits until every owner has its desired replicas available
// (Deployments and ReplicaSets, honouring minReadySeconds) or ready
// (StatefulSets), on the run's caches: each change to a watched kind (and
// each pod turning Ready, with podsOf) looks again at the owners still
// waited for, and nothing polls. A workload deleted counts as done.
// pending, if not nil, is told the owners not yet seen back, at the start
// and whenever that changes. When ctx ends first, the error says how far
// each owner still waited for got.
func (v *workloadView) waitReady(ctx context.Context, owners []Owner, pending func([]Owner)) error {
	if err := v.watch(ctx, kindsOf(owners)); err != nil {
		return err
	}
	return waitOwners(ctx, owners, v.status, v.changes, nil, pending)
}

// waitOwners waits until check holds for every owner, looking again at
// the owners still waited for on each signal of changes (taken before
// each look, so no change is missed) or of also. pending, if not nil, is
// told the owners still waited for, at the start and whenever that
// changes. When ctx ends first, the error says how far each got.
func waitOwners(ctx context.Context, owners []Owner, check func(Owner) (bool, string), changes func() <-chan struct{}, also <-chan struct{}, pending func([]Owner)) error {
	waiting := slices.Clone(owners)
	told := -1
	for {
		changed := changes()
		var behind []string
		waiting = slices.DeleteFunc(waiting, func(o Owner) bool {
			ok, status := check(o)
			if !ok {
				behind = append(behind, status)
			}
			return ok
		})
		if pending != nil && len(waiting) != told {
			told = len(waiting)
			pending(slices.Clone(waiting))
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			slices.Sort(behind)
			behind = slices.Compact(behind)
			return fmt.Errorf("%s: %w", listNames(behind, waitNamesShown), ctx.Err())
		case <-changed:
		case <-also:
		}
	}
}
