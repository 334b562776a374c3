package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// CreateAppsPlaced creates apps (Deployments and PDBs) on the nodes sel
// selects with their pods in a fixed layout: the nodes, by name, take the
// apps' replicas in turn (app by app, replica by replica), each pod
// scheduled while its node is the only schedulable one of them. The
// scheduler breaks ties between equal nodes at random, and a plan's batch
// order keeps each workload within its budget, so follows the pods on
// each node: placed so, a demo's plan with a seed is the same on every
// start (the README's sample). The nodes are schedulable again at the
// end; replacement pods go wherever the scheduler puts them.
func CreateAppsPlaced(ctx context.Context, c kubernetes.Interface, sel map[string]string, apps []App) error {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		return err
	}
	var nodes []string
	for _, n := range list.Items {
		if schedulable(&n) {
			nodes = append(nodes, n.Name)
		}
	}
	if len(nodes) == 0 {
		return fmt.Errorf("no schedulable node carries %v", sel)
	}
	slices.Sort(nodes)
	onNode := map[string][]int{} // node -> the apps of its pods, one entry a pod
	k := 0
	for i, a := range apps {
		for range a.Replicas {
			onNode[nodes[k%len(nodes)]] = append(onNode[nodes[k%len(nodes)]], i)
			k++
		}
		a.Replicas = 0
		if err := CreateApp(ctx, c, a); err != nil {
			return err
		}
	}
	defer func() {
		// The nodes open again even when the placement failed.
		for _, n := range nodes {
			_ = cordon(context.WithoutCancel(ctx), c, n, false)
		}
	}()
	for _, n := range nodes {
		if err := cordon(ctx, c, n, true); err != nil {
			return err
		}
	}
	placed := make([]int32, len(apps))
	for _, n := range nodes {
		if err := placeOn(ctx, c, n, apps, onNode[n], placed); err != nil {
			return err
		}
	}
	return nil
}

// placeOn scales the apps up by their pods on node, the one schedulable
// node of the group meanwhile, and waits until they are scheduled there.
func placeOn(ctx context.Context, c kubernetes.Interface, node string, apps []App, pods []int, placed []int32) error {
	if len(pods) == 0 {
		return nil
	}
	if err := cordon(ctx, c, node, false); err != nil {
		return err
	}
	for _, i := range pods {
		placed[i]++
	}
	for _, i := range slices.Compact(slices.Clone(pods)) {
		a := apps[i]
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, placed[i])
		if _, err := c.AppsV1().Deployments(a.Namespace).Patch(ctx, a.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("scale deployment %s/%s: %w", a.Namespace, a.Name, err)
		}
	}
	for _, i := range slices.Compact(slices.Clone(pods)) {
		if err := waitScheduled(ctx, c, apps[i], placed[i]); err != nil {
			return err
		}
	}
	return cordon(ctx, c, node, true)
}

// waitScheduled waits until n pods of app a are bound to a node.
func waitScheduled(ctx context.Context, c kubernetes.Interface, a App, n int32) error {
	sel := labels.SelectorFromSet(map[string]string{AppLabel: a.Name}).String()
	for {
		pods, err := c.CoreV1().Pods(a.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		var bound int32
		var where []string
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				bound++
				where = append(where, p.Spec.NodeName)
			}
		}
		if bound >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d pods of %s/%s scheduled (on %s): %w", bound, n, a.Namespace, a.Name, strings.Join(where, ", "), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cordon sets node's spec.unschedulable.
func cordon(ctx context.Context, c kubernetes.Interface, node string, on bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := c.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("cordon %s (%t): %w", node, on, err)
	}
	return nil
}

// schedulable reports whether a pod without tolerations may go on n.
func schedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
