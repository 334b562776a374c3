package upgrade

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// nodeAPI makes the fake clientset's nodes keep resourceVersions as the
// API server does, which its tracker does not: every write gives the node
// a new one, and an update carrying another than the stored one is refused
// with a conflict. It counts the reads of single nodes and the conflicts,
// and can hold the node watch's events back: a cache that lags.
type nodeAPI struct {
	mu        sync.Mutex
	gets      int
	conflicts int
	// meddle, when set, is someone else's change, made to each node just
	// before the run's first update of it: a write no cache shows yet.
	meddle  func(*corev1.Node)
	meddled sets.Set[string]
	// open is closed while the watch's events flow.
	open chan struct{}
}

func strictNodes(client *fake.Clientset) *nodeAPI {
	api := &nodeAPI{meddled: sets.New[string](), open: make(chan struct{})}
	close(api.open)
	client.PrependWatchReactor("nodes", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(nodesResource, "", a.(k8stesting.WatchActionImpl).ListOptions)
		if err != nil {
			return true, nil, err
		}
		events := make(chan watch.Event)
		proxy := watch.NewProxyWatcher(events)
		go func() { // queues what it holds: the tracker's watch must not block
			defer w.Stop()
			var queue []watch.Event
			for {
				api.mu.Lock()
				open := api.open
				api.mu.Unlock()
				var out chan watch.Event
				var next watch.Event
				select {
				case <-open:
					if len(queue) > 0 {
						out, next = events, queue[0]
					}
					open = nil
				default:
				}
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					queue = append(queue, ev)
				case out <- next:
					queue = queue[1:]
				case <-open: // released
				case <-proxy.StopChan():
					return
				}
			}
		}()
		return true, proxy, nil
	})
	tracker := client.Tracker()
	patch := k8stesting.ObjectReaction(tracker)
	version := 100
	store := func(n *corev1.Node) error {
		version++
		n.ResourceVersion = strconv.Itoa(version)
		return tracker.Update(nodesResource, n, "")
	}
	// Reactors run under the fake's lock: version needs no other.
	client.PrependReactor("*", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		api.mu.Lock()
		defer api.mu.Unlock()
		switch a.GetVerb() {
		case "get":
			api.gets++
		case "update":
			n := a.(k8stesting.UpdateAction).GetObject().(*corev1.Node).DeepCopy()
			if api.meddle != nil && !api.meddled.Has(n.Name) {
				api.meddled.Insert(n.Name)
				obj, err := tracker.Get(nodesResource, "", n.Name)
				if err != nil {
					return true, nil, err
				}
				other := obj.(*corev1.Node)
				api.meddle(other)
				if err := store(other); err != nil {
					return true, nil, err
				}
			}
			obj, err := tracker.Get(nodesResource, "", n.Name)
			if err != nil {
				return true, nil, err
			}
			if rv := obj.(*corev1.Node).ResourceVersion; n.ResourceVersion != "" && n.ResourceVersion != rv {
				api.conflicts++
				return true, nil, apierrors.NewConflict(nodesResource.GroupResource(), n.Name, fmt.Errorf("resourceVersion %s is not the stored %s", n.ResourceVersion, rv))
			}
			if err := store(n); err != nil {
				return true, nil, err
			}
			return true, n, nil
		case "patch":
			_, obj, err := patch(a)
			if err != nil {
				return true, nil, err
			}
			n := obj.(*corev1.Node)
			if err := store(n); err != nil {
				return true, nil, err
			}
			return true, n, nil
		}
		return false, nil, nil
	})
	return api
}

// hold keeps the watch's events from the cache until release.
func (api *nodeAPI) hold() {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.open = make(chan struct{})
}

func (api *nodeAPI) release() {
	api.mu.Lock()
	defer api.mu.Unlock()
	select {
	case <-api.open:
	default:
		close(api.open)
	}
}

func (api *nodeAPI) reset(meddle func(*corev1.Node)) {
	api.mu.Lock()
	defer api.mu.Unlock()
	api.gets, api.conflicts, api.meddle = 0, 0, meddle
}

func (api *nodeAPI) counts() (gets, conflicts int) {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.gets, api.conflicts
}

// otherLabel is someone else's change to the nodes.
func otherLabel(n *corev1.Node) { n.Labels["team"] = "other" }

// The load-balancer exclusion after a cordon starts from the node the
// cordon returned, with a cache that does not show the cordon yet: no read
// of the node. A change of someone else's in between is kept: the cache
// shows it, and the exclusion starts from there, or it does not yet, and
// the update from the cordoned node conflicts, is read again and made once
// more.
func TestExclusionAfterCordonReadsNoNode(t *testing.T) {
	t.Parallel()
	const count = nodeWriters + 3
	for _, tc := range []struct {
		name string
		// between is someone else's change between the cordon and the
		// exclusion: shown by the cache (seen) or not yet.
		between   func(*corev1.Node)
		seen      bool
		wantGets  int // per node
		wantFails int // conflicts per node
	}{
		{name: "cordon, then exclusion"},
		{name: "someone else's change the cache does not show yet", between: otherLabel, wantGets: 1, wantFails: 1},
		{name: "someone else's change the cache shows", between: otherLabel, seen: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var objs []runtime.Object
			var names []string
			for i := range count {
				n := groupNode(fmt.Sprintf("old-%02d", i), "z1", "1")
				n.ResourceVersion = "1"
				objs = append(objs, n)
				names = append(names, n.Name)
			}
			client := fake.NewClientset(objs...)
			api := strictNodes(client)
			e, err := New(Config{Client: client, Plan: &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel}, Taint: testTaint, Out: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop, err := e.watchCluster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			api.hold()
			defer api.release()
			if err := e.nodes.setUnschedulable(ctx, names, true); err != nil {
				t.Fatal(err)
			}
			api.reset(nil)
			if tc.between != nil && tc.seen {
				api.release()
				for _, name := range names {
					if _, err := client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"other"}}}`), metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				waitForCache(ctx, t, e, names, func(n *corev1.Node) bool { return n.Labels["team"] == "other" })
			} else {
				api.reset(tc.between)
			}
			if err := e.nodes.excludeFromLoadBalancers(ctx, names); err != nil {
				t.Fatal(err)
			}
			gets, conflicts := api.counts()
			if gets != tc.wantGets*count || conflicts != tc.wantFails*count {
				t.Errorf("the exclusion of %d nodes read %d nodes and had %d conflicts, want %d and %d", count, gets, conflicts, tc.wantGets*count, tc.wantFails*count)
			}
			for name, n := range nodesIn(t, client) {
				if !n.Spec.Unschedulable {
					t.Errorf("node %q lost its cordon", name)
				}
				if n.Labels[ExcludeLBLabel] != "true" || !excludedByRun(&n) {
					t.Errorf("node %q not excluded by the run: labels %v, annotations %v", name, n.Labels, n.Annotations)
				}
				if tc.between != nil && n.Labels["team"] != "other" {
					t.Errorf("node %q lost someone else's change: labels %v", name, n.Labels)
				}
				if len(n.Status.Conditions) == 0 || n.Status.Allocatable.Cpu().IsZero() {
					t.Errorf("node %q lost its status: %+v", name, n.Status)
				}
			}
		})
	}
}

// nodesIn returns the fake cluster's nodes by name.
func nodesIn(t *testing.T, client *fake.Clientset) map[string]corev1.Node {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Node{}
	for _, n := range list.Items {
		out[n.Name] = n
	}
	return out
}

// waitForCache waits until the engine's cache shows every node as ok says.
func waitForCache(ctx context.Context, t *testing.T, e *Engine, names []string, ok func(*corev1.Node) bool) {
	t.Helper()
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, name := range names {
			obj, found, _ := e.view.nodes.GetStore().GetByKey(name)
			if !found || !ok(obj.(*corev1.Node)) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the cache does not show the change: %v", err)
	}
}

// The run remembers its writes without the status and managed fields a
// node carries (a run may touch thousands), and a remembered node serves
// once.
func TestWrittenNodesAreSlimAndServeOnce(t *testing.T) {
	t.Parallel()
	n := testNode("a", "z1", "4")
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	n.Spec.Unschedulable = true
	var w writtenNodes
	w.remember(n)
	got := w.take("a")
	switch {
	case got == nil:
		t.Fatal("the write was not remembered")
	case !got.Spec.Unschedulable || got.Labels["kubernetes.io/hostname"] != "a":
		t.Errorf("remembered %+v, want the node as written", got)
	case len(got.Status.Conditions) != 0 || len(got.Status.Allocatable) != 0 || len(got.ManagedFields) != 0:
		t.Errorf("remembered the status %+v and managed fields %v", got.Status, got.ManagedFields)
	}
	if len(n.Status.Conditions) == 0 {
		t.Error("remembering took the status off the written node itself")
	}
	if again := w.take("a"); again != nil {
		t.Errorf("a remembered node served twice")
	}
	w.remember(n)
	w.forget("a")
	if gone := w.take("a"); gone != nil {
		t.Errorf("a forgotten node served")
	}
}
