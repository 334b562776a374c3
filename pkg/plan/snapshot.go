package plan

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// listPageSize keeps each response small on a 5,000-node cluster while
// needing few round trips.
const listPageSize = 500

// TakeSnapshot lists each kind the plan needs once, page by page.
func TakeSnapshot(ctx context.Context, client kubernetes.Interface) (Snapshot, error) {
	var s Snapshot
	core, apps := client.CoreV1(), client.AppsV1()
	steps := []func() error{
		func() error {
			return listInto(ctx, "nodes", &s.Nodes, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Nodes().List(ctx, o)
			})
		},
		func() error {
			return listInto(ctx, "pods", &s.Pods, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				// Finished pods are never evicted; leaving them out keeps the list small.
				o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
				return core.Pods("").List(ctx, o)
			})
		},
		func() error {
			return listInto(ctx, "poddisruptionbudgets", &s.PDBs, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.PolicyV1().PodDisruptionBudgets("").List(ctx, o)
			})
		},
		func() error {
			return listInto(ctx, "replicasets", &s.ReplicaSets, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return apps.ReplicaSets("").List(ctx, o)
			})
		},
		func() error {
			return listInto(ctx, "deployments", &s.Deployments, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return apps.Deployments("").List(ctx, o)
			})
		},
		func() error {
			return listInto(ctx, "statefulsets", &s.StatefulSets, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return apps.StatefulSets("").List(ctx, o)
			})
		},
		func() error {
			return listInto(ctx, "services", &s.Services, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Services("").List(ctx, o)
			})
		},
		func() error {
			return listInto(ctx, "namespaces", &s.Namespaces, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Namespaces().List(ctx, o)
			})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return s, err
		}
	}
	return s, nil
}

// listInto appends every item of a paginated list to into.
func listInto[T any](ctx context.Context, resource string, into *[]T, list pager.ListPageFunc) error {
	p := pager.New(list)
	p.PageSize = listPageSize
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		item, ok := obj.(any).(*T)
		if !ok {
			return fmt.Errorf("unexpected %T in %s list", obj, resource)
		}
		*into = append(*into, *item)
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing %s: %w", resource, err)
	}
	return nil
}
