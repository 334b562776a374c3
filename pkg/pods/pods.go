// Package pods holds the few facts about a pod that planning, capacity,
// the audit, the drain and the run must agree on.
package pods

import corev1 "k8s.io/api/core/v1"

// Finished says whether p has run to its end (Succeeded or Failed): its
// containers will not run again, it holds no resources on its node, no
// controller counts it, and kubectl's drain deletes it rather than evicts
// it.
func Finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
