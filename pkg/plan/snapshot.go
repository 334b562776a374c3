package plan

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// listPageSize keeps each response small on a 5,000-node cluster while
// needing few round trips.
const listPageSize = 500

// TakeSnapshot lists nodes, pods and PDBs once each, page by page.
func TakeSnapshot(ctx context.Context, client kubernetes.Interface) (Snapshot, error) {
	var snap Snapshot
	err := listAll(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.CoreV1().Nodes().List(ctx, opts)
	}, func(obj runtime.Object) error {
		snap.Nodes = append(snap.Nodes, *obj.(*corev1.Node))
		return nil
	})
	if err != nil {
		return snap, fmt.Errorf("listing nodes: %w", err)
	}
	err = listAll(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		// Finished pods are never evicted; leaving them out keeps the list small.
		opts.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
		return client.CoreV1().Pods("").List(ctx, opts)
	}, func(obj runtime.Object) error {
		snap.Pods = append(snap.Pods, *obj.(*corev1.Pod))
		return nil
	})
	if err != nil {
		return snap, fmt.Errorf("listing pods: %w", err)
	}
	err = listAll(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.PolicyV1().PodDisruptionBudgets("").List(ctx, opts)
	}, func(obj runtime.Object) error {
		snap.PDBs = append(snap.PDBs, *obj.(*policyv1.PodDisruptionBudget))
		return nil
	})
	if err != nil {
		return snap, fmt.Errorf("listing poddisruptionbudgets: %w", err)
	}
	return snap, nil
}

func listAll(ctx context.Context, list pager.ListPageFunc, each func(runtime.Object) error) error {
	p := pager.New(list)
	p.PageSize = listPageSize
	return p.EachListItem(ctx, metav1.ListOptions{}, each)
}
