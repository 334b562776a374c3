// Package clusterautoscaler plays a small Kubernetes cluster autoscaler
// against a simulated cloud's groups, for tests and the demo: it grows a
// group for pods the scheduler cannot place and removes cordoned, empty
// nodes with the group's size lowered. The cloud side is an interface
// (Cloud), which each local cloud endpoint (sim/awsfake, sim/gcefake)
// implements with its own API's calls.
package clusterautoscaler

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// SafeToEvictAnnotation set to "false" on a pod keeps the cluster
// autoscaler from removing its node.
const SafeToEvictAnnotation = "cluster-autoscaler.kubernetes.io/safe-to-evict"

// Cloud is what the autoscaler needs of a cloud's groups.
type Cloud interface {
	// Changed is closed at the cloud's next change.
	Changed() <-chan struct{}
	// Group snapshots a group that can launch now (not being deleted);
	// false when there is none.
	Group(name string) (Group, bool)
	// Machine finds the machine a node's provider ID names; false when
	// it belongs to no group or is not in service.
	Machine(providerID string) (Machine, bool)
	// Raise adds up to n to a group's desired size, not past its max.
	Raise(group string, n int) (from, to int, ok bool)
	// Remove deletes an in-service machine and lowers its group's desired
	// size by one; it fails when the group is at its min.
	Remove(m Machine) error
}

// Group is a snapshot of a group.
type Group struct {
	Name         string
	Desired, Max int
	// Zones match the topology.kubernetes.io/zone of a nodeSelector.
	Zones []string
	// Labels are those a node it launched now would get.
	Labels map[string]string
	// Machines are those launching or in service, by their node's
	// provider ID.
	Machines []string
}

// Machine is a machine in service.
type Machine struct {
	ID, Group string
}

// Options configure Run.
type Options struct {
	// ScaleUpGroups may be scaled up for pending pods; a pod counts for
	// the first of them (below its max) whose nodes it selects.
	ScaleUpGroups []string
	// ScaleDownGroups may lose nodes that are cordoned and empty.
	ScaleDownGroups []string
	// Namespaces limits the pending pods that cause scale-ups; none means
	// all. Scale-down looks at the pods of every namespace.
	Namespaces []string
	// PodsPerNode is how many pending pods a new node is for, and how many
	// pods a Ready, schedulable node of the group is taken to hold; default
	// 10.
	PodsPerNode int
	// ScaleDownDelay is how long a node must stay cordoned and empty before
	// it is removed; default 10s.
	ScaleDownDelay time.Duration
	// Logf gets one line per decision; default none.
	Logf func(format string, args ...any)
}

// Run plays the autoscaler against c until ctx ends; it returns an error
// only if it cannot start.
//
// Scale-up: pods that the scheduler found Unschedulable and whose
// nodeSelector matches the labels a new node of a group in ScaleUpGroups
// gets (topology.kubernetes.io/zone matches any of its zones) raise that
// group's desired size, up to its max, by one node per PodsPerNode pods.
// Pods that fit in the room left on the group's Ready, schedulable nodes
// (PodsPerNode each) or on its nodes still to come are not counted again,
// so a scale-up is not repeated while nodes come up or the scheduler
// catches up. Node affinity, taints and resources are not looked at.
//
// Scale-down: a node of a group in ScaleDownGroups that is cordoned and
// has had, for ScaleDownDelay, no pods but DaemonSet and mirror pods (and
// none annotated SafeToEvictAnnotation=false) is removed with the group's
// desired size lowered; a group at its min keeps its nodes.
//
// Nodes and pods come from informers (one list, then a watch); the cloud's
// own changes and the next scale-down deadline also wake it.
func Run(ctx context.Context, c kubernetes.Interface, cloud Cloud, opts Options) error {
	if opts.PodsPerNode <= 0 {
		opts.PodsPerNode = 10
	}
	if opts.ScaleDownDelay <= 0 {
		opts.ScaleDownDelay = 10 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(c, 0)
	nodeInf := f.Core().V1().Nodes().Informer()
	podInf := f.Core().V1().Pods().Informer()
	kick := make(chan struct{}, 1)
	if err := watch(nodeInf, podInf, kick); err != nil {
		cancel()
		return fmt.Errorf("autoscaler: %w", err)
	}
	f.Start(ctx.Done())
	// cancel first: Shutdown waits for the informers, which stop on it.
	defer func() {
		cancel()
		f.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), nodeInf.HasSynced, podInf.HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("autoscaler: informers did not sync")
	}
	a := &autoscaler{
		cloud: cloud, opts: opts, nodes: nodeInf.GetStore(), pods: podInf.GetIndexer(),
		emptySince: map[string]time.Time{}, blocked: map[string]bool{},
	}
	a.loop(ctx, kick)
	return nil
}

// watch indexes pods by node and has every change of either kick.
func watch(nodeInf, podInf cache.SharedIndexInformer, kick chan struct{}) error {
	if err := podInf.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{nodeInf, podInf} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

// loop steps on every change of the cluster or the cloud and at the next
// scale-down deadline, until ctx ends.
func (a *autoscaler) loop(ctx context.Context, kick <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		changed := a.cloud.Changed()
		next := a.step(time.Now())
		timer.Stop()
		var deadline <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			deadline = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-changed:
		case <-deadline:
		}
	}
}

const podNodeIndex = "spec.nodeName"

type autoscaler struct {
	cloud Cloud
	opts  Options
	nodes cache.Store
	pods  cache.Indexer

	emptySince map[string]time.Time // node name: when it was first seen cordoned and empty
	blocked    map[string]bool      // nodes whose removal failed, logged once
}

// step makes the decisions the current state calls for and returns when
// it next needs a look without an event (zero: not before one).
func (a *autoscaler) step(now time.Time) time.Time {
	byProviderID := map[string]*corev1.Node{}
	for _, o := range a.nodes.List() {
		n := o.(*corev1.Node)
		if n.Spec.ProviderID != "" {
			byProviderID[n.Spec.ProviderID] = n
		}
	}
	a.scaleUp(byProviderID)
	return a.scaleDown(now, byProviderID)
}

type upCandidate struct {
	g       Group
	pending int
}

func (a *autoscaler) scaleUp(byProviderID map[string]*corev1.Node) {
	var cands []*upCandidate
	for _, name := range a.opts.ScaleUpGroups {
		if g, ok := a.cloud.Group(name); ok {
			cands = append(cands, &upCandidate{g: g})
		}
	}
	if len(cands) == 0 {
		return
	}
	for _, o := range a.pods.List() {
		p := o.(*corev1.Pod)
		// DaemonSet pods wait for their own node, never for a new one.
		if !unschedulable(p) || daemonOrMirror(p) || (len(a.opts.Namespaces) > 0 && !slices.Contains(a.opts.Namespaces, p.Namespace)) {
			continue
		}
		for _, c := range cands {
			if c.g.Desired < c.g.Max && selects(p.Spec.NodeSelector, c.g.Labels, c.g.Zones) {
				c.pending++
				break
			}
		}
	}
	for _, c := range cands {
		if c.pending == 0 {
			continue
		}
		need := a.nodesNeeded(c, byProviderID)
		if need <= 0 {
			continue
		}
		if from, to, ok := a.cloud.Raise(c.g.Name, need); ok {
			a.opts.Logf("cluster autoscaler: %d pending pods for group %s: desired %d -> %d", c.pending, c.g.Name, from, to)
		}
	}
}

// nodesNeeded is how many nodes more the group's pending pods need, past
// the free slots on its Ready, schedulable nodes and whole nodes for the
// machines not launched or not Ready yet.
func (a *autoscaler) nodesNeeded(c *upCandidate, byProviderID map[string]*corev1.Node) int {
	per := a.opts.PodsPerNode
	free, upcoming := 0, c.g.Desired
	for _, id := range c.g.Machines {
		n := byProviderID[id]
		if n == nil || !nodeReady(n) {
			continue // still upcoming
		}
		upcoming--
		if !n.Spec.Unschedulable {
			free += max(0, per-a.podsOn(n.Name))
		}
	}
	rest := c.pending - free - max(0, upcoming)*per
	if rest <= 0 {
		return 0
	}
	return (rest + per - 1) / per
}

// unschedulable reports a pod the scheduler has tried and failed to place.
func unschedulable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// selects reports whether a nodeSelector matches a group's node labels;
// the zone label matches any of the group's zones.
func selects(sel, labels map[string]string, zones []string) bool {
	for k, v := range sel {
		if k == scenario.ZoneLabel {
			if !slices.Contains(zones, v) {
				return false
			}
			continue
		}
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// podsOn counts the pods on a node that take a slot: running or to run,
// and neither DaemonSet nor mirror pods.
func (a *autoscaler) podsOn(node string) int {
	objs, _ := a.pods.ByIndex(podNodeIndex, node)
	n := 0
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if !terminal(p) && !daemonOrMirror(p) {
			n++
		}
	}
	return n
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func daemonOrMirror(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, r := range p.OwnerReferences {
		if r.Controller != nil && *r.Controller && r.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// removable reports whether nothing on the node keeps it: only DaemonSet,
// mirror and finished pods, none of them marked not safe to evict.
func (a *autoscaler) removable(node string) bool {
	objs, _ := a.pods.ByIndex(podNodeIndex, node)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if terminal(p) {
			continue
		}
		if p.Annotations[SafeToEvictAnnotation] == "false" || !daemonOrMirror(p) {
			return false
		}
	}
	return true
}

func (a *autoscaler) scaleDown(now time.Time, byProviderID map[string]*corev1.Node) time.Time {
	var next time.Time
	seen := map[string]bool{}
	for id, n := range byProviderID {
		m, ok := a.cloud.Machine(id)
		if !ok || !slices.Contains(a.opts.ScaleDownGroups, m.Group) || !n.Spec.Unschedulable || !a.removable(n.Name) {
			continue
		}
		seen[n.Name] = true
		since, ok := a.emptySince[n.Name]
		if !ok {
			since = now
			a.emptySince[n.Name] = now
		}
		if due := since.Add(a.opts.ScaleDownDelay); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		a.remove(n.Name, m)
	}
	// A node that got a pod, was uncordoned or went away starts over.
	for name := range a.emptySince {
		if !seen[name] {
			delete(a.emptySince, name)
			delete(a.blocked, name)
		}
	}
	return next
}

func (a *autoscaler) remove(node string, m Machine) {
	if err := a.cloud.Remove(m); err != nil {
		// Most likely the group is at its min; a change of the group
		// wakes us to try again.
		if !a.blocked[node] {
			a.opts.Logf("cluster autoscaler: cannot remove node %s (%s in %s): %v", node, m.ID, m.Group, err)
			a.blocked[node] = true
		}
		return
	}
	a.opts.Logf("cluster autoscaler: removed empty node %s (%s in %s)", node, m.ID, m.Group)
	delete(a.emptySince, node)
	delete(a.blocked, node)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
