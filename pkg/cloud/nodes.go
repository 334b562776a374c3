package cloud

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeOf reads node name, to find its machine: nil when the node is gone
// already (a removal interrupted after the machine went took it).
func NodeOf(ctx context.Context, client kubernetes.Interface, name string) (*corev1.Node, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error when reading node %q: %w", name, err)
	}
	return n, nil
}

// PoolOf is the one pool the nodes' label names, for a service that
// upgrades a pool of nodes itself (AKS agent pools, GKE node pools):
// service and kind ("AKS", "agent pool") name it in the input errors for a
// node without the label and for nodes of two pools.
func PoolOf(nodes []corev1.Node, label, service, kind string) (string, error) {
	name := ""
	for i := range nodes {
		p := nodes[i].Labels[label]
		switch {
		case p == "":
			return "", Inputf("node %q carries no %s label, so it is no %s %s's; narrow the nodes with --selector or use another --provider", nodes[i].Name, label, service, kind)
		case name != "" && p != name:
			return "", Inputf("the nodes belong to %s %ss %q and %q; %s upgrades one pool at a time: select one", service, kind, name, p, service)
		}
		name = p
	}
	if name == "" {
		return "", Inputf("no node to find the %s %s from", service, kind)
	}
	return name, nil
}
