package drain

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kdrain "k8s.io/kubectl/pkg/drain"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
)

// helper returns a kubectl drain Helper for one call; Helper has no
// constructor and carries its context, so it is built per use.
func (d *Drainer) helper(ctx context.Context, grace int) *kdrain.Helper {
	return &kdrain.Helper{
		Ctx:                ctx,
		Client:             d.client,
		GracePeriodSeconds: grace,
		// ChunkSize 0: a node holds at most a few hundred pods, and an
		// unpaginated list can be served from the apiserver's watch cache
		ChunkSize: 0,
	}
}

// PodsToEvict returns the pods a drain of node would evict (including pods
// already terminating, which it only waits for), and the ones it would refuse
// without Force / DeleteEmptyDirData. It changes nothing.
func (d *Drainer) PodsToEvict(ctx context.Context, node string) (evict []corev1.Pod, refused []BlockedPod, err error) {
	h := d.helper(ctx, -1)
	// kubectl's filters run with the permissive settings so every pod it could
	// ever remove reaches the filter below, which applies ours pod by pod:
	// kubectl only reports refusals as one aggregated message. DaemonSet pods
	// and mirror pods are skipped by kubectl's own filters before that.
	h.Force = true
	h.DeleteEmptyDirData = true
	h.IgnoreAllDaemonSets = true
	h.AdditionalFilters = []kdrain.PodFilter{func(pod corev1.Pod) kdrain.PodDeleteStatus {
		if pod.Spec.NodeName != node {
			// the field selector already did this on a real apiserver
			return kdrain.MakePodDeleteStatusSkip()
		}
		if reason := d.refusal(&pod); reason != "" {
			refused = append(refused, BlockedPod{Namespace: pod.Namespace, Name: pod.Name, Reason: reason})
			return kdrain.MakePodDeleteStatusSkip()
		}
		return kdrain.MakePodDeleteStatusOkay()
	}}
	list, errs := h.GetPodsForDeletion(node)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("select pods of node %q: %w", node, joinNodeErrors(make([]string, len(errs)), errs))
	}
	sort.Slice(refused, func(i, j int) bool {
		return refused[i].Namespace+"/"+refused[i].Name < refused[j].Namespace+"/"+refused[j].Name
	})
	return list.Pods(), refused, nil
}

// refusal says why the drain refuses pod under the Options, or "".
func (d *Drainer) refusal(pod *corev1.Pod) string {
	if pods.Finished(pod) || pod.DeletionTimestamp != nil {
		// finished pods disrupt nothing, terminating ones are going anyway
		return ""
	}
	var reasons []string
	ref := metav1.GetControllerOf(pod)
	if !d.opts.DeleteEmptyDirData {
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir != nil {
				reasons = append(reasons, ReasonEmptyDir)
				break
			}
		}
	}
	if !d.opts.Force {
		switch {
		case ref == nil:
			reasons = append(reasons, ReasonBare)
		case ref.Kind == "DaemonSet":
			// kubectl's DaemonSet filter lets it through only when its
			// DaemonSet is gone, and only with --force
			reasons = append(reasons, fmt.Sprintf("managed by DaemonSet %q which no longer exists", ref.Name))
		}
	}
	return strings.Join(reasons, " and ")
}

// graceFor returns the grace period to send for pod (-1 = the pod's own),
// applying MaxGracePeriod.
func (d *Drainer) graceFor(pod *corev1.Pod) int {
	g := d.opts.GracePeriodSeconds
	if d.opts.MaxGracePeriod <= 0 {
		return g
	}
	limit := int(d.opts.MaxGracePeriod / time.Second)
	if effectiveGrace(pod, g) > limit {
		return limit
	}
	return g
}

func effectiveGrace(pod *corev1.Pod, g int) int {
	if g >= 0 {
		return g
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return int(*pod.Spec.TerminationGracePeriodSeconds)
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// evictableOrRefuse lists the pods to evict from node, or fails when ctx
// ends, the list fails, or the drain refuses a pod; timeout, the drain's if
// it has begun, goes into the failure.
func (d *Drainer) evictableOrRefuse(ctx context.Context, node string, timeout time.Duration) ([]corev1.Pod, error) {
	evict, refused, err := d.PodsToEvict(ctx, node)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if len(refused) > 0 {
		return nil, &PodEvictionFailure{Node: node, Timeout: timeout, Pods: refused}
	}
	return evict, nil
}
