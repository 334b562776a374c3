package karpenter

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// The resources of Karpenter's v1 API (karpenter.sh/v1, Karpenter 1.0 and
// later), read and written as unstructured objects: the plugin imports
// neither Karpenter nor controller-runtime.
var (
	nodePools  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	nodeClaims = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
)

// Karpenter's well-known keys (sigs.k8s.io/karpenter pkg/apis/v1/labels.go).
const (
	NodePoolLabel     = "karpenter.sh/nodepool"
	hashAnnotation    = "karpenter.sh/nodepool-hash"
	hashVersionAnnot  = "karpenter.sh/nodepool-hash-version"
	driftedCondition  = "Drifted"
	launchedCondition = "Launched"
	registered        = "Registered"
	initialized       = "Initialized"
	// nodePoolDrifted is the reason Karpenter gives a NodeClaim whose
	// NodePool's template hash moved on (pkg/controllers/nodeclaim/disruption/drift.go).
	nodePoolDrifted = "NodePoolDrifted"
)

// dynamicFor makes the dynamic client the provider reads Karpenter's
// objects with (cloud.DynamicFor). Tests replace it.
var dynamicFor = func(client kubernetes.Interface) (dynamic.Interface, error) {
	return cloud.DynamicFor(client, "Karpenter's NodePools")
}

// nodePool is what the provider reads of a NodePool.
type nodePool struct {
	Name string
	// NodeClass is the template's nodeClassRef, kind/name; Ref all of it.
	NodeClass   string
	Ref         nodeClassRef
	Hash        string
	HashVersion string
	// Budgets is spec.disruption.budgets as the API server returns it.
	Budgets         json.RawMessage
	Annotation      map[string]string
	ResourceVersion string
}

func readPool(ctx context.Context, dc dynamic.Interface, name string) (*nodePool, error) {
	u, err := dc.Resource(nodePools).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &inputError{fmt.Sprintf("NodePool %q not found: the nodes' label %s names a NodePool that no longer exists", name, NodePoolLabel)}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read NodePool %q: %w", name, err)
	}
	p := &nodePool{Name: name, Annotation: u.GetAnnotations(), ResourceVersion: u.GetResourceVersion()}
	p.Ref = refOf(u.Object, "spec", "template", "spec", "nodeClassRef")
	p.NodeClass = p.Ref.short()
	p.Hash, p.HashVersion = p.Annotation[hashAnnotation], p.Annotation[hashVersionAnnot]
	budgets, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "disruption", "budgets")
	if found {
		if p.Budgets, err = json.Marshal(budgets); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func refOf(obj map[string]any, path ...string) nodeClassRef {
	var r nodeClassRef
	r.Group, _, _ = unstructured.NestedString(obj, append(path, "group")...)
	r.Kind, _, _ = unstructured.NestedString(obj, append(path, "kind")...)
	r.Name, _, _ = unstructured.NestedString(obj, append(path, "name")...)
	return r
}

// nodeClaim is what the provider reads of a NodeClaim.
type nodeClaim struct {
	Name, Node, Zone, NodeClass string
	Ref                         nodeClassRef
	Hash, HashVersion           string
	// Drift is the Drifted condition's reason where it is True.
	Drift string
	// Conditions are status and message by type (Launched, Registered,
	// Initialized).
	Conditions map[string]condition
	Deleting   bool
	Created    metav1.Time
	// ExpireAfter is spec.expireAfter ("720h", "Never"; "" when unset).
	ExpireAfter string
	// DoNotDisrupt: the NodeClaim is annotated karpenter.sh/do-not-disrupt.
	DoNotDisrupt bool
}

type condition struct {
	Status, Reason, Message string
	Since                   time.Time // lastTransitionTime
}

func listClaims(ctx context.Context, dc dynamic.Interface, pool string) ([]nodeClaim, error) {
	l, err := dc.Resource(nodeClaims).List(ctx, metav1.ListOptions{LabelSelector: NodePoolLabel + "=" + pool})
	if err != nil {
		return nil, fmt.Errorf("cannot list the NodeClaims of NodePool %q: %w", pool, err)
	}
	out := make([]nodeClaim, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, toClaim(&l.Items[i]))
	}
	return out, nil
}

func toClaim(u *unstructured.Unstructured) nodeClaim {
	c := nodeClaim{Name: u.GetName(), Deleting: u.GetDeletionTimestamp() != nil, Created: u.GetCreationTimestamp(), Conditions: map[string]condition{}}
	c.Node, _, _ = unstructured.NestedString(u.Object, "status", "nodeName")
	c.Zone = u.GetLabels()["topology.kubernetes.io/zone"]
	c.Ref = refOf(u.Object, "spec", "nodeClassRef")
	c.NodeClass = c.Ref.short()
	c.Hash, c.HashVersion = u.GetAnnotations()[hashAnnotation], u.GetAnnotations()[hashVersionAnnot]
	c.ExpireAfter, _, _ = unstructured.NestedString(u.Object, "spec", "expireAfter")
	c.DoNotDisrupt = check.NodeDoNotDisrupt(u.GetAnnotations())
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		typ, _ := m["type"].(string)
		var cd condition
		cd.Status, _ = m["status"].(string)
		cd.Reason, _ = m["reason"].(string)
		cd.Message, _ = m["message"].(string)
		if at, _ := m["lastTransitionTime"].(string); at != "" {
			cd.Since, _ = time.Parse(time.RFC3339, at)
		}
		c.Conditions[typ] = cd
	}
	if d := c.Conditions[driftedCondition]; d.Status == "True" {
		c.Drift = d.Reason
	}
	return c
}

// expiresAt is when Karpenter deletes the NodeClaim for its age: its
// creation plus spec.expireAfter (pkg/controllers/nodeclaim/expiration:
// the NodeClaim is deleted then, budgets or not); false when it never
// expires ("Never", unset) or the duration does not parse.
func (c nodeClaim) expiresAt() (time.Time, bool) {
	d, err := time.ParseDuration(c.ExpireAfter)
	if c.ExpireAfter == "" || c.ExpireAfter == "Never" || err != nil || c.Created.IsZero() {
		return time.Time{}, false
	}
	return c.Created.Add(d), true
}

// driftOf says why a NodeClaim is drifted from its NodePool, "" when it
// is not: Karpenter's Drifted condition, or the static drift Karpenter
// marks a moment later (the template hash moved on, hash versions
// agreeing), so that a plan made right after the change sees it.
func driftOf(c nodeClaim, p *nodePool) string {
	switch {
	case c.Drift != "":
		return c.Drift
	case c.Hash != "" && p.Hash != "" && c.HashVersion == p.HashVersion && c.Hash != p.Hash:
		return nodePoolDrifted
	}
	return ""
}
