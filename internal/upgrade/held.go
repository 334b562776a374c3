package upgrade

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// HeldPod is a pod on a node the cloud's service is taking out whose
// eviction a PodDisruptionBudget refuses now: what holds the node, which
// the service itself never names.
type HeldPod struct {
	Node, Namespace, Pod string
	PDB                  drain.PDBStatus
	// Since is when the run first saw it held.
	Since time.Time
}

func (h HeldPod) String() string {
	return fmt.Sprintf("pod %q cannot be evicted: %s allows no disruption", h.Namespace+"/"+h.Pod, h.PDB)
}

// Short names the pod and its PDB for the progress line.
func (h HeldPod) Short() string {
	return fmt.Sprintf("pod %s held by PDB %s on node %s", h.Namespace+"/"+h.Pod, h.PDB.Namespace+"/"+h.PDB.Name, h.Node)
}

// heldList names the held pods on one line, the first few in full.
func heldList(held []HeldPod) string {
	parts := make([]string, 0, min(len(held), waitNamesShown))
	for _, h := range held[:min(len(held), waitNamesShown)] {
		parts = append(parts, fmt.Sprintf("pod %q on node %q (PodDisruptionBudget %q)", h.Namespace+"/"+h.Pod, h.Node, h.PDB.Namespace+"/"+h.PDB.Name))
	}
	s := strings.Join(parts, ", ")
	if len(held) > waitNamesShown {
		s += fmt.Sprintf(" and %d more", len(held)-waitNamesShown)
	}
	return s
}

// heldTracker remembers since when each pod has been held, by pod and
// PDB, until the hold is really released: the pod has left its node. A
// read that does not show a hold does not release it: PDB status lags
// the evictions (a budget read as allowing one disruption before its
// controller counts the eviction just made), so the same pod and PDB
// show up again a read later, and are neither logged again nor timed
// anew.
type heldTracker struct {
	now   func() time.Time
	since map[string]HeldPod
	order []string
}

func newHeldTracker(now func() time.Time) *heldTracker {
	return &heldTracker{now: now, since: map[string]HeldPod{}}
}

func (h HeldPod) key() string {
	return h.Node + "/" + h.Namespace + "/" + h.Pod + "/" + h.PDB.Namespace + "/" + h.PDB.Name
}

// update takes the pods held now and returns the holds seen for the
// first time; a hold missing from now is forgotten only once onNode
// reports its pod gone from its node.
func (t *heldTracker) update(now []HeldPod, onNode func(HeldPod) bool) (fresh []HeldPod) {
	seen := map[string]bool{}
	var order []string
	for _, h := range now {
		key := h.key()
		seen[key] = true
		order = append(order, key)
		if old, ok := t.since[key]; ok {
			h.Since = old.Since
		} else {
			h.Since = t.now()
			fresh = append(fresh, h)
		}
		t.since[key] = h
	}
	for key, h := range t.since {
		if !seen[key] && !onNode(h) {
			delete(t.since, key)
		}
	}
	t.order = order
	return fresh
}

// all are the pods held at the last update, in the order seen.
func (t *heldTracker) all() []HeldPod {
	out := make([]HeldPod, 0, len(t.order))
	for _, key := range t.order {
		out = append(out, t.since[key])
	}
	return out
}

// watchPDBs adds the PDBs to the view the first time a run needs them,
// and from then on notes the nodes the service drains.
func (v *clusterView) watchPDBs(ctx context.Context) error {
	if v.pdbs != nil {
		return nil
	}
	inf := v.factory.Policy().V1().PodDisruptionBudgets().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { v.signal() },
		UpdateFunc: func(any, any) { v.signal() },
		DeleteFunc: func(any) { v.signal() },
	}); err != nil {
		return err
	}
	v.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	if err := v.watchDrains(); err != nil {
		return err
	}
	v.pdbs = inf
	return nil
}

// drainsSeen are the nodes on which the run has seen the service begin
// its drain: a pod of the node (one a drain evicts) started terminating
// or was deleted while the service had the node marked. Marking does not
// say it: EKS taints every old node at its scale-up, before it drains
// any, then drains up to maxUnavailable nodes at a time and cordons each
// only once its pods are gone (User Guide, managed-node-update-behavior:
// Scale up phase step 3, Upgrade phase steps 2 to 4); GKE's blue/green
// cordons all of blue, then drains it in batches
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#bg-phase-drain-blue).
// The pods leaving are what shows which nodes it drains now.
type drainsSeen struct {
	mu    sync.Mutex
	nodes map[string]bool
}

func (d *drainsSeen) seen(node string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nodes[node]
}

func (d *drainsSeen) set(node string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if on {
		d.nodes[node] = true
	} else {
		delete(d.nodes, node)
	}
}

// watchDrains notes drains from the pod and node events the view already
// watches: no request more, nothing listed per node.
func (v *clusterView) watchDrains() error {
	v.drains = &drainsSeen{nodes: map[string]bool{}}
	if _, err := v.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A re-run meets the pods the service is evicting as it starts.
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
				v.podLeaving(p)
			}
		},
		UpdateFunc: func(old, obj any) {
			was, _ := old.(*corev1.Pod)
			if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp != nil && (was == nil || was.DeletionTimestamp == nil) {
				v.podLeaving(p)
			}
		},
		DeleteFunc: func(obj any) {
			if p, ok := tombstoned(obj).(*corev1.Pod); ok {
				v.podLeaving(p)
			}
		},
	}); err != nil {
		return err
	}
	// A node back in service (an abort, a rollback) is drained no more.
	_, err := v.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok && !markedByService(n) {
				v.drains.set(n.Name, false)
			}
		},
		DeleteFunc: func(obj any) {
			if n, ok := tombstoned(obj).(*corev1.Node); ok {
				v.drains.set(n.Name, false)
			}
		},
	})
	return err
}

// podLeaving notes the pod's node as drained: the pod, one a drain
// evicts, is leaving it while the service has the node marked. Pods that
// leave a node before it is marked (a rollout), DaemonSet and finished
// pods say nothing of a drain.
func (v *clusterView) podLeaving(pod *corev1.Pod) {
	if !plan.Evictable(pod) {
		return
	}
	n, found, _ := v.nodes.GetStore().GetByKey(pod.Spec.NodeName)
	if found && markedByService(n.(*corev1.Node)) {
		v.drains.set(pod.Spec.NodeName, true)
	}
}

// tombstoned is the object of a delete event, also when the watch missed
// the delete itself.
func tombstoned(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// heldPods are the pods of the plan's outdated nodes that the service
// drains now whose PDB allows no disruption: the service's eviction of
// them is refused until it does.
func (r *managedRun) heldPods() []HeldPod {
	return r.nodes.view.heldPods(r.cfg.Plan.OutdatedNames())
}

func (v *clusterView) heldPods(outdated []string) []HeldPod {
	if v.pdbs == nil {
		return nil
	}
	var pdbs []policyv1.PodDisruptionBudget
	for _, obj := range v.pdbs.GetStore().List() {
		pdbs = append(pdbs, *obj.(*policyv1.PodDisruptionBudget))
	}
	idx := drain.NewPDBIndex(pdbs)
	var out []HeldPod
	for _, name := range outdated {
		obj, ok, _ := v.nodes.GetStore().GetByKey(name)
		if ok && markedByService(obj.(*corev1.Node)) {
			out = append(out, v.heldOn(name, idx)...)
		}
	}
	return out
}

// heldOn are the pods a PDB holds on a marked node, if the service drains
// it now. A PDB at 0 most often is the service's own eviction of one of
// its pods (a Deployment's maxUnavailable 1): that holds the node it
// drains, not the nodes it has marked and not reached. So the pods are
// held where the run has seen the service's drain (drainsSeen, or a pod
// terminating now), and a pod terminating is not held: its eviction went
// through. Only where every pod left on the node is one a budget lets
// none go, even with all its pods healthy, can no drain show (nothing
// may leave); such a hold is the service's wherever it drains, and is
// named on the mark alone.
func (v *clusterView) heldOn(node string, idx *drain.PDBIndex) []HeldPod {
	var held, lasting []HeldPod
	draining, free := v.drains.seen(node), false
	for _, pod := range v.podsOn(node) {
		switch {
		case !plan.Evictable(pod):
		case pod.DeletionTimestamp != nil:
			draining = true
		default:
			pdb := zeroBudget(idx.ForPod(pod))
			if pdb == nil {
				free = true
				continue
			}
			h := HeldPod{Node: node, Namespace: pod.Namespace, Pod: pod.Name, PDB: drain.StatusOf(pdb)}
			held = append(held, h)
			if pdb.Status.DesiredHealthy >= pdb.Status.ExpectedPods {
				lasting = append(lasting, h)
			}
		}
	}
	switch {
	case draining:
		return held
	case !free:
		return lasting
	}
	return nil
}

// zeroBudget is the first of the pod's PDBs that allows no disruption.
func zeroBudget(pdbs []*policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	for _, pdb := range pdbs {
		if pdb.Status.DisruptionsAllowed <= 0 {
			return pdb
		}
	}
	return nil
}

// podOnNode reports whether the held pod still runs on its node.
func (r *managedRun) podOnNode(h HeldPod) bool {
	for _, p := range r.nodes.view.podsOn(h.Node) {
		if p.Namespace == h.Namespace && p.Name == h.Pod {
			return true
		}
	}
	return false
}

// markedByService reports whether the node no longer takes new pods: the
// service cordoned it or tainted it NoSchedule before its drain.
func markedByService(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && t.Value == "unschedulable" {
			return true
		}
	}
	return false
}
