package karpenter

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FrozenAnnotation is put on a NodePool whose drift a run holds off; it
// keeps the user's budgets as they were, so that a second hold (a re-run)
// adds nothing and the plan of any later command says so.
const FrozenAnnotation = "nodeupgrade.dev/budgets-before-run"

// freezeBudget is the budget a run adds: no node may be disrupted for
// drift (Karpenter v1's spec.disruption.budgets[].reasons; Karpenter has
// no other switch for drift).
var freezeBudget = map[string]any{"nodes": "0", "reasons": []any{"Drifted"}}

const freezeBudgetJSON = `{"nodes":"0","reasons":["Drifted"]}`

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

// HoldUpdates implements cloud.SelfUpdater: the NodePool's budgets get a
// Drifted budget of 0 beside the user's, and the annotation keeps the
// user's; a NodePool held already stays as it is. The patch names the
// resourceVersion read, so that an edit meanwhile fails it rather than
// being lost.
func (p *NodePool) HoldUpdates(ctx context.Context) error {
	np, err := readPool(ctx, p.dyn, p.name)
	if err != nil {
		return err
	}
	var budgets []any
	if len(np.Budgets) > 0 {
		if err := json.Unmarshal(np.Budgets, &budgets); err != nil {
			return fmt.Errorf("cannot read the budgets of NodePool %q: %w", p.name, err)
		}
	}
	if hasFreeze(budgets) {
		if _, ok := np.Annotation[FrozenAnnotation]; ok {
			return nil
		}
	}
	meta := map[string]any{"resourceVersion": np.ResourceVersion}
	if _, ok := np.Annotation[FrozenAnnotation]; !ok {
		meta["annotations"] = map[string]any{FrozenAnnotation: budgetsText(np.Budgets)}
	}
	patch := map[string]any{"metadata": meta, "spec": map[string]any{"disruption": map[string]any{"budgets": append(budgets, freezeBudget)}}}
	return p.patch(ctx, patch, "hold off the drift of")
}

// hasFreeze reports whether budgets hold the run's budget already.
func hasFreeze(budgets []any) bool {
	for _, b := range budgets {
		if m, ok := b.(map[string]any); ok && len(m) == 2 && m["nodes"] == "0" {
			if r, ok := m["reasons"].([]any); ok && len(r) == 1 && r[0] == "Drifted" {
				return true
			}
		}
	}
	return false
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
