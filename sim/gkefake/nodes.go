package gkefake

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// NodePoolLabel is the label GKE puts on the nodes of a node pool
// (https://cloud.google.com/kubernetes-engine/docs/how-to/node-pools#viewing_node_pools_in_a_cluster).
const NodePoolLabel = "cloud.google.com/gke-nodepool"

// OSDistributionLabel names the node image's OS family on GKE's nodes.
const OSDistributionLabel = "cloud.google.com/gke-os-distribution"

// kubeNodes makes an instance a node as gcefake does (named after it,
// provider ID gce://, its template's kube-labels), then reports the
// kubelet version of the pool version the template runs, as a GKE node's
// kubelet does ("v1.31.2-gke.1000000"): what kubectl get nodes shows as
// VERSION, and how a node's version is told from the pool's.
func (s *Server) kubeNodes() (onLaunch, onDelete func(context.Context, gcefake.Instance) error) {
	join, leave := gcefake.KubeNodes(s.kube, gcefake.NodeOptions{})
	onLaunch = func(ctx context.Context, in gcefake.Instance) error {
		if err := join(ctx, in); err != nil {
			return err
		}
		s.mu.Lock()
		cfg, ok := s.templates[in.Template]
		s.mu.Unlock()
		if !ok {
			return nil
		}
		s.versions.Set(in.Name, "v"+cfg.Version)
		return s.reportVersion(ctx, in.Name, "v"+cfg.Version)
	}
	onDelete = func(ctx context.Context, in gcefake.Instance) error {
		s.versions.Forget(in.Name)
		return leave(ctx, in)
	}
	return onLaunch, onDelete
}

// reportVersion sets the node's kubelet version once kwok has made it
// Ready (kwok writes nodeInfo when it initializes a node), and sets it
// again until it is seen kept three looks in a row: under load kwok's own
// status writes conflicted with it more often than a few retries take,
// or came after it, and the node kept kwok's version.
func (s *Server) reportVersion(ctx context.Context, name, version string) error {
	for kept := 0; kept < 3; {
		n, err := s.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case !ready(n):
		case n.Status.NodeInfo.KubeletVersion == version:
			kept++
		default:
			kept = 0
			n.Status.NodeInfo.KubeletVersion = version
			if _, err := s.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if err := sleep(ctx, s.opts.PollEvery); err != nil {
			return err
		}
	}
	return nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// patchNode changes a node, retrying on conflicts; a node that is gone is
// left alone.
func (s *Server) patchNode(ctx context.Context, name string, change func(*corev1.Node)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := s.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = s.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (s *Server) cordon(ctx context.Context, name string, on bool) error {
	return s.patchNode(ctx, name, func(n *corev1.Node) { n.Spec.Unschedulable = on })
}
