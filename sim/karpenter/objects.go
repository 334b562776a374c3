package karpenter

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// The resources of Karpenter's API (karpenter.sh/v1) and of its KWOK
// provider's NodeClass.
var (
	NodePools   = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaims  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	NodeClasses = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
)

// Zones are those of the KWOK provider's instance types
// (kwok/cloudprovider/instance_types.json).
var Zones = []string{"test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"}

// TaintKey is the taint every pool made here puts on its nodes, valued
// with the pool's name: Karpenter launches for the pods that tolerate it
// alone, so it leaves the pending pods of other tests in one cluster be.
const TaintKey = "sim.nodeupgrade.io/karpenter"

// PoolSpec describes a NodePool for Pool.
type PoolSpec struct {
	Name      string
	NodeClass string   // a KWOKNodeClass
	Zones     []string // topology.kubernetes.io/zone values it launches in
	// InstanceType is the one type it launches (default c-2x-amd64-linux:
	// 2 CPUs), so that tests know how many pods a node holds.
	InstanceType string
	// Budgets are spec.disruption.budgets as written, nil: Karpenter's default.
	Budgets []any
}

// NodeClass is a KWOKNodeClass.
func NodeClass(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
		"metadata": map[string]any{"name": name},
	}}
}

// Pool is a NodePool of s: on-demand linux/amd64 nodes of one instance
// type, tainted with TaintKey, consolidating only when empty.
func Pool(s PoolSpec) *unstructured.Unstructured {
	it := s.InstanceType
	if it == "" {
		it = "c-2x-amd64-linux"
	}
	zones := make([]any, len(s.Zones))
	for i, z := range s.Zones {
		zones[i] = z
	}
	disruption := map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
	if s.Budgets != nil {
		disruption["budgets"] = s.Budgets
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": s.Name},
		"spec": map[string]any{
			"template": map[string]any{
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": s.NodeClass},
					"requirements": []any{
						req(corev1.LabelTopologyZone, zones...),
						req(corev1.LabelInstanceTypeStable, it),
						req("karpenter.sh/capacity-type", "on-demand"),
					},
					"taints": []any{map[string]any{"key": TaintKey, "value": s.Name, "effect": "NoSchedule"}},
				},
			},
			"disruption": disruption,
		},
	}}
}

func req(key string, values ...any) map[string]any {
	return map[string]any{"key": key, "operator": "In", "values": values}
}

// Create creates objs (cluster-scoped) with dc.
func Create(ctx context.Context, dc dynamic.Interface, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		gvr := NodePools
		if o.GetKind() == "KWOKNodeClass" {
			gvr = NodeClasses
		}
		if _, err := dc.Resource(gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s %q: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// PoolClaims lists the NodeClaims of a NodePool.
func PoolClaims(ctx context.Context, dc dynamic.Interface, pool string) ([]unstructured.Unstructured, error) {
	l, err := dc.Resource(NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + pool})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Condition returns the status and reason of a NodeClaim's condition.
func Condition(nc *unstructured.Unstructured, typ string) (status, reason string) {
	conds, _, _ := unstructured.NestedSlice(nc.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// DeletePool deletes a NodePool and waits until its NodeClaims are gone
// (Karpenter terminates them) and the NodeClasses given, so that a test
// leaves the cluster as it found it.
func DeletePool(ctx context.Context, dc dynamic.Interface, pool string, classes ...string) error {
	if err := dc.Resource(NodePools).Delete(ctx, pool, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ncs, err := PoolClaims(ctx, dc, pool)
		return len(ncs) == 0, err
	})
	if err != nil {
		return fmt.Errorf("the NodeClaims of NodePool %q are not gone: %w", pool, err)
	}
	for _, c := range classes {
		if err := dc.Resource(NodeClasses).Delete(ctx, c, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// Workload is a Deployment of n pods of cpu each in namespace ns, on the
// pool's nodes (tolerating its taint), spread over the zones; oneNode
// puts one pod per node at most, so that n pods need n nodes.
func Workload(ns, name, pool string, n int32, cpu string, oneNode bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	sel := &metav1.LabelSelector{MatchLabels: labels}
	spec := corev1.PodSpec{
		NodeSelector:                  map[string]string{"karpenter.sh/nodepool": pool},
		Tolerations:                   []corev1.Toleration{{Key: TaintKey, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}},
		TopologySpreadConstraints:     []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}},
		TerminationGracePeriodSeconds: ptr.To(int64(1)),
		AutomountServiceAccountToken:  ptr.To(false),
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}},
	}
	if oneNode {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: sel, TopologyKey: corev1.LabelHostname}},
		}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: sel,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}
