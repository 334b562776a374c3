package upgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeWriters bounds the node writes in flight: enough that tainting a few
// hundred nodes takes seconds, few enough not to flood the API server.
const nodeWriters = 16

// forEachNode calls fn for every node, nodeWriters at a time; the first
// error stops the rest and is returned.
func (e *Engine) forEachNode(ctx context.Context, names []string, fn func(ctx context.Context, name string) error) error {
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
func (e *Engine) updateNode(ctx context.Context, name string, change func(*corev1.Node) bool) (bool, error) {
	var node *corev1.Node
	if obj, ok, _ := e.view.nodes.GetStore().GetByKey(name); ok {
		node = obj.(*corev1.Node).DeepCopy()
	}
	return e.updateNodeFrom(ctx, name, node, change)
}

// updateNodeFrom is updateNode starting from node, or from the server when
// node is nil: taking off a mark the run made a moment ago must not trust
// a cache that may not show it yet.
func (e *Engine) updateNodeFrom(ctx context.Context, name string, node *corev1.Node, change func(*corev1.Node) bool) (bool, error) {
	for attempt := 0; ; attempt++ {
		if node == nil {
			n, err := e.cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
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
		_, err := e.cfg.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
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
func (e *Engine) excludeFromLoadBalancers(ctx context.Context, names []string) error {
	return e.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		// From the server: the cache may not show the cordon just made,
		// and an update from it would take that off again.
		_, err := e.updateNodeFrom(ctx, name, nil, func(n *corev1.Node) bool {
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

// releaseMarks takes the run's taint and load-balancer exclusion off the
// nodes, and their cordon where ownCordon says the run made it, reading
// each node from the server, and records an Event of reason on each node
// it changed. It returns them.
func (e *Engine) releaseMarks(ctx context.Context, names []string, ownCordon func(*corev1.Node) bool, reason, message string) ([]string, error) {
	var mu sync.Mutex
	var released []string
	err := e.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		changed, err := e.updateNodeFrom(ctx, name, nil, func(n *corev1.Node) bool {
			tainted := slices.ContainsFunc(n.Spec.Taints, e.isOurTaint)
			cordoned := n.Spec.Unschedulable && ownCordon(n)
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, e.isOurTaint)
			if cordoned {
				n.Spec.Unschedulable = false
			}
			excluded := includeInLoadBalancers(n)
			return tainted || cordoned || excluded
		})
		if err != nil {
			return fmt.Errorf("error when untainting node %q: %w", name, err)
		}
		if changed {
			e.cfg.Events.Node(ctx, name, corev1.EventTypeNormal, reason, "%s", message)
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
func (e *Engine) setUnschedulable(ctx context.Context, names []string, on bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)
	verb := "cordoning"
	if !on {
		verb = "uncordoning"
	}
	return e.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		if err := e.patchNode(ctx, name, patch); err != nil {
			return fmt.Errorf("error when %s node %q: %w", verb, name, err)
		}
		return nil
	})
}

// annotateNodes sets an annotation on the nodes, or removes it (value nil).
func (e *Engine) annotateNodes(ctx context.Context, names []string, key string, value *string) error {
	var v any
	if value != nil {
		v = *value
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	return e.forEachNode(ctx, names, func(ctx context.Context, name string) error {
		if err := e.patchNode(ctx, name, patch); err != nil {
			return fmt.Errorf("error when annotating node %q: %w", name, err)
		}
		return nil
	})
}

// patchNode merge-patches a node; a node that is gone needs nothing.
func (e *Engine) patchNode(ctx context.Context, name string, patch []byte) error {
	_, err := e.cfg.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
