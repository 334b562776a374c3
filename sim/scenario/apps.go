package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Image is the container image of every App; kwok never pulls it.
const Image = "registry.k8s.io/pause:3.10"

// AppLabel is the pod label that ties an App's pods to its Deployment and PDB.
const AppLabel = "app"

// ReadyDelayAnnotation on a pod sets how long after it is scheduled the
// simulated kubelet makes it Ready (a Go duration: "10s"), instead of the
// cluster's --pod-ready-delay.
const ReadyDelayAnnotation = "sim.nodeupgrade.io/ready-delay"

// App describes a Deployment and, optionally, its PodDisruptionBudget.
type App struct {
	Namespace, Name               string
	Replicas                      int32
	MinAvailable                  *intstr.IntOrString // PDB created when MinAvailable or MaxUnavailable set
	MaxUnavailable                *intstr.IntOrString
	NodeSelector                  map[string]string // pins the app to one node group
	CPU                           string            // request, default "100m"
	Tolerations                   []corev1.Toleration
	TerminationGracePeriodSeconds *int64 // default 1
	PodAnnotations                map[string]string
	Claim                         string // a PersistentVolumeClaim every pod mounts
	// OnePerNode spreads the pods over the nodes the selector allows, at
	// most one more on a node than on any other (the scheduler holds a pod
	// Pending rather than break it).
	OnePerNode bool
}

// CreateApp creates the namespace if missing, the Deployment a.Name and,
// when a budget is given, the PDB a.Name selecting the same pods.
func CreateApp(ctx context.Context, c kubernetes.Interface, a App) error {
	if a.Namespace == "" || a.Name == "" {
		return fmt.Errorf("app needs a namespace and a name")
	}
	if a.MinAvailable != nil && a.MaxUnavailable != nil {
		return fmt.Errorf("app %s: minAvailable and maxUnavailable are exclusive", a.Name)
	}
	if err := ensureNamespace(ctx, c, a.Namespace); err != nil {
		return err
	}
	cpu := a.CPU
	if cpu == "" {
		cpu = "100m"
	}
	q, err := resource.ParseQuantity(cpu)
	if err != nil {
		return fmt.Errorf("app %s: cpu: %w", a.Name, err)
	}
	grace := a.TerminationGracePeriodSeconds
	if grace == nil {
		grace = new(int64(1))
	}
	labels := map[string]string{AppLabel: a.Name}
	var volumes []corev1.Volume
	if a.Claim != "" {
		volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: a.Claim}}}}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(a.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: a.PodAnnotations},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:      "app",
						Image:     Image,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q}},
					}},
					Volumes:                       volumes,
					NodeSelector:                  a.NodeSelector,
					Tolerations:                   a.Tolerations,
					TerminationGracePeriodSeconds: grace,
					TopologySpreadConstraints:     a.spread(labels),
					// no kubelet would use the token; skipping it keeps pods small
					AutomountServiceAccountToken: new(false),
				},
			},
		},
	}
	if _, err := c.AppsV1().Deployments(a.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment %s/%s: %w", a.Namespace, a.Name, err)
	}
	return a.createPDB(ctx, c, labels)
}

// createPDB creates the PDB a.Name over the pods labels select, when a
// budget is given.
func (a App) createPDB(ctx context.Context, c kubernetes.Interface, labels map[string]string) error {
	if a.MinAvailable == nil && a.MaxUnavailable == nil {
		return nil
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace, Labels: labels},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			MinAvailable:   a.MinAvailable,
			MaxUnavailable: a.MaxUnavailable,
		},
	}
	if _, err := c.PolicyV1().PodDisruptionBudgets(a.Namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pdb %s/%s: %w", a.Namespace, a.Name, err)
	}
	return nil
}

// spread is the pods' topology spread over nodes when a.OnePerNode.
func (a App) spread(labels map[string]string) []corev1.TopologySpreadConstraint {
	if !a.OnePerNode {
		return nil
	}
	return []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}}
}

// ensureNamespace creates ns if needed and waits for its default service
// account: pods created before it exists are rejected by admission, and the
// ReplicaSet controller then backs off for seconds.
func ensureNamespace(ctx context.Context, c kubernetes.Interface, ns string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", "default").String()
		}))
	inf := f.Core().V1().ServiceAccounts().Informer()
	lister := f.Core().V1().ServiceAccounts().Lister()
	return waitInformer(ctx, f, inf, func() (bool, string) {
		_, err := lister.ServiceAccounts(ns).Get("default")
		return err == nil, "no default service account in namespace " + ns
	})
}

// WaitAppsReady waits until every Deployment in namespace is fully rolled
// out: status observed the current generation and all replicas are updated
// and available.
func WaitAppsReady(ctx context.Context, c kubernetes.Interface, namespace string) error {
	f := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(namespace))
	inf := f.Apps().V1().Deployments().Informer()
	lister := f.Apps().V1().Deployments().Lister()
	return waitInformer(ctx, f, inf, func() (bool, string) {
		ds, err := lister.Deployments(namespace).List(everything)
		if err != nil {
			return false, err.Error()
		}
		var pending []string
		for _, d := range ds {
			if !deploymentReady(d) {
				pending = append(pending, fmt.Sprintf("%s (%d/%d available)", d.Name, d.Status.AvailableReplicas, replicas(d)))
			}
		}
		sort.Strings(pending)
		return len(pending) == 0, "deployments not ready in " + namespace + ": " + strings.Join(pending, ", ")
	})
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func deploymentReady(d *appsv1.Deployment) bool {
	want := replicas(d)
	s := d.Status
	return s.ObservedGeneration >= d.Generation &&
		s.UpdatedReplicas == want &&
		s.AvailableReplicas == want &&
		s.Replicas == want
}
