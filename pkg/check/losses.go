package check

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Loss is what draining Input.Outdated takes from one workload: the audit's
// own view of it (its pods, replicas and budgets), for what makes room
// for a drain (package makeroom) rather than reports it.
type Loss struct {
	Controller
	// Replicas is the workload's desired count (its controller's spec, or
	// its live pods where the controller is not in the input); Ready its
	// Ready pods now.
	Replicas int
	Ready    int
	// Evicted are its live pods on the drained nodes; ReadyEvicted the
	// Ready ones among them.
	Evicted      int
	ReadyEvicted int
	// Budgets are the PodDisruptionBudgets selecting any of the evicted pods.
	Budgets []Budget
	// Pods are the evicted pods; the first is what an extra replica
	// looks like (requests, affinity, tolerations) to a room estimate.
	Pods []*corev1.Pod
}

// Budget is one PodDisruptionBudget as the disruption controller counts it.
type Budget struct {
	Name string // namespace/name
	Spec policyv1.PodDisruptionBudgetSpec
	// Expected are the pods it expects (the replicas of the workloads it
	// selects), Healthy its selected pods Ready now.
	Expected int
	Healthy  int
}

// Allowed is how many disruptions the budget allows once the workloads it
// selects run extra more replicas, all Ready: the disruption controller's
// currentHealthy - desiredHealthy, percentages rounded up as it does.
func (b Budget) Allowed(extra int) int {
	expected, healthy := b.Expected+extra, b.Healthy+extra
	desired := 0
	switch {
	case b.Spec.MaxUnavailable != nil:
		mu, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, expected, true)
		if err != nil {
			return 0
		}
		desired = max(0, expected-mu)
	case b.Spec.MinAvailable != nil:
		ma, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, expected, true)
		if err != nil {
			return 0
		}
		desired = ma
	}
	return max(0, healthy-desired)
}

// Losses are the workloads with live pods on Input.Outdated (the nodes one
// batch drains), DaemonSets and static pods aside, sorted by namespace,
// kind and name.
func Losses(in Input) []Loss {
	a := newAudit(&in)
	var out []Loss
	for _, w := range a.workloads {
		if len(w.outdated) == 0 {
			continue
		}
		l := Loss{Controller: Controller{Kind: w.kind, Namespace: w.ns, Name: w.name}, Replicas: w.replicas, Evicted: len(w.outdated), Pods: w.outdated}
		for _, p := range w.pods {
			if podReady(p) {
				l.Ready++
			}
		}
		for _, p := range w.outdated {
			if podReady(p) {
				l.ReadyEvicted++
			}
		}
		for _, e := range a.auditPods(w).pdbs {
			l.Budgets = append(l.Budgets, Budget{Name: e.pdb.Namespace + "/" + e.pdb.Name, Spec: e.pdb.Spec, Expected: a.expectedPods(e), Healthy: a.readySelected(e)})
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Controller, out[j].Controller
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return out
}
