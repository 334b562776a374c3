package check

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// LabelHold, "true" on a node, is its owner's word that no run may drain
// it: the run skips it and leaves it quarantined.
const LabelHold = "nodeupgrade.dev/hold"

// Held says node n is labelled LabelHold=true.
func Held(n *corev1.Node) bool { return n.Labels[LabelHold] == "true" }

// heldNodes are the node-hold findings of in's outdated nodes.
func heldNodes(in Input) []Finding {
	var out []Finding
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if !Held(n) || !slices.Contains(in.Outdated, n.Name) {
			continue
		}
		out = append(out, Finding{Check: CheckNodeHold, Severity: Warning, Kind: "Node", Name: n.Name, Nodes: []string{n.Name},
			Message: fmt.Sprintf("node %q is labelled %s=true: the run skips it without draining and leaves it quarantined (exit 8)", n.Name, LabelHold),
			Fix:     fmt.Sprintf("remove the label %s from the node to let the run replace it", LabelHold)})
	}
	return out
}

// LabelUpgradeStatus, StatusQuarantined on a node, marks one a run left
// behind on purpose (--undrainable cordon, or its owner's hold): the next
// run takes it first.
const (
	LabelUpgradeStatus = "nodeupgrade.dev/upgrade-status"
	StatusQuarantined  = "quarantined"
)

// Quarantined says a run left node n quarantined.
func Quarantined(n *corev1.Node) bool { return n.Labels[LabelUpgradeStatus] == StatusQuarantined }
