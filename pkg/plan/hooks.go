package plan

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Hooks are the commands a run runs around each node (--pre-drain-hook,
// --post-drain-hook, --pre-terminate-hook; empty: none) and how long each
// one, and each wait for annotation hooks, may take (--hook-timeout).
type Hooks struct {
	PreDrain     string   `json:"preDrain,omitempty"`
	PostDrain    string   `json:"postDrain,omitempty"`
	PreTerminate string   `json:"preTerminate,omitempty"`
	Timeout      Duration `json:"timeout,omitempty"`
}

// DefaultHookTimeout is --hook-timeout when not given.
const DefaultHookTimeout = 10 * time.Minute

// The hooks by name, as the environment, the record and messages name them.
const (
	HookPreDrain     = "pre-drain"
	HookPostDrain    = "post-drain"
	HookPreTerminate = "pre-terminate"
)

// Annotation hooks, Cluster API style: a Node annotated with a key of one
// of these prefixes (the hook's name after the slash, its owner as the
// value) is not drained (removed) until the owner takes the annotation off.
const (
	PreDrainHookPrefix     = "pre-drain.hook.nodeupgrade.dev/"
	PreTerminateHookPrefix = "pre-terminate.hook.nodeupgrade.dev/"
)

// Command is the command of the named hook; "" when none is set.
func (h Hooks) Command(hook string) string {
	switch hook {
	case HookPreDrain:
		return h.PreDrain
	case HookPostDrain:
		return h.PostDrain
	case HookPreTerminate:
		return h.PreTerminate
	}
	return ""
}

// Any says whether a command hook is set.
func (h Hooks) Any() bool { return h.PreDrain != "" || h.PostDrain != "" || h.PreTerminate != "" }

// TimeoutOrDefault is the timeout, DefaultHookTimeout when unset (records
// of versions without hooks).
func (h Hooks) TimeoutOrDefault() time.Duration {
	if h.Timeout <= 0 {
		return DefaultHookTimeout
	}
	return time.Duration(h.Timeout)
}

// AnnotationHooks returns the sorted annotation keys of node with prefix.
func AnnotationHooks(n *corev1.Node, prefix string) []string {
	var keys []string
	for k := range n.Annotations {
		if strings.HasPrefix(k, prefix) && len(k) > len(prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// HookedNode is a node of the group that carries annotation hooks now:
// its drain (removal) waits until they are taken off.
type HookedNode struct {
	Node         string   `json:"node"`
	PreDrain     []string `json:"preDrain,omitempty"`
	PreTerminate []string `json:"preTerminate,omitempty"`
}

// hookedNodes lists the nodes carrying annotation hooks, by name.
func hookedNodes(nodes []corev1.Node) []HookedNode {
	var out []HookedNode
	for i := range nodes {
		n := &nodes[i]
		h := HookedNode{Node: n.Name, PreDrain: AnnotationHooks(n, PreDrainHookPrefix), PreTerminate: AnnotationHooks(n, PreTerminateHookPrefix)}
		if len(h.PreDrain)+len(h.PreTerminate) > 0 {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b HookedNode) int { return strings.Compare(a.Node, b.Node) })
	return out
}
