package upgrade

import (
	"context"
	"fmt"
	"strings"
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

// watchPDBs adds the PDBs to the view the first time a run needs them.
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
	v.pdbs = inf
	return nil
}

// heldPods are the pods of the plan's outdated nodes that the service has
// marked (cordoned or tainted NoSchedule) whose PDB allows no disruption:
// the service's eviction of them is refused until it does.
func (r *managedRun) heldPods() []HeldPod {
	if r.clusterView().pdbs == nil {
		return nil
	}
	var pdbs []policyv1.PodDisruptionBudget
	for _, obj := range r.clusterView().pdbs.GetStore().List() {
		pdbs = append(pdbs, *obj.(*policyv1.PodDisruptionBudget))
	}
	idx := drain.NewPDBIndex(pdbs)
	var out []HeldPod
	for _, name := range r.cfg.Plan.OutdatedNames() {
		obj, ok, _ := r.clusterView().nodes.GetStore().GetByKey(name)
		if !ok || !markedByService(obj.(*corev1.Node)) {
			continue
		}
		for _, pod := range r.clusterView().podsOn(name) {
			if !plan.Evictable(pod) {
				continue
			}
			for _, pdb := range idx.ForPod(pod) {
				if pdb.Status.DisruptionsAllowed <= 0 {
					out = append(out, HeldPod{Node: name, Namespace: pod.Namespace, Pod: pod.Name, PDB: drain.StatusOf(pdb)})
					break
				}
			}
		}
	}
	return out
}

// podOnNode reports whether the held pod still runs on its node.
func (r *managedRun) podOnNode(h HeldPod) bool {
	for _, p := range r.clusterView().podsOn(h.Node) {
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
