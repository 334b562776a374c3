package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// nodeWriters bounds the node writes in flight: enough that tainting a few
// hundred nodes takes seconds, few enough not to flood the API server.
const nodeWriters = 16

// nodeWriter reads the run's nodes from the watch cache and writes them
// (taints, cordons, annotations, load-balancer exclusions), remembering
// what its last write returned. view is set once the run watches the
// cluster.
type nodeWriter struct {
	client  kubernetes.Interface
	plan    *plan.Plan
	record  *state.Record
	taint   corev1.Taint
	events  *Recorder
	view    *clusterView
	written writtenNodes
	logf    func(format string, args ...any)
}

// forEachNode calls fn for every node, nodeWriters at a time; the first
// error stops the rest and is returned.
func (nw *nodeWriter) forEachNode(ctx context.Context, names []string, fn func(ctx context.Context, name string) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(nodeWriters)
	for _, name := range names {
		g.Go(func() error { return fn(ctx, name) })
	}
	return g.Wait()
}

// updateNode applies change to a node and writes it when change says it
// changed something. It starts from the watch cache and reads the node
// again only on a conflict, so an unchanged node costs no request. A node
// that is gone is not an error: there is nothing left to change.
func (nw *nodeWriter) updateNode(ctx context.Context, name string, change func(*corev1.Node) bool) (bool, error) {
	var node *corev1.Node
	if obj, ok, _ := nw.view.nodes.GetStore().GetByKey(name); ok {
		node = obj.(*corev1.Node).DeepCopy()
	}
	return nw.updateNodeFrom(ctx, name, node, change)
}

// updateNodeFrom is updateNode starting from node, or from the server when
// node is nil. The update carries node's resourceVersion: the API server
// refuses one from a stale node (one that misses a change made since, the
// run's own included) with a conflict, and the node is read again, so a
// stale start costs requests, never a change. (The fake clientset does not
// check resourceVersions: tests that rely on it add a reactor that does.)
// The node the update returns is remembered for the run's next write.
func (nw *nodeWriter) updateNodeFrom(ctx context.Context, name string, node *corev1.Node, change func(*corev1.Node) bool) (bool, error) {
	for attempt := 0; ; attempt++ {
		if node == nil {
			n, err := nw.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			node = n
		}
		if !change(node) {
			return false, nil
		}
		updated, err := nw.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		switch {
		case err == nil:
			nw.written.remember(updated)
			return true, nil
		case apierrors.IsNotFound(err):
			nw.written.forget(name)
			return false, nil
		case apierrors.IsConflict(err) && attempt < 5:
			node = nil // read it again
		default:
			return false, err
		}
	}
}

// ExcludeLBLabel takes a node out of the service controller's load
// balancers; since Kubernetes 1.19 a cordon no longer does.
const ExcludeLBLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

// ExcludedByRunAnnotation says the run set ExcludeLBLabel, so only the
// label the run set is taken off again: one the node carried before the
// run is someone else's and stays.
const ExcludedByRunAnnotation = "nodeupgrade.dev/excluded-from-load-balancers"

// excludedByRun reports whether the run set the node's ExcludeLBLabel.
func excludedByRun(n *corev1.Node) bool {
	_, ok := n.Annotations[ExcludedByRunAnnotation]
	return ok
}

// excludeFromLoadBalancers labels the nodes about to be drained for
// removal with ExcludeLBLabel, so the load balancers stop sending them
// traffic before --post-drain-wait ends; a node that has the label already
// is left as it is, unmarked.
func (nw *nodeWriter) excludeFromLoadBalancers(ctx context.Context, names []string) error {
	return nw.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		// From the node as the run's last write to it returned it (the
		// cordon just made) where the cache does not show a newer one: the
		// cache may not show that write yet, and an update from a node
		// without it is refused with a conflict, a round trip lost.
		_, err := nw.updateNodeFrom(ctx, name, nw.lastKnown(name), func(n *corev1.Node) bool {
			if _, has := n.Labels[ExcludeLBLabel]; has {
				return false
			}
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Labels[ExcludeLBLabel] = "true"
			n.Annotations[ExcludedByRunAnnotation] = "true"
			return true
		})
		if err != nil {
			return fmt.Errorf("error when labelling node %q %s=true: %w", name, ExcludeLBLabel, err)
		}
		return nil
	})
}

// includeInLoadBalancers takes the run's ExcludeLBLabel off a node; it
// says whether there was one.
func includeInLoadBalancers(n *corev1.Node) bool {
	if !excludedByRun(n) {
		return false
	}
	delete(n.Labels, ExcludeLBLabel)
	delete(n.Annotations, ExcludedByRunAnnotation)
	return true
}

// releaseMarks takes the run's taint, load-balancer exclusion and
// quarantine label off the nodes, and their cordon where ownCordon says
// the run made it, reading each node from the server, and records an
// Event of reason on each node it changed. It returns them.
func (nw *nodeWriter) releaseMarks(ctx context.Context, names []string, ownCordon func(*corev1.Node) bool, reason, message string) ([]string, error) {
	var mu sync.Mutex
	var released []string
	err := nw.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		changed, err := nw.updateNodeFrom(ctx, name, nil, func(n *corev1.Node) bool {
			tainted := slices.ContainsFunc(n.Spec.Taints, nw.isOurTaint)
			cordoned := n.Spec.Unschedulable && ownCordon(n)
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, nw.isOurTaint)
			if cordoned {
				n.Spec.Unschedulable = false
			}
			excluded := includeInLoadBalancers(n)
			lifted := liftQuarantine(n)
			return tainted || cordoned || excluded || lifted
		})
		if err != nil {
			return fmt.Errorf("error when untainting node %q: %w", name, err)
		}
		if changed {
			nw.events.Node(ctx, name, corev1.EventTypeNormal, reason, "%s", message)
			mu.Lock()
			released = append(released, name)
			mu.Unlock()
		}
		return nil
	})
	slices.Sort(released)
	return released, err
}

// setUnschedulable cordons (on) or uncordons the nodes.
func (nw *nodeWriter) setUnschedulable(ctx context.Context, names []string, on bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)
	verb := "cordoning"
	if !on {
		verb = "uncordoning"
	}
	return nw.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		if err := nw.patchNode(ctx, name, patch); err != nil {
			return fmt.Errorf("error when %s node %q: %w", verb, name, err)
		}
		return nil
	})
}

// annotateNodes sets an annotation on the nodes, or removes it (value nil).
func (nw *nodeWriter) annotateNodes(ctx context.Context, names []string, key string, value *string) error {
	var v any
	if value != nil {
		v = *value
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	return nw.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		if err := nw.patchNode(ctx, name, patch); err != nil {
			return fmt.Errorf("error when annotating node %q: %w", name, err)
		}
		return nil
	})
}

// patchNode merge-patches a node; a node that is gone needs nothing. The
// node the patch returns is remembered for the run's next write.
func (nw *nodeWriter) patchNode(ctx context.Context, name string, patch []byte) error {
	patched, err := nw.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case err == nil:
		nw.written.remember(patched)
	case apierrors.IsNotFound(err):
		nw.written.forget(name)
		return nil
	}
	return err
}

// writtenNodes are nodes as the run's own last write to each returned
// them, by name, without their status (the API server ignores the status
// of a node's update and keeps its own) or managed fields (an update
// without them keeps the node's): a run may touch thousands of nodes.
// Writes from parallel goroutines (forEachNode) share it.
type writtenNodes struct {
	mu    sync.Mutex
	nodes map[string]*corev1.Node
}

func (w *writtenNodes) remember(n *corev1.Node) {
	if n == nil || n.Name == "" {
		return
	}
	slim := *n
	slim.Status, slim.ManagedFields = corev1.NodeStatus{}, nil
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nodes == nil {
		w.nodes = map[string]*corev1.Node{}
	}
	w.nodes[n.Name] = &slim
}

// take returns the node name as the run last wrote it, or nil, and drops
// it: the caller owns it.
func (w *writtenNodes) take(name string) *corev1.Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.nodes[name]
	delete(w.nodes, name)
	return n
}

// forget drops the node name (gone, or removed by the run).
func (w *writtenNodes) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.nodes, name)
}

// lastKnown is the node to update name from: as the run's last write to
// it returned it, unless the cache shows a newer one (a write of someone
// else's since, which that one would conflict with); the cache's where
// the run wrote none; nil where neither has it (read from the server).
// ResourceVersions of one resource compare as integers (apimachinery's
// resourceversion); where one does not parse, the run's write is taken.
// The status the remembered node lacks comes from the cache: the API
// server ignores it, the fake clientset would store it empty.
func (nw *nodeWriter) lastKnown(name string) *corev1.Node {
	written := nw.written.take(name)
	var cached *corev1.Node
	if nw.view != nil {
		if obj, ok, _ := nw.view.nodes.GetStore().GetByKey(name); ok {
			cached = obj.(*corev1.Node)
		}
	}
	switch {
	case cached == nil:
		return written
	case written == nil:
		return cached.DeepCopy()
	}
	if newer, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, written.ResourceVersion); err == nil && newer > 0 {
		return cached.DeepCopy()
	}
	cached.Status.DeepCopyInto(&written.Status)
	return written
}

// groupNodes returns the group's nodes from the informer cache.
func (nw *nodeWriter) groupNodes() ([]*corev1.Node, error) {
	sel, err := nw.plan.GroupSelector()
	if err != nil {
		return nil, err
	}
	return nw.nodesMatching(sel), nil
}

// nodesMatching returns the cached nodes a selector selects, by name.
func (nw *nodeWriter) nodesMatching(sel labels.Selector) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nw.view.allNodes() {
		if sel.Matches(labels.Set(n.Labels)) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (nw *nodeWriter) nodeExists(name string) bool {
	_, ok, _ := nw.view.nodes.GetStore().GetByKey(name)
	return ok
}
