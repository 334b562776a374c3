package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// UpgradeStatusLabel marks a node the run left behind on purpose.
const (
	UpgradeStatusLabel = check.LabelUpgradeStatus
	StatusQuarantined  = check.StatusQuarantined
)

// Undrainable values (--undrainable): what a drain still held at
// --drain-timeout does to the run.
const (
	UndrainableFail   = "fail"
	UndrainableCordon = "cordon"
)

// QuarantinedError ends a run that replaced every node it could and left
// the quarantined ones (the record's Quarantined) cordoned, machines kept.
type QuarantinedError struct {
	Nodes []state.Quarantined
	// Stopped says --max-blocked-nodes stopped the run before its end.
	Stopped bool
}

func (e *QuarantinedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s quarantined", len(e.Nodes), plural(len(e.Nodes), "node", "nodes"))
	if e.Stopped {
		b.WriteString(", the run stopped at --max-blocked-nodes")
	}
	for i, q := range e.Nodes {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%snode %q (%s)", sep, q.Node, quarantinedWhy(q))
	}
	b.WriteString("; relax what holds them and run the same command again to replace them")
	return b.String()
}

func heldText(held []state.HeldByPDB) string {
	parts := make([]string, len(held))
	for i, h := range held {
		parts[i] = fmt.Sprintf("pod %q %s", h.Pod, h.Reason)
		if len(h.PDBs) > 0 {
			parts[i] += ": PodDisruptionBudget " + strings.Join(quoteEach(h.PDBs), ", ")
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// quarantine takes the nodes whose drains err says a pod still held
// (PodEvictionFailure) out of batch i under --undrainable cordon: each is
// labelled, recorded, and left cordoned and tainted. It returns what of
// err is left, or a QuarantinedError once --max-blocked-nodes are.
func (b *batchRun) quarantine(ctx context.Context, err error) error {
	if err == nil || b.cfg.Undrainable != UndrainableCordon || b.cfg.Record == nil {
		return err
	}
	var held []*drain.PodEvictionFailure
	rest := splitEvictionFailures(err, &held)
	if len(held) == 0 {
		return err
	}
	for _, f := range held {
		if err := b.quarantineNode(ctx, quarantinedOf(f)); err != nil {
			return err
		}
	}
	if rest != nil {
		return rest
	}
	return b.maxBlocked()
}

// maxBlocked stops the run once --max-blocked-nodes are quarantined.
func (b *batchRun) maxBlocked() error {
	if max := b.cfg.MaxBlockedNodes; max > 0 && len(b.cfg.Record.Quarantined) >= max {
		return &QuarantinedError{Nodes: b.cfg.Record.Quarantined, Stopped: true}
	}
	return nil
}

// quarantineNode labels and cordons q's node, which keeps the run's
// taint, and records it.
func (b *batchRun) quarantineNode(ctx context.Context, q state.Quarantined) error {
	if _, err := b.nodes.updateNode(ctx, q.Node, func(n *corev1.Node) bool {
		if n.Labels[UpgradeStatusLabel] == StatusQuarantined && n.Spec.Unschedulable {
			return false
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		// Cordoned, the scale-down never picks it (pickScaleDownNode).
		n.Labels[UpgradeStatusLabel], n.Spec.Unschedulable = StatusQuarantined, true
		return true
	}); err != nil {
		return err
	}
	b.cfg.Record.Quarantined = append(b.cfg.Record.Quarantined, q)
	b.logf("%s", b.cfg.Color.Yellow(fmt.Sprintf("node %q quarantined: cordoned and tainted, its machine kept (%s)", q.Node, quarantinedWhy(q))))
	return b.group.save(ctx)
}

// skipHeld quarantines the nodes of names their owner labelled
// check.LabelHold=true, without draining them, and returns the others.
func (b *batchRun) skipHeld(ctx context.Context, names []string) ([]string, error) {
	if b.cfg.Record == nil {
		return names, nil
	}
	var rest []string
	for _, name := range names {
		if obj, ok, _ := b.nodes.view.nodes.GetStore().GetByKey(name); !ok || !check.Held(obj.(*corev1.Node)) {
			rest = append(rest, name)
			continue
		}
		if err := b.quarantineNode(ctx, state.Quarantined{Node: name, Hold: true}); err != nil {
			return nil, err
		}
		if err := b.maxBlocked(); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// quarantinedWhy says what keeps q's node back.
func quarantinedWhy(q state.Quarantined) string {
	if q.Hold {
		return "labelled " + check.LabelHold + "=true by its owner"
	}
	return heldText(q.Held)
}

// splitEvictionFailures puts err's PodEvictionFailures in held and returns
// the other errors, nil when there is none.
func splitEvictionFailures(err error, held *[]*drain.PodEvictionFailure) error {
	errs := []error{err}
	var ne *drain.NodeErrors
	if errors.As(err, &ne) {
		errs = ne.Errs
	}
	var rest []error
	for _, e := range errs {
		var f *drain.PodEvictionFailure
		if errors.As(e, &f) {
			*held = append(*held, f)
		} else {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}

func quarantinedOf(f *drain.PodEvictionFailure) state.Quarantined {
	q := state.Quarantined{Node: f.Node}
	for _, p := range f.Pods {
		h := state.HeldByPDB{Pod: p.Namespace + "/" + p.Name, Reason: p.Reason}
		for _, pdb := range p.PDBs {
			h.PDBs = append(h.PDBs, pdb.Namespace+"/"+pdb.Name)
		}
		q.Held = append(q.Held, h)
	}
	return q
}

// quarantined says node is one the run left quarantined.
func (b *batchRun) quarantined(node string) bool {
	return b.cfg.Record != nil && slices.ContainsFunc(b.cfg.Record.Quarantined, func(q state.Quarantined) bool { return q.Node == node })
}

// quarantinedEnd is the error a run that got to its end with quarantined
// nodes ends with, nil without any.
func quarantinedEnd(r *state.Record) error {
	if r == nil || len(r.Quarantined) == 0 {
		return nil
	}
	return &QuarantinedError{Nodes: r.Quarantined}
}

// unquarantined are names without the quarantined nodes.
func (b *batchRun) unquarantined(names []string) []string {
	return slices.DeleteFunc(names, b.quarantined)
}

// liftQuarantine takes the quarantine label off n, which is back in
// service; it says whether there was one.
func liftQuarantine(n *corev1.Node) bool {
	if !check.Quarantined(n) {
		return false
	}
	delete(n.Labels, UpgradeStatusLabel)
	return true
}
