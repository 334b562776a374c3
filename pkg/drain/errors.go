package drain

import (
	"fmt"
	"strings"
	"time"
)

// Reasons a pod is left on its node; PodEvictionFailure picks its hints from them.
const (
	ReasonPDB          = "blocked by PodDisruptionBudget"
	ReasonMultiplePDBs = "blocked by multiple PodDisruptionBudgets (the eviction API refuses pods selected by more than one)"
	ReasonBare         = "not managed by a controller"
	ReasonEmptyDir     = "uses emptyDir"
	ReasonTerminating  = "still terminating"
	ReasonNotEvicted   = "not evicted yet"
)

// BlockedPod is a pod a drain could not remove, and why.
type BlockedPod struct {
	Namespace, Name string
	Reason          string // one of the Reason constants, or "eviction failed: " or "not evicted: " and the API error
	PDBs            []PDBStatus
}

func (b BlockedPod) String() string {
	name := fmt.Sprintf("pod %q", b.Namespace+"/"+b.Name)
	if len(b.PDBs) == 0 {
		return name + " " + b.Reason
	}
	pdbs := make([]string, len(b.PDBs))
	for i, p := range b.PDBs {
		pdbs[i] = p.String()
	}
	switch b.Reason {
	case ReasonPDB:
		// "blocked by PodDisruptionBudget "ns/web" (...)"
		return name + " blocked by " + strings.Join(pdbs, ", ")
	default:
		return name + " " + b.Reason + ": " + strings.Join(pdbs, ", ")
	}
}

// PodEvictionFailure is the EKS error name: pods still on the node after the
// timeout without Force, or pods the drain refuses up front (bare/emptyDir)
// without Force / DeleteEmptyDirData.
type PodEvictionFailure struct {
	Node    string
	Timeout time.Duration
	Pods    []BlockedPod
}

func (e *PodEvictionFailure) Error() string {
	refusedOnly := len(e.Pods) > 0
	needForce, needEmptyDir := false, false
	for _, p := range e.Pods {
		bare := strings.Contains(p.Reason, ReasonBare)
		emptyDir := strings.Contains(p.Reason, ReasonEmptyDir)
		if !bare && !emptyDir {
			refusedOnly = false
		}
		switch {
		case emptyDir && !bare:
			needEmptyDir = true
		case emptyDir && bare:
			needEmptyDir, needForce = true, true
		case p.Reason == ReasonTerminating:
			// deleting again would not make it go faster
		default:
			needForce = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "PodEvictionFailure: node %q: %d %s ", e.Node, len(e.Pods), plural(len(e.Pods), "pod", "pods"))
	switch {
	case refusedOnly:
		b.WriteString("cannot be evicted")
	case e.Timeout > 0:
		fmt.Fprintf(&b, "still running after %v", e.Timeout)
	default:
		b.WriteString("could not be evicted")
	}
	for i, p := range e.Pods {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		// keep the error on one line whatever the API put in a message
		b.WriteString(strings.ReplaceAll(p.String(), "\n", " "))
	}
	if needForce {
		b.WriteString("; use --force to delete them")
	}
	if needEmptyDir {
		b.WriteString("; use --delete-emptydir-data")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
