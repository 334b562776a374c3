package drain

import (
	"errors"
	"fmt"
	"net/url"
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

// EvictionUnreachable ends a drain whose remaining pods' evictions never
// reached the API server: each one's last attempt lost its connection
// (reset, closed, GOAWAY, EOF) until the timeout. No PodDisruptionBudget
// answered, so it is no PodEvictionFailure: the same command run again
// evicts them once the server answers.
type EvictionUnreachable struct {
	Node    string
	Timeout time.Duration // 0 when the drain ended before it
	Pods    []string      // namespace/name
	Err     error         // the last lost connection
}

func (e *EvictionUnreachable) Error() string {
	var b strings.Builder
	b.WriteString("cannot reach the API server while evicting ")
	shown := e.Pods[:min(len(e.Pods), 3)]
	fmt.Fprintf(&b, "%s %s", plural(len(e.Pods), "pod", "pods"), quoteEach(shown))
	if more := len(e.Pods) - len(shown); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	fmt.Fprintf(&b, " of node %q", e.Node)
	if e.Timeout > 0 {
		fmt.Fprintf(&b, " until the drain timeout (%v)", e.Timeout)
	}
	if e.Err != nil {
		b.WriteString(": " + oneLine(connectionCause(e.Err)))
	}
	b.WriteString("; run the same command again to continue")
	return b.String()
}

// connectionCause words a lost request's error without its URL, which says
// less than the words around it.
func connectionCause(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return strings.Replace(err.Error(), uerr.Error(), uerr.Err.Error(), 1)
	}
	return err.Error()
}

func quoteEach(names []string) string {
	q := make([]string, len(names))
	for i, s := range names {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// NodeErrors are the errors of several nodes' drains, told on one line:
// the first, and the nodes of the others. errors.As and errors.Is look at
// each of them: a PodEvictionFailure of any node decides the exit code.
type NodeErrors struct {
	Nodes []string // of each error, "" where it is no node's
	Errs  []error
}

func (e *NodeErrors) Error() string {
	first := oneLine(e.Errs[0].Error())
	if len(e.Errs) == 1 {
		return first
	}
	var nodes []string
	for _, n := range e.Nodes[1:] {
		if n != "" {
			nodes = append(nodes, fmt.Sprintf("%q", n))
		}
	}
	more := fmt.Sprintf("; and %d more", len(e.Errs)-1)
	if len(nodes) > 0 {
		more += fmt.Sprintf(" (%s %s)", plural(len(nodes), "node", "nodes"), strings.Join(nodes, ", "))
	}
	return first + more
}

func (e *NodeErrors) Unwrap() []error { return e.Errs }

// joinNodeErrors returns the errors of nodes (errs[i] of nodes[i], nil
// where none) as one error on one line, or nil when there is none.
func joinNodeErrors(nodes []string, errs []error) error {
	out := &NodeErrors{}
	for i, err := range errs {
		if err != nil {
			out.Errs = append(out.Errs, err)
			out.Nodes = append(out.Nodes, nodes[i])
		}
	}
	switch len(out.Errs) {
	case 0:
		return nil
	case 1:
		if !strings.Contains(out.Errs[0].Error(), "\n") {
			return out.Errs[0]
		}
	}
	return out
}

// oneLine keeps an error on one line whatever its parts put in it
// (errors.Join puts a line feed between them).
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}
