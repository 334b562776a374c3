package awsfake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// AutoscalerOptions configure RunAutoscaler.
type AutoscalerOptions struct {
	// Nodes is how the Server's instances are labelled as nodes (the
	// NodeOptions given to StartWithKube or KubeNodes); nil means those
	// StartWithKube was given, else the defaults.
	Nodes *NodeOptions
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
	// Logf gets one line per decision; default the Server's Options.Logf.
	Logf func(format string, args ...any)
}

// RunAutoscaler plays a small cluster autoscaler against this Server's
// groups until ctx ends; it returns an error only if it cannot start.
//
// Scale-up: pods that the scheduler found Unschedulable and whose
// nodeSelector matches the labels the nodes of a group in ScaleUpGroups
// get (NodeOptions.NodeLabels of an instance from the group's launch
// template; topology.kubernetes.io/zone matches any of its zones) raise
// that group's desired capacity, up to its max, by one node per
// PodsPerNode pods. Pods that fit in the room left on the group's Ready,
// schedulable nodes (PodsPerNode each) or on its nodes still to come are
// not counted again, so a scale-up is not repeated while nodes come up or
// the scheduler catches up. Node affinity, taints and resources are not
// looked at.
//
// Scale-down: a node of a group in ScaleDownGroups that is cordoned and
// has had, for ScaleDownDelay, no pods but DaemonSet and mirror pods (and
// none annotated SafeToEvictAnnotation=false) is terminated with the
// desired capacity decremented, as TerminateInstanceInAutoScalingGroup
// does; a group at its min keeps its nodes.
//
// Nodes and pods come from informers (one list, then a watch); the Server's
// own changes and the next scale-down deadline also wake it.
func (s *Server) RunAutoscaler(ctx context.Context, c kubernetes.Interface, opts AutoscalerOptions) error {
	if opts.PodsPerNode <= 0 {
		opts.PodsPerNode = 10
	}
	if opts.ScaleDownDelay <= 0 {
		opts.ScaleDownDelay = 10 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = s.logf
	}
	if opts.Nodes == nil {
		s.mu.Lock()
		n := NodeOptions{}
		if s.nodes != nil {
			n = *s.nodes
		}
		s.mu.Unlock()
		opts.Nodes = &n
	}

	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(c, 0)
	nodeInf := f.Core().V1().Nodes().Informer()
	podInf := f.Core().V1().Pods().Informer()
	if err := podInf.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		cancel()
		return fmt.Errorf("autoscaler: %w", err)
	}
	kick := make(chan struct{}, 1)
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
			cancel()
			return fmt.Errorf("autoscaler: %w", err)
		}
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
		s: s, opts: opts, nodes: nodeInf.GetStore(), pods: podInf.GetIndexer(),
		emptySince: map[string]time.Time{}, blocked: map[string]bool{},
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		next := a.step(time.Now())
		timer.Stop()
		var deadline <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			deadline = timer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-changed:
		case <-deadline:
		}
	}
}

const podNodeIndex = "spec.nodeName"

type autoscaler struct {
	s     *Server
	opts  AutoscalerOptions
	nodes cache.Store
	pods  cache.Indexer

	emptySince map[string]time.Time // node name: when it was first seen cordoned and empty
	blocked    map[string]bool      // nodes whose removal failed, logged once
}

// step makes the decisions the current state calls for and returns when
// it next needs a look without an event (zero: not before one).
func (a *autoscaler) step(now time.Time) time.Time {
	byID := map[string]*corev1.Node{}
	for _, o := range a.nodes.List() {
		n := o.(*corev1.Node)
		if id := instanceID(n.Spec.ProviderID); id != "" {
			byID[id] = n
		}
	}
	a.scaleUp(byID)
	return a.scaleDown(now, byID)
}

// instanceID reads the instance id out of a provider ID aws:///zone/i-...
func instanceID(providerID string) string {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return ""
	}
	id := rest[strings.LastIndex(rest, "/")+1:]
	if !strings.HasPrefix(id, "i-") {
		return ""
	}
	return id
}

type upCandidate struct {
	g       Group
	labels  map[string]string
	pending int
}

func (a *autoscaler) scaleUp(byID map[string]*corev1.Node) {
	var cands []*upCandidate
	for _, name := range a.opts.ScaleUpGroups {
		if g, labels, ok := a.s.templateLabels(name, *a.opts.Nodes); ok {
			cands = append(cands, &upCandidate{g: g, labels: labels})
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
			if c.g.Desired < c.g.Max && selects(p.Spec.NodeSelector, c.labels, c.g.Zones) {
				c.pending++
				break
			}
		}
	}
	per := a.opts.PodsPerNode
	for _, c := range cands {
		if c.pending == 0 {
			continue
		}
		// Room: free slots on Ready, schedulable nodes, and whole nodes
		// for the instances not launched or not Ready yet.
		free, upcoming := 0, int(c.g.Desired)
		for _, in := range c.g.Instances {
			if in.Lifecycle != LifecyclePending && in.Lifecycle != LifecycleInService {
				continue
			}
			n := byID[in.ID]
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
			continue
		}
		need := int32((rest + per - 1) / per)
		if from, to, ok := a.s.raiseDesired(c.g.Name, need); ok {
			a.opts.Logf("awsfake autoscaler: %d pending pods for group %s: desired %d -> %d", c.pending, c.g.Name, from, to)
		}
	}
}

// templateLabels returns a snapshot of a group that is not being deleted
// and the labels a node launched for it now would get.
func (s *Server) templateLabels(name string, o NodeOptions) (Group, map[string]string, bool) {
	g, ok := s.Group(name)
	if !ok || g.Status != "" || len(g.Zones) == 0 {
		return Group{}, nil, false
	}
	lt, ok := s.LaunchTemplate(g.LaunchTemplateID)
	if !ok {
		return Group{}, nil, false
	}
	vn, ok := lt.resolve(g.LaunchTemplateVersion)
	if !ok {
		return Group{}, nil, false
	}
	v := lt.Versions[vn-1]
	in := Instance{
		Group: name, Zone: g.Zones[0], ImageID: v.ImageID, InstanceType: v.InstanceType,
		LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name, LaunchTemplateVersion: strconv.FormatInt(vn, 10),
	}
	return g, o.NodeLabels(in), true
}

// raiseDesired adds up to n to a group's desired capacity, not past its
// max.
func (s *Server) raiseDesired(name string, n int32) (from, to int32, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil || g.deleting {
		return 0, 0, false
	}
	from, to = g.Desired, min(g.Max, g.Desired+n)
	if to <= from {
		return from, from, false
	}
	g.Desired = to
	s.notify()
	return from, to, true
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

func (a *autoscaler) scaleDown(now time.Time, byID map[string]*corev1.Node) time.Time {
	var next time.Time
	seen := map[string]bool{}
	for id, n := range byID {
		in, ok := a.s.Instance(id)
		if !ok || in.Lifecycle != LifecycleInService || !slices.Contains(a.opts.ScaleDownGroups, in.Group) ||
			!n.Spec.Unschedulable || !a.removable(n.Name) {
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
		if err := a.s.TerminateInstance(id, true); err != nil {
			// Most likely the group is at its min; a change of the
			// group wakes us to try again.
			if !a.blocked[n.Name] {
				a.opts.Logf("awsfake autoscaler: cannot remove node %s (%s in %s): %v", n.Name, id, in.Group, err)
				a.blocked[n.Name] = true
			}
			continue
		}
		a.opts.Logf("awsfake autoscaler: removed empty node %s (%s in %s)", n.Name, id, in.Group)
		delete(a.emptySince, n.Name)
		delete(a.blocked, n.Name)
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
