package upgrade

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Owner is a controller whose pods were evicted; the run's record keeps
// the ones that may still be recovering.
type Owner = state.Workload

// OwnersOf returns the distinct replica controllers of pods, sorted. Pods of
// other kinds (Jobs, bare pods) have nothing to wait for.
func OwnersOf(pods []corev1.Pod) []Owner {
	seen := map[Owner]bool{}
	for i := range pods {
		if o, ok := replicaOwner(&pods[i]); ok {
			seen[o] = true
		}
	}
	return sortedOwners(seen)
}

// replicaOwner is the pod's controller when it replaces the pods it loses.
func replicaOwner(pod *corev1.Pod) (Owner, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return Owner{}, false
	}
	switch ref.Kind {
	case "ReplicaSet", "StatefulSet", "ReplicationController":
		return Owner{Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name}, true
	}
	return Owner{}, false
}

func sortedOwners(seen map[Owner]bool) []Owner {
	out := make([]Owner, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ownerReady reports whether a replica controller is back to its desired
// count, and a short status for error messages.
func ownerReady(obj runtime.Object) (bool, string) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return replicasBack(o.Generation, o.Status.ObservedGeneration, o.Spec.Replicas, o.Status.AvailableReplicas, "available")
	case *appsv1.ReplicaSet:
		return replicasBack(o.Generation, o.Status.ObservedGeneration, o.Spec.Replicas, o.Status.AvailableReplicas, "available")
	case *appsv1.StatefulSet:
		return replicasBack(o.Generation, o.Status.ObservedGeneration, o.Spec.Replicas, o.Status.ReadyReplicas, "ready")
	case *corev1.ReplicationController:
		return replicasBack(o.Generation, o.Status.ObservedGeneration, o.Spec.Replicas, o.Status.AvailableReplicas, "available")
	}
	return true, ""
}

// replicasBack is ownerReady of one controller: its status caught up with
// its spec (observed generation) and have (the replicas it counts as
// back, in word's sense) at its desired count, 1 when unset.
func replicasBack(generation, observed int64, replicas *int32, have int32, word string) (bool, string) {
	want := ptrOr(replicas, 1)
	return observed >= generation && have >= want, fmt.Sprintf("%d/%d %s", have, want, word)
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
