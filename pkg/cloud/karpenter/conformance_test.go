package karpenter_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/karpenter"
)

// The NodePool's template hashes: its NodeClaims were launched from
// oldHash, the pool's template is at newHash now (a changed NodeClass
// reference, say), so each is drifted (NodePoolDrifted).
const (
	oldHash = "1111"
	newHash = "2222"
)

// TestKarpenterConformance runs the suite over provider karpenter: a
// NodePool of three drifted NodeClaims on the fake clientset and a fake
// dynamic client, with the part of Karpenter the provider depends on
// played by terminator (see there). The real Karpenter (v1.15, sim/karpenter)
// needs a kube-apiserver and its own binary built with its toolchain, and
// the suite stands a fresh fake up for each of its cases: it runs in the
// e2e tests of sim/e2e (karpenter_test.go) instead.
//
// Karpenter launches nodes for pending pods only, and the suite runs no
// pods: a removed node is not replaced (NoReplacement), as with the real
// Karpenter on an idle pool.
func TestKarpenterConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:      karpenter.Name,
		NodeGroup:     "np",
		Nodes:         3,
		NoReplacement: true,
		Setup:         setUpKarpenter,
		NoFaults:      "the provider's cloud is the Kubernetes API (Karpenter's objects); the client's retries of its faults are client-go's, run against sim/faultproxy in the e2e tests",
	})
}

func setUpKarpenter(t *testing.T, client kubernetes.Interface, _ conformance.Options) conformance.Env {
	t.Helper()
	ctx := context.Background()
	objs := []runtime.Object{nodePool()}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("np-%d", i)
		objs = append(objs, nodeClaim(name))
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpenter.NodePoolLabel: "np", corev1.LabelTopologyZone: "zone-a"}},
			Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		karpenter.NodePools: "NodePoolList", karpenter.NodeClaims: "NodeClaimList",
	}, objs...)
	karpenter.UseDynamic(t, dc)
	startTerminator(t, client, dc)
	return conformance.Env{
		Changes: func() []string { return changes(dc) },
		Current: func(n *corev1.Node) bool { return hashOf(dc, n.Name) == newHash },
	}
}

func nodePool() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": "np", "annotations": map[string]any{karpenter.HashAnnotation: newHash, karpenter.HashVersionAnnotation: "v3"}},
		"spec": map[string]any{
			"template":   map[string]any{"spec": map[string]any{"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "v2"}}},
			"disruption": map[string]any{"budgets": []any{map[string]any{"nodes": "10%"}}},
		},
	}}
}

// nodeClaim is a launched, registered, initialized NodeClaim of node
// name, from oldHash.
func nodeClaim(name string) *unstructured.Unstructured {
	var conds []any
	for _, c := range []string{"Launched", "Registered", "Initialized"} {
		conds = append(conds, map[string]any{"type": c, "status": "True", "reason": c})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{
			"name":        name,
			"labels":      map[string]any{karpenter.NodePoolLabel: "np", corev1.LabelTopologyZone: "zone-a"},
			"annotations": map[string]any{karpenter.HashAnnotation: oldHash, karpenter.HashVersionAnnotation: "v3"},
			"finalizers":  []any{"karpenter.sh/termination"},
		},
		"spec":   map[string]any{"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "v1"}},
		"status": map[string]any{"nodeName": name, "conditions": conds},
	}}
}

// startTerminator plays Karpenter's termination of a deleted NodeClaim
// (v1.15 pkg/controllers/nodeclaim/lifecycle and node/termination): the
// delete leaves the NodeClaim with a deletionTimestamp behind its
// karpenter.sh/termination finalizer, Karpenter deletes its Node, and the
// NodeClaim goes once the Node is gone.
func startTerminator(t *testing.T, client kubernetes.Interface, dc *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dc.PrependReactor("delete", "nodeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		o, err := dc.Tracker().Get(karpenter.NodeClaims, "", name)
		if err != nil {
			return true, nil, err
		}
		u := o.(*unstructured.Unstructured)
		if u.GetDeletionTimestamp() == nil {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
			return true, nil, dc.Tracker().Update(karpenter.NodeClaims, u, "")
		}
		return true, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			terminate(ctx, client, dc)
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// terminate deletes the Node of each NodeClaim being deleted, then the
// NodeClaim. It calls the clientset only when there is such a NodeClaim.
func terminate(ctx context.Context, client kubernetes.Interface, dc *dynamicfake.FakeDynamicClient) {
	o, err := dc.Tracker().List(karpenter.NodeClaims, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}, "")
	if err != nil {
		return
	}
	for _, u := range o.(*unstructured.UnstructuredList).Items {
		if u.GetDeletionTimestamp() == nil {
			continue
		}
		node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
		if err := client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		_ = dc.Tracker().Delete(karpenter.NodeClaims, "", u.GetName())
	}
}

// hashOf is the template hash of a node's NodeClaim, "" when none is.
func hashOf(dc *dynamicfake.FakeDynamicClient, node string) string {
	o, err := dc.Tracker().List(karpenter.NodeClaims, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}, "")
	if err != nil {
		return ""
	}
	for _, u := range o.(*unstructured.UnstructuredList).Items {
		if n, _, _ := unstructured.NestedString(u.Object, "status", "nodeName"); n == node {
			return u.GetAnnotations()[karpenter.HashAnnotation]
		}
	}
	return ""
}

// changes are the writes to Karpenter's objects so far.
func changes(dc *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range dc.Actions() {
		if !slices.Contains([]string{"get", "list", "watch"}, a.GetVerb()) {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}
