package cloud

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
)

// CapacityProver is a Provider that can read the cloud's shared limits the
// machines a run adds count against (vCPU quotas, subnet addresses), so
// that the plan says the run would not fit before anything changes. A
// provider without it proves nothing and warns of nothing.
type CapacityProver interface {
	Provider
	// ProveCapacity reads what added more of the group's machines need of
	// each limit and what is free. What it cannot read it names in
	// Unprovable; an error is a cloud that could not be asked at all.
	ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error)
}

// BusiestNode is the most pods with an address of their own (not on the
// host's network, not finished) on one of nodes: the most a node added in
// another's place takes over, by which the providers count the pod
// addresses of a subnet or range.
func BusiestNode(ctx context.Context, kube kubernetes.Interface, nodes []string) (int64, error) {
	var most int64
	for _, n := range nodes {
		list, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n).String()})
		if err != nil {
			return 0, fmt.Errorf("cannot list the pods of node %q: %w", n, err)
		}
		var count int64
		for i := range list.Items {
			p := &list.Items[i]
			if p.Spec.NodeName == n && !p.Spec.HostNetwork && !pods.Finished(p) {
				count++
			}
		}
		most = max(most, count)
	}
	return most, nil
}
