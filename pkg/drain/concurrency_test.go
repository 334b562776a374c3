package drain

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
)

// inFlight counts the evictions the fake apiserver is serving, per budget
// label ("" for pods under none), and the most seen at once.
type inFlight struct {
	mu      sync.Mutex
	now     map[string]int
	most    map[string]int
	total   int
	mostAll int
	// all is closed once want evictions are in flight together
	all    chan struct{}
	want   int
	closed bool
}

func newInFlight(want int) *inFlight {
	return &inFlight{now: map[string]int{}, most: map[string]int{}, all: make(chan struct{}), want: want}
}

func (f *inFlight) enter(budget string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now[budget]++
	f.most[budget] = max(f.most[budget], f.now[budget])
	f.total++
	f.mostAll = max(f.mostAll, f.total)
	if f.total >= f.want && !f.closed {
		f.closed = true
		close(f.all)
	}
}

func (f *inFlight) leave(budget string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now[budget]--
	f.total--
}

// TestEvictionsConcurrentAcrossBudgetsOneAtATimeWithin drains two nodes
// whose pods fall under budget "a", budget "b" or none. The fake apiserver
// holds every eviction until one eviction per budget and every pod under no
// budget are in flight together, which only happens when they all go out at
// once; meanwhile a budget must never see two evictions at the same time
// (the apiserver would make one of them wait 500 ms on a conflict).
func TestEvictionsConcurrentAcrossBudgetsOneAtATimeWithin(t *testing.T) {
	objs := []runtime.Object{
		newPDB("default", "a", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}, 100),
		newPDB("default", "b", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}}, 100),
	}
	budget := map[string]string{}
	free := 0
	for _, node := range []string{"n1", "n2"} {
		for i := range 3 {
			for _, app := range []string{"a", "b", "free"} {
				name := fmt.Sprintf("%s-%s-%d", app, node, i)
				objs = append(objs, newPod("default", name, node, labelled("app", app)))
				if app == "free" {
					budget[name] = ""
					free++
				} else {
					budget[name] = app
				}
			}
		}
	}
	// every pod under no budget, plus the one of each budget whose turn it is
	flight := newInFlight(free + 2)
	c := newCluster(t, nil, objs...)
	client := heldEvictions{Interface: c, hold: func(name string) (func(), error) {
		b := budget[name]
		flight.enter(b)
		done := func() { flight.leave(b) }
		select {
		case <-flight.all:
			return done, nil
		case <-time.After(10 * time.Second):
			return done, fmt.Errorf("eviction of %s held for 10s: the evictions did not all go out at once", name)
		}
	}}
	d := New(client, Options{})
	results, err := d.DrainNodes(testCtx(t), []string{"n1", "n2"})
	if err != nil {
		t.Fatal(err)
	}
	evicted := 0
	for _, r := range results {
		evicted += len(r.Evicted)
	}
	if evicted != len(budget) {
		t.Errorf("evicted %d pods, want %d", evicted, len(budget))
	}
	for _, b := range []string{"a", "b"} {
		if flight.most[b] != 1 {
			t.Errorf("budget %q: %d evictions in flight at once, want 1", b, flight.most[b])
		}
	}
	if flight.mostAll < free+2 {
		t.Errorf("at most %d evictions in flight at once, want %d", flight.mostAll, free+2)
	}
	if n := d.turns.len(); n != 0 {
		t.Errorf("%d budgets still hold turns", n)
	}
}

func TestMayEvict(t *testing.T) {
	pod := newPod("default", "web", "n1")
	stale := newPDB("default", "web", webSelector(), 1)
	stale.Generation = 2
	other := newPDB("default", "other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}, 0)
	tests := []struct {
		name string
		pdbs []*policyv1.PodDisruptionBudget
		want bool
	}{
		{"no budget", nil, true},
		{"budget allows one", []*policyv1.PodDisruptionBudget{newPDB("default", "web", webSelector(), 1)}, true},
		{"budget allows none", []*policyv1.PodDisruptionBudget{newPDB("default", "web", webSelector(), 0)}, false},
		{"budget not yet processed", []*policyv1.PodDisruptionBudget{stale}, false},
		{"another budget allows none", []*policyv1.PodDisruptionBudget{newPDB("default", "web", webSelector(), 1), other}, true},
		{"two budgets", []*policyv1.PodDisruptionBudget{newPDB("default", "web", webSelector(), 1), newPDB("default", "all", &metav1.LabelSelector{}, 1)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, p := range tc.pdbs {
				objs = append(objs, p)
			}
			c := newCluster(t, nil, objs...)
			w := &pdbWatchers{client: c, syncTimeout: 10 * time.Second}
			view := w.acquire(testCtx(t), "default")
			defer w.release("default")
			if !view.waitSynced(testCtx(t), w.syncTimeout) {
				t.Fatal("PDB view did not sync")
			}
			if got := mayEvict(view, pod); got != tc.want {
				t.Errorf("mayEvict = %v, want %v", got, tc.want)
			}
			wantKey := ""
			if len(PDBsForPod(pod, view.list())) == 1 {
				wantKey = "default/web"
			}
			if got := budgetOf(view, pod); got != wantKey {
				t.Errorf("budgetOf = %q, want %q", got, wantKey)
			}
		})
	}
}

// TestPDBViewsShareOneWatch checks that the views of several namespaces
// are served by one informer of all namespaces, released with the last.
func TestPDBViewsShareOneWatch(t *testing.T) {
	c := newCluster(t, nil,
		newPDB("ns1", "web", webSelector(), 1), newPDB("ns2", "web", webSelector(), 0))
	w := &pdbWatchers{client: c, syncTimeout: 10 * time.Second}
	ctx := testCtx(t)
	v1, v2 := w.acquire(ctx, "ns1"), w.acquire(ctx, "ns2")
	for _, v := range []*nsPDBs{v1, v2} {
		if !v.waitSynced(ctx, w.syncTimeout) {
			t.Fatal("PDB view did not sync")
		}
	}
	if v1.src != v2.src || v1.src.namespace != metav1.NamespaceAll {
		t.Fatalf("views of ns1 and ns2 use sources %q and %q, want one of all namespaces", v1.src.namespace, v2.src.namespace)
	}
	if l1, l2 := v1.list(), v2.list(); len(l1) != 1 || l1[0].Namespace != "ns1" || len(l2) != 1 || l2[0].Namespace != "ns2" {
		t.Errorf("ns1 lists %v, ns2 lists %v", l1, l2)
	}
	// The informer opens its watch after the list it synced from.
	watches := 0
	for deadline := time.Now().Add(10 * time.Second); watches == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		watches = 0
		for _, a := range c.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == "poddisruptionbudgets" {
				watches++
			}
		}
	}
	if watches != 1 {
		t.Errorf("%d PDB watches, want 1", watches)
	}
	w.release("ns1")
	w.release("ns2")
	if w.all != nil || len(w.m) != 0 {
		t.Errorf("after release: source %v, views %d", w.all, len(w.m))
	}
}

func TestTurns(t *testing.T) {
	var ts turns
	ctx := testCtx(t)
	release, ok := ts.take(ctx, nil, "default/web")
	if !ok {
		t.Fatal("first take refused")
	}
	tests := []struct {
		name string
		stop func(cancel context.CancelFunc, stop chan struct{})
	}{
		{"context ends", func(cancel context.CancelFunc, _ chan struct{}) { cancel() }},
		{"pod gone", func(_ context.CancelFunc, stop chan struct{}) { close(stop) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := make(chan struct{})
			tc.stop(cancel, stop)
			if _, ok := ts.take(wctx, stop, "default/web"); ok {
				t.Fatal("took a turn held by another eviction")
			}
		})
	}
	if _, ok := ts.take(ctx, nil, ""); !ok {
		t.Error("a pod under no budget waited")
	}
	got := make(chan bool)
	go func() {
		r, ok := ts.take(ctx, nil, "default/web")
		if ok {
			r()
		}
		got <- ok
	}()
	release()
	if !<-got {
		t.Error("the next eviction did not get its turn")
	}
	if n := ts.len(); n != 0 {
		t.Errorf("%d budgets still hold turns", n)
	}
}

// heldEvictions passes evictions to the fake clientset after hold, outside
// the fake's lock, which serialises every call it serves.
type heldEvictions struct {
	kubernetes.Interface
	hold func(name string) (done func(), err error)
}

// IsWatchListSemanticsUnSupported passes on what the fake clientset says:
// informers must not wait for the streaming list's bookmark it never sends.
func (h heldEvictions) IsWatchListSemanticsUnSupported() bool { return true }

func (h heldEvictions) PolicyV1() policyv1client.PolicyV1Interface {
	return heldPolicy{h.Interface.PolicyV1(), h.hold}
}

type heldPolicy struct {
	policyv1client.PolicyV1Interface
	hold func(name string) (done func(), err error)
}

func (p heldPolicy) Evictions(ns string) policyv1client.EvictionInterface {
	return heldEviction{p.PolicyV1Interface.Evictions(ns), p.hold}
}

type heldEviction struct {
	policyv1client.EvictionInterface
	hold func(name string) (done func(), err error)
}

func (e heldEviction) Evict(ctx context.Context, ev *policyv1.Eviction) error {
	done, err := e.hold(ev.Name)
	defer done()
	if err != nil {
		return err
	}
	return e.EvictionInterface.Evict(ctx, ev)
}
