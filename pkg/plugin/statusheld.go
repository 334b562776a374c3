package plugin

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// HeldNow is a pod on a node the run drains whose eviction a PDB refuses
// now: what holds the node, as status -w shows it live.
type HeldNow struct {
	Node string `json:"node"`
	Pod  string `json:"pod"`
	PDB  string `json:"pdb"`
}

// heldNow reads which pods and PDBs hold the nodes in flight of a live
// run that drains: the pods still on them whose PDB allows no disruption.
func (o *StatusOptions) heldNow(ctx context.Context, s RunStatus) ([]HeldNow, error) {
	if !s.Alive || plan.Phase(s.Phase) != plan.PhaseDrain || len(s.InFlight) == 0 {
		return nil, nil
	}
	pdbs, err := o.client.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot read what holds the nodes: %w", err)
	}
	index := drain.NewPDBIndex(pdbs.Items)
	var held []HeldNow
	for _, node := range s.InFlight {
		pods, err := o.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if err != nil {
			return nil, fmt.Errorf("cannot read what holds node %q: %w", node, err)
		}
		for i := range pods.Items {
			held = append(held, podHeldBy(node, &pods.Items[i], index)...)
		}
	}
	return held, nil
}

// podHeldBy names the PDBs that refuse the eviction of pod now.
func podHeldBy(node string, pod *corev1.Pod, index *drain.PDBIndex) []HeldNow {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	var out []HeldNow
	for _, p := range index.ForPod(pod) {
		if p.Status.DisruptionsAllowed < 1 {
			out = append(out, HeldNow{Node: node, Pod: pod.Namespace + "/" + pod.Name, PDB: p.Namespace + "/" + p.Name})
		}
	}
	return out
}

// heldText is the part of a -w line that names what holds the nodes.
func heldText(held []HeldNow) string {
	parts := make([]string, 0, min(len(held), 3))
	for _, h := range held[:min(len(held), 3)] {
		parts = append(parts, fmt.Sprintf("pod %s by PDB %s on %s", h.Pod, h.PDB, h.Node))
	}
	s := "held: " + strings.Join(parts, "; ")
	if len(held) > 3 {
		s += fmt.Sprintf(" and %d more", len(held)-3)
	}
	return s
}
