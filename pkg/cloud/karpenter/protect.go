package karpenter

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// protected are the findings of the pool's nodes that Karpenter's
// do-not-disrupt protects: the Node or its NodeClaim annotated "true".
// Karpenter reads the NodeClaim's annotations until the node registers
// and the Node's after, having copied the NodeClaim's onto it then
// (v1.15.0 pkg/controllers/state/statenode.go Annotations,
// nodeclaim/lifecycle/registration.go syncNode); either protects the node
// here, since both are the user's word that it stays.
func protected(claims []nodeClaim, nodes []corev1.Node) []check.Finding {
	annotated := map[string]bool{}
	for i := range nodes {
		if check.NodeDoNotDisrupt(nodes[i].Annotations) {
			annotated[nodes[i].Name] = true
		}
	}
	var out []check.Finding
	for _, c := range claims {
		if c.Node == "" || (!c.DoNotDisrupt && !annotated[c.Node]) {
			continue
		}
		out = append(out, protectedFinding(c, annotated[c.Node]))
		delete(annotated, c.Node)
	}
	for i := range nodes { // a node without a NodeClaim of the pool
		if n := nodes[i].Name; annotated[n] {
			out = append(out, protectedFinding(nodeClaim{Node: n}, true))
		}
	}
	return out
}

func protectedFinding(c nodeClaim, nodeAnnotated bool) check.Finding {
	f := check.Finding{Check: check.CheckNodeDoNotDisrupt, Severity: check.Blocker, Nodes: []string{c.Node}}
	ann := check.AnnDoNotDisrupt + `="true"`
	const why = "Karpenter does not drift or consolidate it"
	const lift = "; neither --force nor --ignore-check lifts it"
	switch {
	case c.DoNotDisrupt && nodeAnnotated:
		f.Kind, f.Name = "Node", c.Node
		f.Message = fmt.Sprintf("node %q and its NodeClaim %q are annotated %s: %s", c.Node, c.Name, ann, why)
		f.Fix = fmt.Sprintf("to replace it, remove both annotations: kubectl annotate node %s %s- and kubectl annotate nodeclaim %s %s-%s", c.Node, check.AnnDoNotDisrupt, c.Name, check.AnnDoNotDisrupt, lift)
	case c.DoNotDisrupt:
		f.Kind, f.Name = "NodeClaim", c.Name
		f.Message = fmt.Sprintf("NodeClaim %q of node %q is annotated %s: %s", c.Name, c.Node, ann, why)
		f.Fix = fmt.Sprintf("to replace it, remove the annotation: kubectl annotate nodeclaim %s %s-%s", c.Name, check.AnnDoNotDisrupt, lift)
	default:
		f.Kind, f.Name = "Node", c.Node
		f.Message = fmt.Sprintf("node %q is annotated %s: %s", c.Node, ann, why)
		f.Fix = fmt.Sprintf("to replace it, remove the annotation: kubectl annotate node %s %s-%s", c.Node, check.AnnDoNotDisrupt, lift)
	}
	return f
}
