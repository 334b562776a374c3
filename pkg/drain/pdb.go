package drain

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PDBStatus is the part of a PodDisruptionBudget's status a user needs to see
// why an eviction is refused.
type PDBStatus struct {
	Namespace, Name    string
	DisruptionsAllowed int32
	CurrentHealthy     int32
	DesiredHealthy     int32
	ExpectedPods       int32
}

func (p PDBStatus) String() string {
	return fmt.Sprintf("PodDisruptionBudget %q (disruptionsAllowed %d, currentHealthy %d, desiredHealthy %d)",
		p.Namespace+"/"+p.Name, p.DisruptionsAllowed, p.CurrentHealthy, p.DesiredHealthy)
}

// StatusOf summarises pdb's status.
func StatusOf(pdb *policyv1.PodDisruptionBudget) PDBStatus {
	return PDBStatus{
		Namespace:          pdb.Namespace,
		Name:               pdb.Name,
		DisruptionsAllowed: pdb.Status.DisruptionsAllowed,
		CurrentHealthy:     pdb.Status.CurrentHealthy,
		DesiredHealthy:     pdb.Status.DesiredHealthy,
		ExpectedPods:       pdb.Status.ExpectedPods,
	}
}

// PDBsForPod returns the PDBs whose selector matches the pod, with the
// policy/v1 semantics the eviction API uses: only PDBs of the pod's namespace,
// an empty selector matches every pod of the namespace, a nil one none.
func PDBsForPod(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) []policyv1.PodDisruptionBudget {
	var out []policyv1.PodDisruptionBudget
	for _, pdb := range NewPDBIndex(pdbs).ForPod(pod) {
		out = append(out, *pdb)
	}
	return out
}

// PDBIndex matches pods to PDBs with every selector converted once, for
// callers that match many pods (planning a 150,000-pod cluster).
type PDBIndex struct {
	byNamespace map[string][]compiledPDB
}

type compiledPDB struct {
	pdb *policyv1.PodDisruptionBudget
	sel labels.Selector
}

// NewPDBIndex indexes pdbs; the slice must not change while the index is used.
func NewPDBIndex(pdbs []policyv1.PodDisruptionBudget) *PDBIndex {
	x := &PDBIndex{byNamespace: map[string][]compiledPDB{}}
	for i := range pdbs {
		pdb := &pdbs[i]
		if pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			// the apiserver's eviction code skips invalid selectors as well
			continue
		}
		x.byNamespace[pdb.Namespace] = append(x.byNamespace[pdb.Namespace], compiledPDB{pdb: pdb, sel: sel})
	}
	return x
}

// ForPod returns the PDBs selecting pod.
func (x *PDBIndex) ForPod(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, c := range x.byNamespace[pod.Namespace] {
		if c.sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, c.pdb)
		}
	}
	return out
}

func statuses(pdbs []policyv1.PodDisruptionBudget) []PDBStatus {
	if len(pdbs) == 0 {
		return nil
	}
	out := make([]PDBStatus, len(pdbs))
	for i := range pdbs {
		out[i] = StatusOf(&pdbs[i])
	}
	return out
}

// pdbWatchers shares PDB informers among all drains of a Drainer. A drain
// takes a view of each namespace it evicts from before its first eviction:
// knowing each pod's budget lets evictions under one budget go one after
// another (see turns) and a refused pod wait for its budget to change. One
// informer of all namespaces serves every view while any drain runs (a list
// and a watch per batch, whatever the number of nodes and namespaces); where
// listing PDBs of all namespaces is forbidden, each namespace gets its own.
type pdbWatchers struct {
	client      kubernetes.Interface
	syncTimeout time.Duration

	mu         sync.Mutex
	m          map[string]*nsPDBs // the views in use, by namespace
	all        *pdbSource         // the informer of all namespaces while a view uses it
	allDenied  bool               // listing PDBs of all namespaces was forbidden
	allAllowed bool               // ... or allowed: the probe is not repeated
}

// pdbSource is one PDB informer, of all namespaces or of one.
type pdbSource struct {
	namespace string // metav1.NamespaceAll for all
	refs      int    // views using it; guarded by pdbWatchers.mu
	once      sync.Once
	cancel    context.CancelFunc        // set by start before once completes
	done      chan struct{}             // closed when the informer has stopped
	inf       cache.SharedIndexInformer // nil when PDBs cannot be listed (e.g. RBAC)
}

// nsPDBs is one namespace's PDBs as a drain sees them.
type nsPDBs struct {
	namespace string
	refs      int // guarded by pdbWatchers.mu
	src       *pdbSource

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a PDB change may let an eviction through
}

func (w *pdbWatchers) acquire(ctx context.Context, ns string) *nsPDBs {
	all := w.clusterWide(ctx)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]*nsPDBs{}
	}
	n := w.m[ns]
	if n == nil {
		n = &nsPDBs{namespace: ns, changed: make(chan struct{})}
		if all {
			if w.all == nil {
				w.all = newPDBSource(metav1.NamespaceAll)
			}
			n.src = w.all
		} else {
			n.src = newPDBSource(ns)
		}
		n.src.refs++
		w.m[ns] = n
	}
	n.refs++
	src := n.src
	w.mu.Unlock()
	// started outside w.mu so one namespace's probe does not hold up others
	src.once.Do(func() { src.start(ctx, w) })
	return n
}

// clusterWide reports whether PDBs of all namespaces may be listed. The
// cheap probe is made once per Drainer; a transient failure is not
// remembered.
func (w *pdbWatchers) clusterWide(ctx context.Context) bool {
	w.mu.Lock()
	allowed, denied := w.allAllowed, w.allDenied
	w.mu.Unlock()
	if allowed || denied {
		return allowed
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := w.client.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(pctx, metav1.ListOptions{Limit: 1})
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.allAllowed = true
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		w.allDenied = true
	}
	return err == nil
}

func newPDBSource(ns string) *pdbSource {
	return &pdbSource{namespace: ns, done: make(chan struct{}), cancel: func() {}}
}

func (s *pdbSource) start(ctx context.Context, w *pdbWatchers) {
	if s.namespace != metav1.NamespaceAll {
		// a cheap permission probe: without it an informer that may not list
		// PDBs would retry (and log) for the whole drain while we wait for it
		pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
		defer pcancel()
		if _, err := w.client.PolicyV1().PodDisruptionBudgets(s.namespace).List(pctx, metav1.ListOptions{Limit: 1}); err != nil {
			close(s.done)
			return
		}
	}
	ictx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.inf = policyinformers.NewPodDisruptionBudgetInformer(w.client, s.namespace, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_, _ = s.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.broadcast(obj) },
		DeleteFunc: func(obj any) { w.broadcast(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*policyv1.PodDisruptionBudget)
			p, ok2 := newObj.(*policyv1.PodDisruptionBudget)
			if !ok1 || !ok2 {
				w.broadcast(newObj)
				return
			}
			// status updates are frequent (currentHealthy moves); only the ones
			// that can turn a refusal into an acceptance wake the retries
			if p.Status.DisruptionsAllowed > o.Status.DisruptionsAllowed ||
				p.Generation != o.Generation ||
				p.Status.ObservedGeneration != o.Status.ObservedGeneration ||
				(p.Status.DisruptionsAllowed > 0 && p.ResourceVersion != o.ResourceVersion) {
				w.broadcast(p)
			}
		},
	})
	go func() {
		defer close(s.done)
		s.inf.RunWithContext(ictx)
	}()
}

// broadcast wakes the drains waiting on obj's namespace.
func (w *pdbWatchers) broadcast(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pdb, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		return
	}
	w.mu.Lock()
	n := w.m[pdb.Namespace]
	w.mu.Unlock()
	if n != nil {
		n.broadcast()
	}
}

func (w *pdbWatchers) release(ns string) {
	w.mu.Lock()
	n := w.m[ns]
	if n == nil {
		w.mu.Unlock()
		return
	}
	n.refs--
	if n.refs > 0 {
		w.mu.Unlock()
		return
	}
	delete(w.m, ns)
	src := n.src
	src.refs--
	stop := src.refs == 0
	if stop && src == w.all {
		w.all = nil
	}
	w.mu.Unlock()
	if stop {
		// outside w.mu: the informer's handlers take it
		src.once.Do(func() { close(src.done) }) // never started: nothing to stop
		src.cancel()
		<-src.done
	}
}

func (n *nsPDBs) broadcast() {
	n.mu.Lock()
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
}

// changes returns a channel closed at the next relevant PDB change; take it
// before an eviction attempt so a change during the attempt is not missed.
func (n *nsPDBs) changes() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changed
}

// waitSynced waits a bounded time for the informer's first list, so a report
// can name the PDBs; reports go out without them rather than never.
func (n *nsPDBs) waitSynced(ctx context.Context, timeout time.Duration) bool {
	inf := n.src.inf
	if inf == nil {
		return false
	}
	if inf.HasSynced() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitSynced(ctx, inf)
}

// synced reports, without waiting, whether the view can be read.
func (n *nsPDBs) synced() bool {
	return n.src.inf != nil && n.src.inf.HasSynced()
}

func (n *nsPDBs) list() []policyv1.PodDisruptionBudget {
	inf := n.src.inf
	if inf == nil {
		return nil
	}
	objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, n.namespace)
	if err != nil {
		return nil
	}
	out := make([]policyv1.PodDisruptionBudget, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*policyv1.PodDisruptionBudget); ok {
			out = append(out, *p)
		}
	}
	return out
}
