package plan

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// noRoom proves, when nothing can add a node, that every batch's pods fit
// on the nodes that stay: batch by batch in the run's order, with the
// estimate the run makes before each batch, each batch's pods carried over
// onto the nodes the estimate put them on. The run would otherwise taint
// the group and stop at the first batch that does not fit.
//
// Something adds nodes when the provider has a group (its scale-up and
// replacements) or a cluster autoscaler or Karpenter runs; then the run
// waits for room instead, and this proves nothing. Pods that can go nowhere
// whatever the room (pinned, reported by pod-cannot-move) are left out.
// podsByNode holds each node's evictable pods (Build's).
func noRoom(snap snapshot.Cluster, podsByNode map[string][]*corev1.Pod, batches [][]string, in Input, heldOff bool, pinned sets.Set[string]) []check.Finding {
	if in.Cloud != nil || len(batches) == 0 {
		return nil
	}
	running, autoscaled := runningPods(snap.Pods)
	if autoscaled {
		return nil
	}
	nodes := make([]*corev1.Node, len(snap.Nodes))
	for i := range snap.Nodes {
		nodes[i] = &snap.Nodes[i]
	}
	evictable := evictableExcept(podsByNode, pinned)
	carried := map[string][]*corev1.Pod{}
	var all []*corev1.Pod
	for _, b := range batches {
		for _, n := range b {
			all = append(all, evictable(n)...)
		}
	}
	room := capacity.NewTracker(nodes, func(n string) []*corev1.Pod { return running[n] }, all)
	// Where every outdated node is held off (tainted) from the start, none
	// takes pods; otherwise a node takes pods until its own batch, which
	// then evicts them again.
	if heldOff {
		for _, b := range batches {
			room.Exclude(b...)
		}
	}
	for i, batch := range batches {
		room.Exclude(batch...)
		var toEvict []*corev1.Pod
		for _, n := range batch {
			toEvict = append(toEvict, evictable(n)...)
			toEvict = append(toEvict, carried[n]...)
			delete(running, n)
		}
		placed := room.Place(toEvict)
		if in.Namespace != "" {
			// check -n: only that namespace's pods are its business.
			placed.Unplaced = slices.DeleteFunc(placed.Unplaced, func(p *corev1.Pod) bool { return p.Namespace != in.Namespace })
		}
		if !placed.Fits() {
			return []check.Finding{noRoomFinding(i, len(batches), batch, placed, in, heldOff)}
		}
		// The pods carried over are evicted again with their new node's
		// batch.
		for _, pl := range placed.Placed {
			running[pl.Node] = append(running[pl.Node], pl.Pod)
			carried[pl.Node] = append(carried[pl.Node], pl.Pod)
		}
	}
	return nil
}

// runningPods are the bound pods by node; autoscaled is set when a
// cluster autoscaler or Karpenter runs (something adds nodes).
func runningPods(pods []corev1.Pod) (running map[string][]*corev1.Pod, autoscaled bool) {
	running = map[string][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if capacity.IsAutoscaler(p) {
			return nil, true
		}
		if p.Spec.NodeName != "" {
			running[p.Spec.NodeName] = append(running[p.Spec.NodeName], p)
		}
	}
	return running, false
}

// evictableExcept are the pods any batch may evict from a node: those of
// the outdated nodes but the pinned ones (and those carried over onto
// them, which are pods of other outdated nodes).
func evictableExcept(podsByNode map[string][]*corev1.Pod, pinned sets.Set[string]) func(node string) []*corev1.Pod {
	return func(n string) []*corev1.Pod {
		if pinned.Len() == 0 {
			return podsByNode[n]
		}
		return slices.DeleteFunc(slices.Clone(podsByNode[n]), func(p *corev1.Pod) bool { return pinned.Has(podKey(p)) })
	}
}

// roomInput is the input noRoom judges: a group whose service adds no
// node for its update (EKS's MINIMAL strategy) is one where nothing adds a
// node, so the batches' pods must fit on the nodes that stay.
func roomInput(p *Plan, in Input) Input {
	if p.Managed != nil && p.Managed.ScaleUp == 0 {
		in.Cloud, in.Provider = nil, p.Managed.Service+" (adding no node)"
	}
	return in
}

func noRoomFinding(i, of int, batch []string, room capacity.Room, in Input, heldOff bool) check.Finding {
	name := in.NodeGroup
	if name == "" {
		name = in.Selector
	}
	fix := "add nodes that stay (with the target labels) before the run, or use the --provider of the cloud whose group adds them"
	if heldOff && i > 0 {
		// Every outdated node is tainted at the start: the pods of all
		// batches end up on the nodes that stay, whatever the batch size.
		fix += "; a lower --max-unavailable does not help, the pods of every batch must fit on the nodes that stay"
	} else if !heldOff {
		fix += ", or lower --max-unavailable"
	}
	return check.Finding{
		Check: check.CheckNoRoom, Severity: check.Blocker, Kind: "NodeGroup", Name: name, Nodes: slices.Clone(batch),
		Message: fmt.Sprintf("batch %d of %d: %s, and nothing adds a node (provider %s, no cluster autoscaler or Karpenter runs)", i+1, of, room, cmp.Or(in.Provider, "none")),
		Fix:     fix,
	}
}
