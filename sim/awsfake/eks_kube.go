package awsfake

// What EKS does to the nodes of a managed node group, through the
// Kubernetes API. The drain is kubectl's library (k8s.io/kubectl/pkg/drain),
// never the plugin's: the fake stands for EKS, whose code the plugin
// under test does not share.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/drain"
)

// ExcludeLBLabel takes a node out of external load balancers; the update
// puts it on the nodes it will replace with the unschedulable taint, so
// that the service controller stops sending them traffic before they go
// (User Guide, managed-node-update-behavior, Upgrade phase step 3; since
// Kubernetes 1.19 a cordon alone no longer does this).
const ExcludeLBLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

// errEvictionTimeout is behind a drain whose pods did not all leave in
// time.
var errEvictionTimeout = errors.New("pods not evicted in time")

// nodeName is the name of an instance's node.
func (s *Server) nodeName(in Instance) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes != nil {
		return s.nodes.NodeName(in)
	}
	return in.PrivateDNS
}

// retirement says how an instance leaves its group.
type retirement struct {
	evictFor  time.Duration // how long its pods may take to leave
	force     bool          // delete the pods that did not leave, and go on
	decrement bool          // the group's desired size goes down with it
	wait      bool          // cordon, then wait CordonWait before terminating
}

// retire drains an instance's node, cordons it and terminates the
// instance (Upgrade phase steps 2 to 4); it returns the node's name.
func (s *Server) retire(ctx context.Context, in Instance, how retirement) (string, error) {
	name := s.nodeName(in)
	if s.kube != nil {
		if err := s.drainNode(ctx, name, how.evictFor, how.force); err != nil {
			return name, err
		}
		if err := s.patchNode(ctx, name, func(n *corev1.Node) { n.Spec.Unschedulable = true }); err != nil {
			return name, err
		}
	}
	if how.wait {
		select {
		case <-ctx.Done():
			return name, ctx.Err()
		case <-time.After(s.eksOpts().CordonWait):
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.instances[in.ID]; cur == nil || !active(cur) {
		return name, nil // gone already
	}
	_, err := s.terminateInGroupLocked(in.ID, how.decrement)
	return name, err
}

// drainNode evicts the node's pods (DaemonSet pods stay), honouring
// PodDisruptionBudgets, retrying refused evictions until evictFor has
// passed (Upgrade phase step 2). Then, with force, what is left is deleted
// and the drain succeeds; without, it fails with errEvictionTimeout.
func (s *Server) drainNode(ctx context.Context, node string, evictFor time.Duration, force bool) error {
	h := &drain.Helper{
		Ctx: ctx, Client: s.kube, Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		GracePeriodSeconds: -1, EvictErrorRetryDelay: s.eksOpts().EvictRetry, Out: io.Discard, ErrOut: io.Discard,
	}
	deadline := time.Now().Add(evictFor)
	var err error
	for left := evictFor; left > 0; left = time.Until(deadline) {
		h.Timeout = left
		if err = evictAll(h, node); err == nil || ctx.Err() != nil {
			return err
		}
		// A refusal other than a PDB's 429 (two PDBs over one pod) is
		// retried too: EKS fails only when its time is up.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(s.eksOpts().EvictRetry, max(time.Until(deadline), 0))):
		}
	}
	if !force {
		return fmt.Errorf("%w: node %q: %v", errEvictionTimeout, node, err)
	}
	h.DisableEviction, h.Timeout = true, time.Minute
	return evictAll(h, node)
}

// evictAll evicts (or deletes) every pod the helper would on the node.
func evictAll(h *drain.Helper, node string) error {
	list, errs := h.GetPodsForDeletion(node)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return h.DeleteOrEvictPods(list.Pods())
}

// patchNode changes a node, retrying on conflicts; a node that is gone
// is left alone.
func (s *Server) patchNode(ctx context.Context, name string, change func(*corev1.Node)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := s.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = s.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// taintOld puts eks.amazonaws.com/nodegroup=unschedulable:NoSchedule and
// the load balancer exclusion on every node of the group that lacks the
// update's labels, never on one that has them (Scale up phase step 3).
func (s *Server) taintOld(ctx context.Context, asg string, current func(Instance) bool) error {
	if s.kube == nil {
		return nil
	}
	taint := corev1.Taint{Key: NodeGroupLabel, Value: UnschedulableTaintValue, Effect: corev1.TaintEffectNoSchedule}
	for _, in := range s.oldInstances(asg, current) {
		err := s.patchNode(ctx, s.nodeName(in), func(n *corev1.Node) {
			if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) }) {
				n.Spec.Taints = append(n.Spec.Taints, taint)
			}
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[ExcludeLBLabel] = "true"
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitNodes waits until the node group's Auto Scaling group has its
// desired instances in service, every zone with instances has a current
// one, and every current instance has a Ready node with its labels (Scale
// up phase step 2). On ctx's end it returns the instances still missing.
func (s *Server) waitNodes(ctx context.Context, cluster, name string, current func(Instance) bool) ([]string, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		ng, err := s.nodegroupArg(cluster, name)
		asg := ""
		if err == nil {
			asg = ng.asg
		}
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		missing, ready := s.notReady(ctx, asg, current)
		if ready {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return missing, ctx.Err()
		case <-ch:
		case <-time.After(250 * time.Millisecond): // nodes change without the Server knowing
		}
	}
}

// notReady lists the instances waitNodes still waits for, and reports
// whether it is done waiting.
func (s *Server) notReady(ctx context.Context, asg string, current func(Instance) bool) ([]string, bool) {
	g, _ := s.Group(asg)
	nodes := s.nodesOf(ctx, g)
	var missing []string
	zones := map[string]bool{}
	for _, in := range g.Instances {
		zones[in.Zone] = zones[in.Zone] || (current(in) && in.Lifecycle == LifecycleInService)
		switch {
		case in.Lifecycle == LifecyclePending:
			missing = append(missing, in.ID)
		case in.Lifecycle != LifecycleInService || !current(in):
		case nodes != nil && !nodeCarries(nodes[s.nodeName(in)], in.NodeLabels):
			missing = append(missing, in.ID)
		}
	}
	ready := len(missing) == 0 && Stable(g)
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		ready = ready && zones[z]
	}
	return missing, ready
}

// nodesOf lists the nodes of the group's instances by name; nil without
// a cluster.
func (s *Server) nodesOf(ctx context.Context, g Group) map[string]*corev1.Node {
	if s.kube == nil {
		return nil
	}
	out := map[string]*corev1.Node{}
	list, err := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out // nothing counts as Ready until the list works
	}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// nodeCarries reports whether a node is Ready with the labels.
func nodeCarries(n *corev1.Node, labels map[string]string) bool {
	if n == nil || !nodeReady(n) {
		return false
	}
	for k, v := range labels {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

// relabelNodes puts the node group's labels and taints on its nodes and
// takes off those removed.
func (s *Server) relabelNodes(ctx context.Context, cluster, name string, removeLabels []string, removeTaints []Taint) error {
	if s.kube == nil {
		return nil
	}
	s.mu.Lock()
	ng, err := s.nodegroupArg(cluster, name)
	var labels map[string]string
	var taints []Taint
	if err == nil {
		labels, taints = maps.Clone(ng.Labels), slices.Clone(ng.Taints)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	list, err := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeGroupLabel + "=" + name})
	if err != nil {
		return err
	}
	for _, n := range list.Items {
		if err := s.patchNode(ctx, n.Name, func(n *corev1.Node) { applyNodeConfig(n, labels, taints, removeLabels, removeTaints) }); err != nil {
			return err
		}
	}
	return nil
}

func applyNodeConfig(n *corev1.Node, labels map[string]string, taints []Taint, removeLabels []string, removeTaints []Taint) {
	for _, k := range removeLabels {
		delete(n.Labels, k)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	maps.Copy(n.Labels, labels)
	for _, t := range append(slices.Clone(taints), removeTaints...) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(o corev1.Taint) bool {
			return o.Key == t.Key && o.Effect == taintEffects[t.Effect]
		})
	}
	for _, t := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: taintEffects[t.Effect]})
	}
}

// recordForced records the pods a delete's drain finds on the group's
// nodes, as kubectl's drain would move them (DaemonSet pods stay).
func (s *Server) recordForced(cluster, name string, g Group) {
	pods := []string{}
	if s.kube != nil {
		h := &drain.Helper{Ctx: s.ctx, Client: s.kube, Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true, Out: io.Discard, ErrOut: io.Discard}
		for _, in := range g.Instances {
			list, _ := h.GetPodsForDeletion(s.nodeName(in))
			if list == nil {
				continue
			}
			for _, p := range list.Pods() {
				pods = append(pods, p.Namespace+"/"+p.Name)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.eks()
	if st.forced == nil {
		st.forced = map[string][]string{}
	}
	st.forced[cluster+"/"+name] = pods
}
