// Package cloud holds the providers that create and remove the machines
// behind a node group, behind one small interface.
package cloud

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Provider removes drained nodes from their group.
type Provider interface {
	// Name is what --provider takes.
	Name() string
	// RemoveNode takes a drained, cordoned node out of the group.
	RemoveNode(ctx context.Context, node string) error
	// Describe says in a few words what removal means, for the plan.
	Describe() string
}

// None is the provider for clusters where something else owns the machines:
// it deletes the Node object (right for Karpenter and similar), or with
// DeleteNode false only labels the node as done.
type None struct {
	Client     kubernetes.Interface
	DeleteNode bool
}

// Name implements Provider.
func (n *None) Name() string { return "none" }

// Describe implements Provider.
func (n *None) Describe() string {
	if n.DeleteNode {
		return "delete the Node object"
	}
	return fmt.Sprintf("leave the node cordoned and labelled %s=%s", plan.StateLabel, plan.StateDone)
}

// RemoveNode implements Provider.
func (n *None) RemoveNode(ctx context.Context, node string) error {
	if n.DeleteNode {
		err := n.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{plan.StateLabel: plan.StateDone}}})
	_, err := n.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

var _ Provider = (*None)(nil)
