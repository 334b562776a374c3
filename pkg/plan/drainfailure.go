package plan

import (
	"fmt"
	"strings"
)

// ServiceDrainFailure is a drain a cloud's service gave up on in its own
// update, and what the service did then, as it reported it and the
// cluster showed it: what a run records and says of such a failure.
type ServiceDrainFailure struct {
	Node string `json:"node"`
	// Pod and PDB are the pod the service could not evict and the PDB that
	// held it (namespace/name), where the service names them.
	Pod string `json:"pod,omitempty"`
	PDB string `json:"pdb,omitempty"`
	// Behavior is the service's setting that decided what followed (AKS's
	// undrainableNodeBehavior).
	Behavior string `json:"behavior,omitempty"`
	// Schedulable: the service made the node schedulable again, not
	// upgraded. SurgeRemoved: it deleted the nodes it added for the
	// update.
	Schedulable  bool `json:"schedulable,omitempty"`
	SurgeRemoved bool `json:"surgeRemoved,omitempty"`
}

// String says what the service did, for the run's failure and status.
func (f ServiceDrainFailure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %q not drained", f.Node)
	switch {
	case f.Pod != "" && f.PDB != "":
		fmt.Fprintf(&b, " (pod %q held by PodDisruptionBudget %q)", f.Pod, f.PDB)
	case f.Pod != "":
		fmt.Fprintf(&b, " (pod %q)", f.Pod)
	}
	var did []string
	if f.Schedulable {
		did = append(did, "made it schedulable again, not upgraded")
	}
	if f.SurgeRemoved {
		did = append(did, "deleted its surge nodes")
	}
	if len(did) == 0 {
		return b.String()
	}
	b.WriteString("; ")
	if f.Behavior != "" {
		fmt.Fprintf(&b, "under undrainableNodeBehavior %s ", f.Behavior)
	}
	b.WriteString("the service")
	return b.String() + " " + strings.Join(did, ", and ")
}
