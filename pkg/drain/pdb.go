package drain

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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

// pdbWatchers shares one PDB informer per namespace among all drains of a
// Drainer, started when a pod of that namespace is first refused and stopped
// when no drain needs it any more: most pods evict at once, so most drains
// never watch PDBs at all.
type pdbWatchers struct {
	client      kubernetes.Interface
	syncTimeout time.Duration

	mu sync.Mutex
	m  map[string]*nsPDBs
}

type nsPDBs struct {
	refs   int
	once   sync.Once
	cancel context.CancelFunc        // set by start before once completes
	done   chan struct{}             // closed when the informer has stopped
	inf    cache.SharedIndexInformer // nil when PDBs cannot be listed (e.g. RBAC)

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a PDB change may let an eviction through
}

func (w *pdbWatchers) acquire(ctx context.Context, ns string) *nsPDBs {
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]*nsPDBs{}
	}
	n := w.m[ns]
	if n == nil {
		n = &nsPDBs{changed: make(chan struct{}), done: make(chan struct{}), cancel: func() {}}
		w.m[ns] = n
	}
	n.refs++
	w.mu.Unlock()
	// started outside w.mu so one namespace's probe does not hold up others
	n.once.Do(func() { n.start(ctx, w.client, ns) })
	return n
}

func (n *nsPDBs) start(ctx context.Context, client kubernetes.Interface, ns string) {
	// a cheap permission probe: without it an informer that may not list PDBs
	// would log reflector errors for the whole drain while we wait for it
	pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
	defer pcancel()
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).List(pctx, metav1.ListOptions{Limit: 1}); err != nil {
		close(n.done)
		return
	}
	ictx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.inf = policyinformers.NewPodDisruptionBudgetInformer(client, ns, 0, cache.Indexers{})
	_, _ = n.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { n.broadcast() },
		DeleteFunc: func(any) { n.broadcast() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*policyv1.PodDisruptionBudget)
			p, ok2 := newObj.(*policyv1.PodDisruptionBudget)
			if !ok1 || !ok2 {
				n.broadcast()
				return
			}
			// status updates are frequent (currentHealthy moves); only the ones
			// that can turn a refusal into an acceptance wake the retries
			if p.Status.DisruptionsAllowed > o.Status.DisruptionsAllowed ||
				p.Generation != o.Generation ||
				p.Status.ObservedGeneration != o.Status.ObservedGeneration ||
				(p.Status.DisruptionsAllowed > 0 && p.ResourceVersion != o.ResourceVersion) {
				n.broadcast()
			}
		},
	})
	go func() {
		defer close(n.done)
		n.inf.RunWithContext(ictx)
	}()
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
	w.mu.Unlock()
	n.once.Do(func() { close(n.done) }) // never started: nothing to stop
	n.cancel()
	<-n.done
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
	if n.inf == nil {
		return false
	}
	if n.inf.HasSynced() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitSynced(ctx, n.inf.HasSynced)
}

func (n *nsPDBs) list() []policyv1.PodDisruptionBudget {
	if n.inf == nil {
		return nil
	}
	objs := n.inf.GetStore().List()
	out := make([]policyv1.PodDisruptionBudget, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*policyv1.PodDisruptionBudget); ok {
			out = append(out, *p)
		}
	}
	return out
}
