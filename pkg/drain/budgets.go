package drain

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
)

// watchBudgets takes the PDB views of the namespaces pods will be evicted
// from, and waits a bounded time for them to be listed: each pod's budget
// decides whose turn it is.
func (n *nodeDrain) watchBudgets(ctx context.Context, evicting []corev1.Pod) {
	if n.d.opts.DeleteInsteadOfEvict {
		return
	}
	var views []*nsPDBs
	seen := map[string]bool{}
	for i := range evicting {
		p := &evicting[i]
		if seen[p.Namespace] || pods.Finished(p) || p.DeletionTimestamp != nil {
			continue
		}
		seen[p.Namespace] = true
		views = append(views, n.pdbsFor(ctx, p.Namespace))
	}
	for _, v := range views {
		v.waitSynced(ctx, n.d.pdbs.syncTimeout)
	}
}

// budgetOf returns the key of the one PDB selecting pod, or "" when the
// view is not listed or none or several do (the eviction API refuses pods
// under several at once: nothing to take turns for).
func budgetOf(pdbs *nsPDBs, pod *corev1.Pod) string {
	if pdbs == nil || !pdbs.synced() {
		return ""
	}
	matching := PDBsForPod(pod, pdbs.list())
	if len(matching) != 1 {
		return ""
	}
	return matching[0].Namespace + "/" + matching[0].Name
}

// mayEvict reports whether the PDBs the view lists may let pod's eviction
// through: none or one selecting it, whose status is current and allows a
// disruption.
func mayEvict(pdbs *nsPDBs, pod *corev1.Pod) bool {
	matching := PDBsForPod(pod, pdbs.list())
	switch len(matching) {
	case 0:
		return true
	case 1:
		return allows(&matching[0])
	}
	return false
}

// allows says whether p's status lets one more pod go: one the disruption
// controller computed for p's latest spec, with a disruption to spare.
func allows(p *policyv1.PodDisruptionBudget) bool {
	return p.Status.ObservedGeneration >= p.Generation && p.Status.DisruptionsAllowed > 0
}
