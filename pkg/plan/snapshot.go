package plan

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// listPageSize is the page of a list. The apiserver serves pages from its
// watch cache (ListFromCacheSnapshot, 1.34+), so a page costs encoding, not
// an etcd range read: big pages need few round trips, and the client holds
// one page of whole objects at a time before slimming them.
const listPageSize = 5000

// TakeSnapshot lists each kind the plan needs once, all kinds at the same
// time, page by page. Pods, nodes and ReplicaSets are slimmed page by page
// to the fields planning and the audit read (see slimPod), so a 150,000-pod
// cluster is held in a fraction of its size. A list whose continue token
// expires (410, when listing outlasts etcd compaction) is made again in one
// piece.
func TakeSnapshot(ctx context.Context, client kubernetes.Interface) (Snapshot, error) {
	var s Snapshot
	core, apps, policy := client.CoreV1(), client.AppsV1(), client.PolicyV1()
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			return listInto(ctx, "nodes", &s.Nodes, slimNode, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Nodes().List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "pods", &s.Pods, slimPod, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				// Finished pods are never evicted; leaving them out keeps the list small.
				o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
				return core.Pods("").List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "poddisruptionbudgets", &s.PDBs, nil, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return policy.PodDisruptionBudgets("").List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "replicasets", &s.ReplicaSets, slimReplicaSet, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return apps.ReplicaSets("").List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "deployments", &s.Deployments, nil, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return apps.Deployments("").List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "statefulsets", &s.StatefulSets, nil, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return apps.StatefulSets("").List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "services", &s.Services, nil, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Services("").List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "namespaces", &s.Namespaces, nil, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.Namespaces().List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "persistentvolumeclaims", &s.PVCs, slimClaim, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.PersistentVolumeClaims("").List(ctx, o)
			})
		},
		func(ctx context.Context) error {
			return listInto(ctx, "persistentvolumes", &s.PVs, slimVolume, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return core.PersistentVolumes().List(ctx, o)
			})
		},
	}
	// One at a time, the small lists would wait behind the pods' pages for
	// nothing; each step writes its own field of s.
	err := runAll(ctx, steps)
	// s is read after runAll returns: in "return s, runAll(…)" Go may read
	// it first
	return s, err
}

// runAll runs the steps at the same time. The first step to fail cancels
// the others, and its error is the one returned, not the cancellations it
// caused in the others: a refused connection must not read as an
// interruption. When the caller's ctx ends first, its cause is returned.
func runAll(ctx context.Context, steps []func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for _, step := range steps {
		wg.Go(func() {
			if err := step(ctx); err != nil {
				failed.Store(true)
				// only the first cause is kept: later calls find ctx done
				cancel(err)
			}
		})
	}
	wg.Wait()
	if !failed.Load() {
		return nil
	}
	return context.Cause(ctx)
}

// listPage is one call of a typed List.
type listPage func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)

// listInto appends every item of a paginated list to into, each passed
// through slim (when not nil) while only its page is held.
func listInto[T any](ctx context.Context, resource string, into *[]T, slim func(*T), list listPage) error {
	err := eachPage(ctx, list, func(obj runtime.Object) error {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		if *into == nil {
			// the first page often says how many items the list has
			if m, err := meta.ListAccessor(obj); err == nil && m.GetRemainingItemCount() != nil {
				*into = make([]T, 0, len(items)+int(*m.GetRemainingItemCount()))
			}
		}
		for _, o := range items {
			item, ok := any(o).(*T)
			if !ok {
				return fmt.Errorf("unexpected %T in %s list", o, resource)
			}
			if slim != nil {
				slim(item)
			}
			*into = append(*into, *item)
		}
		return nil
	}, func() { *into = (*into)[:0] })
	if err != nil {
		return fmt.Errorf("listing %s: %w", resource, err)
	}
	return nil
}

// eachPage calls fn with every page of the list. When a continue token has
// expired, restart is called and the whole list is fetched in one piece,
// as client-go's pager.List does: the items are consistent either way.
func eachPage(ctx context.Context, list listPage, fn func(runtime.Object) error, restart func()) error {
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		obj, err := list(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			restart()
			obj, err = list(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			return fn(obj)
		}
		if err != nil {
			return err
		}
		m, err := meta.ListAccessor(obj)
		if err != nil {
			return fmt.Errorf("returned object must be a list: %w", err)
		}
		if err := fn(obj); err != nil {
			return err
		}
		if m.GetContinue() == "" {
			return nil
		}
		opts.Continue = m.GetContinue()
	}
}

// lastApplied is kubectl apply's copy of the whole object: nothing reads it
// here and it is often the biggest annotation.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// slimPod keeps what planning and the audit read: metadata but
// managedFields and kubectl's last-applied copy; of the spec the node,
// tolerations, volumes, grace period and readiness gates, and of each
// container its name, readiness probe, lifecycle hooks and restart policy;
// the status but the container statuses and addresses. Of the resources
// only the requests stay (the room estimate reads them); limits go. A
// planner or check reading more of a pod must keep it here
// (TestSlimPodKeepsWhatPlanningReads).
func slimPod(p *corev1.Pod) {
	slimMeta(&p.ObjectMeta)
	p.Spec.InitContainers = slimContainers(p.Spec.InitContainers)
	p.Spec.Containers = slimContainers(p.Spec.Containers)
	p.Spec.EphemeralContainers = nil
	// Of the affinity, only the required node affinity is read (where a
	// pod may go: pod-cannot-move).
	var required *corev1.NodeSelector
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	p.Spec.Affinity = nil
	if required != nil {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
	}
	p.Spec.TopologySpreadConstraints, p.Spec.SecurityContext = nil, nil
	p.Spec.ImagePullSecrets, p.Spec.HostAliases, p.Spec.DNSConfig = nil, nil, nil
	p.Spec.ResourceClaims = nil
	st := &p.Status
	st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses = nil, nil, nil
	st.ResourceClaimStatuses, st.PodIPs, st.HostIPs = nil, nil, nil
	st.Message = ""
}

// slimContainers keeps, of each container, only the fields the audit and
// the room estimate read, so a field added to Container later is dropped
// unless kept here.
func slimContainers(cs []corev1.Container) []corev1.Container {
	for i, c := range cs {
		cs[i] = corev1.Container{Name: c.Name, ReadinessProbe: c.ReadinessProbe, Lifecycle: c.Lifecycle, RestartPolicy: c.RestartPolicy,
			Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}}
	}
	return cs
}

// slimNode drops the node's image list and volume status, which nothing
// here reads and which make up much of a node object.
func slimNode(n *corev1.Node) {
	slimMeta(&n.ObjectMeta)
	n.Status.Images, n.Status.VolumesInUse, n.Status.VolumesAttached = nil, nil, nil
}

// slimReplicaSet drops the pod template: a ReplicaSet is read for its
// owner and replica counts.
func slimReplicaSet(rs *appsv1.ReplicaSet) {
	slimMeta(&rs.ObjectMeta)
	rs.Spec.Template = corev1.PodTemplateSpec{}
}

// slimClaim keeps what ties a claim to its volume.
func slimClaim(c *corev1.PersistentVolumeClaim) {
	*c = corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: c.Spec.VolumeName}}
}

// slimVolume keeps where a volume can be reached from: its node affinity
// (a local volume's node, a disk's zone) and whether it is a local one.
func slimVolume(v *corev1.PersistentVolume) {
	*v = corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.Name},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: v.Spec.NodeAffinity,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: v.Spec.Local, HostPath: v.Spec.HostPath}}}
}

func slimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	if _, ok := m.Annotations[lastApplied]; ok {
		delete(m.Annotations, lastApplied)
	}
}
