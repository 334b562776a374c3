package capacity

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Missing says what keeps p off every node that is Ready, schedulable and
// not excluded, by the estimate's own rules: "affinity" where none accepts
// it (its required node affinity, node selector or taints), "zone" where
// only nodes outside the zone its persistent volumes keep it in do, and
// otherwise the resources no accepting node has enough of ("cpu",
// "memory", "pods", ...); "" where a node takes it. podsByNode gives each
// node's running pods; the pods an estimate placed count when the caller
// adds them there.
func Missing(p *corev1.Pod, nodes []*corev1.Node, podsByNode func(string) []*corev1.Pod, excluded sets.Set[string]) string {
	names := requestedResources([]*corev1.Pod{p})
	req := requestVector(p, names)
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	zoneOf := map[string]string{}
	for _, n := range nodes {
		zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
	}
	accepted, inZone := false, false
	short := sets.New[string]()
	for _, n := range nodes {
		if excluded.Has(n.Name) || n.Spec.Unschedulable || !NodeReady(n) || !accepts(n, p, affinity, "") {
			continue
		}
		accepted = true
		if !accepts(n, p, affinity, zoneOf[p.Spec.NodeName]) {
			continue
		}
		inZone = true
		free := freeVector(n, podsByNode(n.Name), names)
		if fits(free, req) {
			return ""
		}
		for i := range free {
			if req[i] > 0 && req[i] > free[i] {
				short.Insert(resourceName(names, i))
			}
		}
	}
	switch {
	case !accepted:
		return "affinity"
	case !inZone:
		return "zone"
	}
	return strings.Join(sets.List(short), ", ")
}

// resourceName is the name of a request vector's i-th entry: names', then
// the pod count.
func resourceName(names []corev1.ResourceName, i int) string {
	if i == len(names) {
		return string(corev1.ResourcePods)
	}
	return string(names[i])
}
