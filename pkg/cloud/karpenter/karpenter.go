// Package karpenter is the provider for nodes Karpenter launches: the node
// group is a NodePool (the nodes' karpenter.sh/nodepool label), a node is
// outdated when its NodeClaim is Drifted, and a run holds Karpenter's own
// drift replacement and consolidation off for the pool (a budget of 0 for
// Drifted, Underutilized and Empty beside the user's budgets, which the
// end and abort put back as they were) while it drains the nodes in waves
// itself and deletes their NodeClaims, leaving launching and terminating
// to Karpenter. It reads and writes Karpenter's objects as unstructured
// ones, through the dynamic client.
package karpenter

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Name is what --provider takes.
const Name = "karpenter"

func init() { cloud.Register(Cloud{}) }

// Cloud is the provider as planning sees it.
type Cloud struct{}

// Name implements cloud.Cloud.
func (Cloud) Name() string { return Name }

// Owns implements cloud.Cloud: Karpenter's machines are its cloud's (aws://,
// kwok://), so it knows its nodes by label instead (Claims).
func (Cloud) Owns(string) bool { return false }

// Claims implements cloud.Claimer: a node Karpenter launched carries its
// NodePool's name.
func (Cloud) Claims(n *corev1.Node) bool { return n.Labels[NodePoolLabel] != "" }

// NodeGroupLabels implements cloud.NodeGroupLabeler.
func (Cloud) NodeGroupLabels() []string { return []string{NodePoolLabel} }

// RefuseNone implements cloud.Exclusive.
func (Cloud) RefuseNone(nodes []corev1.Node) string {
	pool, _ := poolOf(nodes, "")
	return fmt.Sprintf("cannot use --provider none on the nodes of Karpenter's NodePool %q (label %s): it would delete their Node objects while Karpenter replaces the same nodes itself; use --provider karpenter", pool, NodePoolLabel)
}

// Help implements cloud.Helper.
func (Cloud) Help() string {
	return "delete the drained node's NodeClaim; Karpenter launches for its pods and terminates the node (its drift and consolidation held off for the pool during the run)"
}

// inputError is an error the user fixes by changing a flag or an object
// (exit 2).
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Input() bool   { return true }

// Validate implements cloud.Cloud: the provider has no flags of its own.
func (Cloud) Validate(plan.CloudTarget) error { return nil }

// Open implements cloud.Cloud: the nodes' NodePool, its NodeClaims and
// which of them drifted, read only.
func (Cloud) Open(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	pool, err := poolOf(nodes, t.Group)
	if err != nil {
		return nil, nil, err
	}
	dc, err := dynamicFor(client)
	if err != nil {
		return nil, nil, err
	}
	np, err := readPool(ctx, dc, pool)
	if err != nil {
		return nil, nil, err
	}
	claims, err := listClaims(ctx, dc, pool)
	if err != nil {
		return nil, nil, err
	}
	p := &NodePool{client: client, dyn: dc, name: pool}
	if t.Version != "" {
		// A rollback after a finished run: the NodeClass recorded before it.
		if p.target, err = targetClass(ctx, client, dc, pool, t.Version); err != nil {
			return nil, nil, err
		}
	}
	cg := p.view(np, claims)
	// Karpenter's drift waits on do-not-disrupt: the plan's does too.
	cg.DoNotDisrupt, cg.Findings = true, protected(claims, nodes)
	return cg, p, nil
}

// poolOf is the one NodePool the nodes belong to.
func poolOf(nodes []corev1.Node, named string) (string, error) {
	var pools []string
	for i := range nodes {
		if p := nodes[i].Labels[NodePoolLabel]; p != "" && !slices.Contains(pools, p) {
			pools = append(pools, p)
		}
	}
	slices.Sort(pools)
	switch {
	case named != "":
		return named, nil
	case len(pools) == 0:
		return "", &inputError{fmt.Sprintf("no node carries the label %s: --provider karpenter serves nodes Karpenter launched", NodePoolLabel)}
	case len(pools) > 1:
		return "", &inputError{fmt.Sprintf("the nodes belong to NodePools %s: select the nodes of one (NODEGROUP with --nodegroup-label %s)", quoted(pools), NodePoolLabel)}
	}
	return pools[0], nil
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
