package upgrade

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Owner is a controller whose pods were evicted.
type Owner struct {
	Kind, Namespace, Name string
}

func (o Owner) String() string { return fmt.Sprintf("%s %q", o.Kind, o.Namespace+"/"+o.Name) }

// OwnersOf returns the distinct replica controllers of pods, sorted. Pods of
// other kinds (Jobs, bare pods) have nothing to wait for.
func OwnersOf(pods []corev1.Pod) []Owner {
	seen := map[Owner]bool{}
	for i := range pods {
		ref := metav1.GetControllerOf(&pods[i])
		if ref == nil {
			continue
		}
		switch ref.Kind {
		case "ReplicaSet", "StatefulSet", "ReplicationController":
			seen[Owner{Kind: ref.Kind, Namespace: pods[i].Namespace, Name: ref.Name}] = true
		}
	}
	out := make([]Owner, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// WaitOwnersReady waits, with one list+watch per workload and no polling,
// until every workload has its desired replicas available (Deployments and
// ReplicaSets, honouring minReadySeconds) or ready (StatefulSets). ReplicaSets
// are waited for as their Deployment. A deleted workload counts as done.
// pending, if not nil, is told the workloads not yet seen Ready before each
// is waited for.
func WaitOwnersReady(ctx context.Context, client kubernetes.Interface, owners []Owner, pending func([]Owner)) error {
	seen := map[Owner]bool{}
	for i, o := range owners {
		if o.Kind == "ReplicaSet" {
			rs, err := client.AppsV1().ReplicaSets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				continue // gone: nothing to wait for
			case err != nil:
				return err
			}
			if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
				o = Owner{Kind: "Deployment", Namespace: o.Namespace, Name: ref.Name}
			}
		}
		if seen[o] {
			continue
		}
		seen[o] = true
		if pending != nil {
			pending(append([]Owner{o}, owners[i+1:]...))
		}
		if err := waitOwnerReady(ctx, client, o); err != nil {
			return err
		}
	}
	return nil
}

func waitOwnerReady(ctx context.Context, client kubernetes.Interface, o Owner) error {
	var getter cache.Getter
	var obj runtime.Object
	var resource string
	switch o.Kind {
	case "Deployment":
		getter, obj, resource = client.AppsV1().RESTClient(), &appsv1.Deployment{}, "deployments"
	case "ReplicaSet":
		getter, obj, resource = client.AppsV1().RESTClient(), &appsv1.ReplicaSet{}, "replicasets"
	case "StatefulSet":
		getter, obj, resource = client.AppsV1().RESTClient(), &appsv1.StatefulSet{}, "statefulsets"
	case "ReplicationController":
		getter, obj, resource = client.CoreV1().RESTClient(), &corev1.ReplicationController{}, "replicationcontrollers"
	default:
		return nil
	}
	lw := cache.NewListWatchFromClient(getter, resource, o.Namespace, fields.OneTermEqualSelector("metadata.name", o.Name))
	var last string
	_, err := watchtools.UntilWithSync(ctx, lw, obj, func(store cache.Store) (bool, error) {
		return len(store.List()) == 0, nil // gone: nothing to wait for
	}, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return true, nil
		}
		ready, status := ownerReady(ev.Object)
		last = status
		return ready, nil
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if last != "" {
			return fmt.Errorf("%s has %s: %w", o, last, err)
		}
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// ownerReady reports whether a replica controller is back to its desired
// count, and a short status for error messages.
func ownerReady(obj runtime.Object) (bool, string) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.AvailableReplicas >= want,
			fmt.Sprintf("%d/%d available", o.Status.AvailableReplicas, want)
	case *appsv1.ReplicaSet:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.AvailableReplicas >= want,
			fmt.Sprintf("%d/%d available", o.Status.AvailableReplicas, want)
	case *appsv1.StatefulSet:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.ReadyReplicas >= want,
			fmt.Sprintf("%d/%d ready", o.Status.ReadyReplicas, want)
	case *corev1.ReplicationController:
		want := ptrOr(o.Spec.Replicas, 1)
		return o.Status.ObservedGeneration >= o.Generation && o.Status.AvailableReplicas >= want,
			fmt.Sprintf("%d/%d available", o.Status.AvailableReplicas, want)
	}
	return true, ""
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
