package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
)

var everything = labels.Everything()

// Violation is one moment when a PDB had fewer Ready pods than it requires.
type Violation struct {
	PDB             string
	Ready, Required int32
	At              time.Time
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %d ready < %d required at %s", v.PDB, v.Ready, v.Required, v.At.Format(time.RFC3339Nano))
}

// PDBWatcher records every transition of a PDB into violation: its matching
// Ready pods (Ready condition true, not terminating) dropping below what it
// requires. The requirement is resolved like the disruption controller does,
// against the PDB's status.expectedPods. A PDB that stays violated counts
// once until it recovers.
type PDBWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	synced     bool // both caches complete; before that a PDB can be seen without its pods
	violating  map[string]bool
	violations []Violation

	pods corelisters.PodLister
	pdbs policylisters.PodDisruptionBudgetLister
	ns   string
}

// WatchPDBs starts watching pods and PDBs in namespace and returns once the
// caches have synced.
func WatchPDBs(ctx context.Context, c kubernetes.Interface, namespace string) (*PDBWatcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(namespace))
	podInf := f.Core().V1().Pods().Informer()
	pdbInf := f.Policy().V1().PodDisruptionBudgets().Informer()
	w := &PDBWatcher{
		cancel:    cancel,
		done:      make(chan struct{}),
		violating: map[string]bool{},
		pods:      f.Core().V1().Pods().Lister(),
		pdbs:      f.Policy().V1().PodDisruptionBudgets().Lister(),
		ns:        namespace,
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.evaluate() },
		UpdateFunc: func(any, any) { w.evaluate() },
		DeleteFunc: func(any) { w.evaluate() },
	}
	for _, inf := range []cache.SharedIndexInformer{podInf, pdbInf} {
		if _, err := inf.AddEventHandler(h); err != nil {
			cancel()
			return nil, err
		}
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, pdbInf.HasSynced) {
		cancel()
		f.Shutdown()
		return nil, fmt.Errorf("pdb watcher caches did not sync: %w", ctx.Err())
	}
	go func() {
		<-ctx.Done()
		f.Shutdown()
		close(w.done)
	}()
	w.mu.Lock()
	w.synced = true
	w.mu.Unlock()
	w.evaluate()
	return w, nil
}

// Stop ends the watch and returns the violations seen, oldest first.
func (w *PDBWatcher) Stop() []Violation {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Violation(nil), w.violations...)
}

// Violations returns what has been recorded so far without stopping.
func (w *PDBWatcher) Violations() []Violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Violation(nil), w.violations...)
}

// evaluate runs after every event; the informers' handlers are serialised
// per informer, the mutex covers the two informers racing.
func (w *PDBWatcher) evaluate() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.synced {
		return
	}
	pdbs, err := w.pdbs.PodDisruptionBudgets(w.ns).List(everything)
	if err != nil {
		return
	}
	pods, err := w.pods.Pods(w.ns).List(everything)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, pdb := range pdbs {
		seen[pdb.Name] = true
		required, ok := requiredReady(pdb)
		if !ok {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			continue
		}
		var ready int32
		for _, p := range pods {
			if sel.Matches(labels.Set(p.Labels)) && podReady(p) {
				ready++
			}
		}
		bad := ready < required
		if bad && !w.violating[pdb.Name] {
			w.violations = append(w.violations, Violation{PDB: pdb.Name, Ready: ready, Required: required, At: now})
		}
		w.violating[pdb.Name] = bad
	}
	for name := range w.violating {
		if !seen[name] {
			delete(w.violating, name)
		}
	}
}

// requiredReady resolves the PDB's requirement against status.expectedPods
// (percentages round up, as in the disruption controller). It reports false
// until the disruption controller has computed expectedPods.
func requiredReady(pdb *policyv1.PodDisruptionBudget) (int32, bool) {
	expected := pdb.Status.ExpectedPods
	if pdb.Status.ObservedGeneration < pdb.Generation || expected == 0 {
		return 0, false
	}
	switch {
	case pdb.Spec.MinAvailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, false
		}
		return int32(n), true
	case pdb.Spec.MaxUnavailable != nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, false
		}
		return max(expected-int32(n), 0), true
	}
	return 0, false
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
