package aks

import (
	"context"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// heldBy finds the pod and the PDB AKS names in a drain failure: "PDB
// debug info: <namespace>/<pod> blocked by pdb <pdb>"
// (https://learn.microsoft.com/en-us/troubleshoot/azure/azure-kubernetes/create-upgrade-delete/error-code-poddrainfailure);
// evictedPod the pod alone where AKS gives no debug info.
var (
	heldBy     = regexp.MustCompile(`PDB debug info: (\S+) blocked by pdb (\S+?)[\s.,;]`)
	evictedPod = regexp.MustCompile(`evicting pod (\S+)`)
)

// poolNodes is what a failed update's report reads of the pool's nodes
// in the cluster: the pool, its count and undrainableNodeBehavior.
type poolNodes struct {
	kube     kubernetes.Interface
	pool     string
	count    int32
	behavior string
}

// poolNodesOf is the pool as a failure report reads it.
func poolNodesOf(a *AgentPool) poolNodes {
	return poolNodes{kube: a.kube, pool: a.name, count: a.count(), behavior: a.raw.extra.UndrainableNodeBehavior}
}

// withDrain adds to a drain failure AKS reports what AKS says and did:
// the pod and PDB its message names and, under undrainableNodeBehavior
// Schedule (the default), what it does on giving up: "AKS will mark the
// blocked nodes schedulable, but the blocked nodes are not upgraded. A
// best-effort attempt will be made to delete all surge nodes"
// (UndrainableNodeBehavior, the REST spec's 2025-05-01;
// https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#optimize-upgrades-to-improve-performance-and-minimize-disruptions).
// Best effort, so what it did is read from the cluster, not assumed.
func (a poolNodes) withDrain(ctx context.Context, e cloud.UpdateError) cloud.UpdateError {
	if e.Code != cloud.CodePodEviction || len(e.Nodes) == 0 {
		return e
	}
	d := &plan.ServiceDrainFailure{Node: e.Nodes[0], Behavior: a.behavior}
	if d.Behavior == "" {
		d.Behavior = undrainableSchedule
	}
	if m := heldBy.FindStringSubmatch(e.Message + " "); m != nil {
		d.Pod, d.PDB = m[1], m[2]
		if ns, _, ok := strings.Cut(d.Pod, "/"); ok && !strings.Contains(d.PDB, "/") {
			d.PDB = ns + "/" + d.PDB // a PDB is in its pod's namespace
		}
	} else if m := evictedPod.FindStringSubmatch(e.Message); m != nil {
		d.Pod = m[1]
	}
	if d.Behavior == undrainableSchedule && a.kube != nil {
		d.Schedulable, d.SurgeRemoved = a.afterGivingUp(ctx, d.Node)
	}
	e.Drain = d
	return e
}

// afterGivingUp reads from the cluster whether the node is schedulable
// and the pool down to its count: AKS's surge nodes deleted.
func (a poolNodes) afterGivingUp(ctx context.Context, node string) (schedulable, surgeRemoved bool) {
	list, err := a.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: AgentPoolLabel + "=" + a.pool})
	if err != nil {
		return false, false
	}
	for _, n := range list.Items {
		if n.Name == node {
			schedulable = !n.Spec.Unschedulable
		}
	}
	return schedulable, len(list.Items) <= int(a.count)
}

// withLaunch adds to AKS's refusal of the upgrade's new nodes whether it
// drained any node first, read from the cluster: none of the pool's nodes
// cordoned is a failure before any drain, the pool as it was.
func (a poolNodes) withLaunch(ctx context.Context, e cloud.UpdateError) cloud.UpdateError {
	if e.Code != cloud.CodeNodeCreation || a.kube == nil {
		return e
	}
	list, err := a.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: AgentPoolLabel + "=" + a.pool})
	if err != nil {
		return e
	}
	for _, n := range list.Items {
		if n.Spec.Unschedulable {
			return e
		}
	}
	e.Message += ", before it drained any node (none of the pool's nodes is cordoned): free the capacity or quota, or lower --max-surge, then run the same command again"
	return e
}
