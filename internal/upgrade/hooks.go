package upgrade

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Hooks run around each node: the command hooks of the plan (sh -c, once
// per node, at least once: a run killed after a hook succeeded but before
// that was recorded runs it again), then, before a drain or a removal, the
// wait for the node's annotation hooks to be taken off by their owners.

// HookFailure stops a run: a command hook failed or timed out, or an
// annotation hook was still on its node at --hook-timeout.
type HookFailure struct {
	Hook string // plan.HookPreDrain, HookPostDrain or HookPreTerminate
	Node string
	// Status is how the command ended ("exit status 3", "timed out after
	// 10m0s"); Output its last lines.
	Status string
	Output []string
	// Annotations are the annotation hooks left on the node, with their
	// owners, when the wait for them timed out.
	Annotations []string
	Timeout     time.Duration
}

const hookFix = "run the same command again (hooks that succeeded are not repeated), or put the group back in service with \"kubectl nodeupgrade abort\""

func (f *HookFailure) Error() string {
	if len(f.Annotations) > 0 {
		verb := "drain"
		if f.Hook == plan.HookPreTerminate {
			verb = "remove"
		}
		return fmt.Sprintf("cannot %s node %q: %s annotation hooks still on it after %s (--hook-timeout): %s; their owners take them off when done (or \"kubectl annotate node %s KEY-\"), then %s; or raise --hook-timeout",
			verb, f.Node, f.Hook, f.Timeout, strings.Join(f.Annotations, ", "), f.Node, hookFix)
	}
	out := "no output"
	if len(f.Output) > 0 {
		out = "last output: " + strings.Join(f.Output, " | ")
	}
	return fmt.Sprintf("error when running the %s hook on node %q: %s (%s); fix the hook (or raise --hook-timeout) and %s", f.Hook, f.Node, f.Status, out, hookFix)
}

// hookOutputLines is how many last lines of a failed hook its error shows,
// and hookLineMax how much of each: the error stays one readable line.
const (
	hookOutputLines = 3
	hookLineMax     = 200
)

// hookKillDelay is how long a killed hook's output may still be read.
const hookKillDelay = 5 * time.Second

// hookRunner runs the plan's hooks around the nodes a step takes out, and
// records each success at once.
type hookRunner struct {
	cfg   *Config
	pool  cloud.Pool // nil where the nodes are no cloud group
	nodes *nodeWriter
	logf  func(format string, args ...any)
	save  func(ctx context.Context) error
	mu    sync.Mutex // the record's hooks, written by parallel hooks
}

// run runs the named hook for each node that exists, in parallel,
// then, before a drain or a removal, waits for the nodes' annotation hooks.
func (h *hookRunner) run(ctx context.Context, hook string, names []string) error {
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !h.nodes.nodeExists(n) })
	if h.cfg.Plan.Hooks != nil && h.cfg.Plan.Hooks.Command(hook) != "" {
		if err := h.nodes.forEachNode(ctx, names, func(ctx context.Context, name string) error {
			return h.runHook(ctx, hook, name)
		}); err != nil {
			return err
		}
	}
	switch hook {
	case plan.HookPreDrain:
		return h.awaitAnnotationHooks(ctx, hook, plan.PreDrainHookPrefix, names)
	case plan.HookPreTerminate:
		return h.awaitAnnotationHooks(ctx, hook, plan.PreTerminateHookPrefix, names)
	}
	return nil
}

func (h *hookRunner) hookTimeout() time.Duration {
	if h := h.cfg.Plan.Hooks; h != nil {
		return h.TimeoutOrDefault()
	}
	return plan.DefaultHookTimeout
}

// runHook runs one command hook for one node, unless the record says it
// succeeded already, and records its success.
func (h *hookRunner) runHook(ctx context.Context, hook, node string) error {
	if h.hookDone(node, hook) {
		h.logf("node %q: %s hook: recorded done, not run again", node, hook)
		return nil
	}
	timeout := h.hookTimeout()
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := newHookOutput(func(line string) { h.logf("node %q: %s hook: %s", node, hook, line) })
	cmd := exec.CommandContext(hctx, "sh", "-c", h.cfg.Plan.Hooks.Command(hook))
	cmd.Env = append(os.Environ(), h.hookEnv(ctx, hook, node)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = hookKillDelay
	inOwnProcessGroup(cmd)
	h.logf("node %q: running the %s hook", node, hook)
	err := cmd.Run()
	_ = out.Flush() // line never fails
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		status := err.Error()
		if errors.Is(hctx.Err(), context.DeadlineExceeded) {
			status = fmt.Sprintf("timed out after %s, killed", timeout)
		}
		return &HookFailure{Hook: hook, Node: node, Status: status, Output: out.last, Timeout: timeout}
	}
	h.logf("node %q: %s hook succeeded", node, hook)
	return h.markHookDone(ctx, node, hook)
}

func (h *hookRunner) hookDone(node, hook string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg.Record.HookDone(node, hook)
}

// markHookDone records a hook's success at once: a run killed after it
// repeats only the hooks not recorded.
func (h *hookRunner) markHookDone(ctx context.Context, node, hook string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg.Record.MarkHookDone(node, hook)
	return h.save(ctx)
}

// hookEnv describes the node to its hook.
func (h *hookRunner) hookEnv(ctx context.Context, hook, node string) []string {
	var zone, providerID, instanceID, batch string
	for i, b := range h.cfg.Plan.Batches {
		for _, n := range b.Nodes {
			if n.Name == node {
				zone, providerID, instanceID, batch = n.Zone, n.ProviderID, n.MachineID, strconv.Itoa(i+1)
			}
		}
	}
	if obj, ok, _ := h.nodes.view.nodes.GetStore().GetByKey(node); ok {
		n := obj.(*corev1.Node)
		zone, providerID = n.Labels[plan.ZoneLabel], n.Spec.ProviderID
		if instanceID == "" && h.pool != nil {
			// A node outside the plan's batches (the scale-down's): its
			// machine tells.
			if byNode, _, err := h.pool.Machines(ctx, []*corev1.Node{n}); err == nil {
				instanceID = byNode[node].ID
			}
		}
	}
	env := []string{
		"HOOK=" + hook,
		"NODE=" + node,
		"NODE_GROUP=" + h.cfg.Plan.NodeGroup,
		"ZONE=" + zone,
		"INSTANCE_ID=" + instanceID,
		"PROVIDER_ID=" + providerID,
		"BATCH=" + batch,
		"PROVIDER=" + h.cfg.Provider.Name(),
	}
	if h.cfg.Kubeconfig != "" {
		env = append(env, "KUBECONFIG="+h.cfg.Kubeconfig)
	}
	return env
}

// hookOutput passes a hook's output on line by line and keeps the last
// lines for its error.
type hookOutput struct {
	output.LineWriter
	log  func(line string)
	last []string
}

func newHookOutput(log func(line string)) *hookOutput {
	o := &hookOutput{log: log}
	o.Line = o.line
	return o
}

func (o *hookOutput) line(s string) error {
	s = strings.TrimRight(s, "\r")
	o.log(s)
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if len(s) > hookLineMax {
		s = s[:hookLineMax] + "…"
	}
	o.last = append(o.last, s)
	if len(o.last) > hookOutputLines {
		o.last = o.last[1:]
	}
	return nil
}

// awaitAnnotationHooks waits, up to --hook-timeout and driven by node
// events, until no node of names carries an annotation with prefix, saying
// which hooks it waits for whenever that changes.
func (h *hookRunner) awaitAnnotationHooks(ctx context.Context, hook, prefix string, names []string) error {
	left := h.annotationHooksLeft(prefix, names)
	if len(left) == 0 {
		return nil
	}
	timeout := h.hookTimeout()
	h.logf("waiting up to %s for %s annotation hooks to be taken off: %s", timeout, hook, describeHooks(left))
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			node := slices.Sorted(maps.Keys(left))[0]
			return &HookFailure{Hook: hook, Node: node, Annotations: left[node], Timeout: timeout}
		case <-h.nodes.view.changed:
		}
		now := h.annotationHooksLeft(prefix, names)
		switch {
		case len(now) == 0:
			h.logf("%s annotation hooks taken off: going on", hook)
			return nil
		case !maps.EqualFunc(now, left, slices.Equal):
			h.logf("still waiting for %s annotation hooks: %s", hook, describeHooks(now))
		}
		left = now
	}
}

// annotationHooksLeft maps each node of names that carries annotation
// hooks with prefix to them, each with its owner, from the node cache.
func (h *hookRunner) annotationHooksLeft(prefix string, names []string) map[string][]string {
	left := map[string][]string{}
	for _, name := range names {
		obj, ok, _ := h.nodes.view.nodes.GetStore().GetByKey(name)
		if !ok {
			continue
		}
		n := obj.(*corev1.Node)
		for _, key := range plan.AnnotationHooks(n, prefix) {
			left[name] = append(left[name], fmt.Sprintf("%q (owner %q)", key, n.Annotations[key]))
		}
	}
	return left
}

func describeHooks(left map[string][]string) string {
	var parts []string
	for _, node := range slices.Sorted(maps.Keys(left)) {
		parts = append(parts, fmt.Sprintf("node %q: %s", node, strings.Join(left[node], ", ")))
	}
	return strings.Join(parts, "; ")
}
