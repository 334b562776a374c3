package karpenter

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// DemoBudgets are the demo NodePool's budgets: drift only through the
// plugin (a Drifted budget of 0, as docs/providers/karpenter.md advises),
// any other disruption 20% of the nodes at a time.
var DemoBudgets = []any{
	map[string]any{"nodes": "0", "reasons": []any{"Drifted"}},
	map[string]any{"nodes": "20%"},
}

// Demo makes NodePool name of 9 nodes over three zones (NodeClass
// name-v1), namespace name with two Deployments and their PDBs, waits
// until they are Ready, then points the NodePool at NodeClass name-v2 and
// waits until Karpenter hashed the new template: every node is drifted.
func Demo(ctx context.Context, client kubernetes.Interface, dc dynamic.Interface, name string) error {
	spec := PoolSpec{Name: name, NodeClass: name + "-v1", Zones: Zones[:3], Budgets: DemoBudgets}
	if err := Create(ctx, dc, NodeClass(name+"-v1"), NodeClass(name+"-v2"), Pool(spec)); err != nil {
		return err
	}
	if err := namespace(ctx, client, name); err != nil {
		return err
	}
	one, seven := intstr.FromInt(1), intstr.FromInt(7)
	for _, w := range []struct {
		name, cpu string
		oneNode   bool
		pdb       policyv1.PodDisruptionBudgetSpec
	}{
		{"web", "500m", true, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one}},
		{"api", "300m", false, policyv1.PodDisruptionBudgetSpec{MinAvailable: &seven}},
	} {
		if _, err := client.AppsV1().Deployments(name).Create(ctx, Workload(name, w.name, name, 9, w.cpu, w.oneNode), metav1.CreateOptions{}); err != nil {
			return err
		}
		w.pdb.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.name}}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: w.name}, Spec: w.pdb}
		if _, err := client.PolicyV1().PodDisruptionBudgets(name).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := waitReady(ctx, client, name, "web", "api"); err != nil {
		return err
	}
	return ChangeNodeClass(ctx, dc, name, name+"-v2")
}

// ChangeNodeClass points NodePool pool at KWOKNodeClass class and waits
// until Karpenter hashed the new template (its drift follows).
func ChangeNodeClass(ctx context.Context, dc dynamic.Interface, pool, class string) error {
	u, err := dc.Resource(NodePools).Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		return err
	}
	hash := u.GetAnnotations()["karpenter.sh/nodepool-hash"]
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.kwok.sh","kind":"KWOKNodeClass","name":%q}}}}}`, class)
	if _, err := dc.Resource(NodePools).Patch(ctx, pool, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := dc.Resource(NodePools).Get(ctx, pool, metav1.GetOptions{})
		return err == nil && u.GetAnnotations()["karpenter.sh/nodepool-hash"] != hash, nil
	})
	if err != nil {
		return fmt.Errorf("karpenter never hashed NodePool %q's new template: %w", pool, err)
	}
	return nil
}

// namespace creates ns and waits for its service account: pods created
// before it are refused.
func namespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// waitReady waits until the Deployments have all their replicas Ready.
func waitReady(ctx context.Context, client kubernetes.Interface, ns string, names ...string) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			d, err := client.AppsV1().Deployments(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil || d.Spec.Replicas == nil || d.Status.ReadyReplicas != *d.Spec.Replicas {
				return false, nil
			}
		}
		return true, nil
	})
}
