package azurefake

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// drainError is a drain that did not finish within the pool's drain
// timeout: the pod it could not evict and the PDB that held it.
type drainError struct {
	node, pod, pdb string
}

// Error is AKS's message for a drain a PDB blocked
// (https://learn.microsoft.com/en-us/troubleshoot/azure/azure-kubernetes/create-upgrade-delete/error-code-poddrainfailure:
// "Code: UpgradeFailed Message: Drain node <node> failed when evicting
// pod <pod> failed with Too Many Requests error. This is often caused by
// a restrictive Pod Disruption Budget (PDB) policy. See
// http://aka.ms/aks/debugdrainfailures. Original error: Cannot evict pod
// as it would violate the pod's disruption budget. PDB debug info:
// <namespace>/<pod> blocked by pdb <pdb> with 0 unready pods.").
func (e *drainError) Error() string {
	return fmt.Sprintf("Drain node %s failed when evicting pod %s failed with Too Many Requests error. This is often caused by a restrictive Pod Disruption Budget (PDB) policy. See http://aka.ms/aks/debugdrainfailures. Original error: Cannot evict pod as it would violate the pod's disruption budget. PDB debug info: %s blocked by pdb %s with 0 unready pods.",
		e.node, shortName(e.pod), e.pod, e.pdb)
}

func shortName(nsName string) string {
	for i := len(nsName) - 1; i >= 0; i-- {
		if nsName[i] == '/' {
			return nsName[i+1:]
		}
	}
	return nsName
}

// drain evicts the node's pods through the eviction API, which honours
// PodDisruptionBudgets, retrying those a PDB refuses (429) until timeout,
// then waits for them to be gone. DaemonSet pods and mirror pods stay, as
// with kubectl drain --ignore-daemonsets. It is the fake's own code, not
// the plugin's: it stands for AKS's drain.
//
// A node is drained once it is seen empty twice, EvictRetry apart: a
// scheduler that had not yet seen the cordon may bind a pod to it just
// after the first look, and the node's machine then goes with that pod.
func (s *Server) drain(ctx context.Context, node string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for seenEmpty := false; ; {
		pods, err := s.evictable(ctx, node)
		if err != nil || (len(pods) == 0 && seenEmpty) {
			return err
		}
		if seenEmpty = len(pods) == 0; seenEmpty {
			if err := sleep(ctx, s.opts.EvictRetry); err != nil {
				return err
			}
			continue
		}
		var blocked *corev1.Pod
		for i := range pods {
			p := &pods[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
			err := s.kube.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
			switch {
			case err == nil, apierrors.IsNotFound(err):
			case apierrors.IsTooManyRequests(err):
				blocked = p
			default:
				return err
			}
		}
		if blocked != nil && time.Now().After(deadline) {
			return &drainError{node: node, pod: blocked.Namespace + "/" + blocked.Name, pdb: s.pdbOf(ctx, blocked)}
		}
		if err := sleep(ctx, s.opts.EvictRetry); err != nil {
			return err
		}
	}
}

// evictable lists the node's pods a drain evicts.
func (s *Server) evictable(ctx context.Context, node string) ([]corev1.Pod, error) {
	list, err := s.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if c := metav1.GetControllerOf(&p); c != nil && c.Kind == "DaemonSet" {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// pdbOf names the PDB whose selector matches the pod, "" if none.
func (s *Server) pdbOf(ctx context.Context, p *corev1.Pod) string {
	list, err := s.kube.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, pdb := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels)) {
			return pdb.Namespace + "/" + pdb.Name
		}
	}
	return ""
}

// errAborted ends an upgrade that abort stopped.
var errAborted = errors.New("aborted")
