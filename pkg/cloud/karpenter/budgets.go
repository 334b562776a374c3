package karpenter

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FrozenAnnotation is put on a NodePool whose disruptions a run holds
// off; it keeps the user's budgets as they were, so that a second hold (a
// re-run) builds on them, not on the hold, and the plan of any later
// command says so.
const FrozenAnnotation = "nodeupgrade.dev/budgets-before-run"

// freezeBudget is the budget a run adds: no node may be disrupted for
// drift, nor consolidated away (Karpenter v1's
// spec.disruption.budgets[].reasons, whose values are Underutilized,
// Empty, Drifted and Unhealthy: pkg/apis/v1/nodepool.go). Consolidating
// the pool while the waves replace it would evict the pods a wave just
// moved; node repair (Unhealthy) stays the user's. Expiry is no reason a
// budget holds (see expiryEffect).
var freezeBudget = map[string]any{"nodes": "0", "reasons": []any{"Drifted", "Underutilized", "Empty"}}

const freezeBudgetJSON = `{"nodes":"0","reasons":["Drifted","Underutilized","Empty"]}`

// SelfUpdates implements cloud.SelfUpdater: the user's budgets, as the API
// server returns them ("null" where the NodePool has none), or those an
// earlier hold kept aside.
func (p *NodePool) SelfUpdates(ctx context.Context) (string, error) {
	np, err := readPool(ctx, p.dyn, p.name)
	if err != nil {
		return "", err
	}
	if was, ok := np.Annotation[FrozenAnnotation]; ok {
		return was, nil
	}
	return budgetsText(np.Budgets), nil
}

func budgetsText(b json.RawMessage) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

// HoldUpdates implements cloud.SelfUpdater: the NodePool's budgets become
// the user's and the run's freezeBudget, and the annotation keeps the
// user's; a NodePool held so already stays as it is, and the hold of an
// earlier version of the run (drift only) is brought up to this one. The
// patch names the resourceVersion read, so that an edit meanwhile fails it
// rather than being lost.
func (p *NodePool) HoldUpdates(ctx context.Context) error {
	np, err := readPool(ctx, p.dyn, p.name)
	if err != nil {
		return err
	}
	was, held := np.Annotation[FrozenAnnotation]
	if !held {
		was = budgetsText(np.Budgets)
	}
	var budgets []any
	if err := json.Unmarshal([]byte(was), &budgets); err != nil {
		return fmt.Errorf("cannot read the budgets of NodePool %q: %w", p.name, err)
	}
	budgets = append(budgets, freezeBudget)
	want, err := json.Marshal(budgets)
	if err != nil {
		return err
	}
	if held && string(want) == string(np.Budgets) {
		return nil
	}
	meta := map[string]any{"resourceVersion": np.ResourceVersion}
	if !held {
		meta["annotations"] = map[string]any{FrozenAnnotation: was}
	}
	patch := map[string]any{"metadata": meta, "spec": map[string]any{"disruption": map[string]any{"budgets": budgets}}}
	return p.patch(ctx, patch, "hold off the disruptions of")
}

// RestoreUpdates implements cloud.SelfUpdater: the budgets go back to
// was, byte for byte, and the annotation goes. Karpenter then replaces
// the drifted nodes a run left (an abort's) at the pace of those budgets.
func (p *NodePool) RestoreUpdates(ctx context.Context, was string) (string, error) {
	if !json.Valid([]byte(was)) {
		return "", fmt.Errorf("cannot put back the budgets of NodePool %q: the record holds %q, not JSON", p.name, was)
	}
	patch := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{FrozenAnnotation: nil}},
		"spec":     map[string]any{"disruption": map[string]any{"budgets": json.RawMessage(was)}},
	}
	return "", p.patch(ctx, patch, "put back the budgets of")
}

func (p *NodePool) patch(ctx context.Context, patch map[string]any, what string) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := p.dyn.Resource(nodePools).Patch(ctx, p.name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("cannot %s NodePool %q: %w", what, p.name, err)
	}
	return nil
}
