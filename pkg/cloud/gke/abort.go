package gke

import (
	"context"
	"fmt"
	"strings"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

var _ cloud.UpdateAborter = (*NodePool)(nil)

// AbortAdvice implements cloud.UpdateAborter: abort never stops or undoes
// GKE's upgrade behind its back, so where the upgrade has not ended it
// says what GKE allows from where it is. "" once the operation ended
// successfully (an upgrade done, or a rollback): abort goes on and puts
// the settings back.
func (n *NodePool) AbortAdvice(ctx context.Context, id, group string) (string, error) {
	p, err := n.Progress(ctx, id)
	if err != nil {
		return "", err
	}
	if p.State == cloud.UpdateSucceeded {
		return "", nil
	}
	return abortAdvice(upgradeKindOf(n.pool), p, n.name, group), nil
}

// The kinds of GKE upgrade, whose controls differ.
const (
	kindSurge      = "surge"
	kindBlueGreen  = "blue-green"
	kindAutoscaled = "autoscaled blue-green"
)

// upgradeKindOf is the kind of the pool's upgrade under way or paused:
// blue/green where the pool reports a blue/green phase (API reference,
// NodePool.updateInfo.blueGreenInfo), autoscaled where its settings have
// an autoscaled rollout policy.
func upgradeKindOf(p *container.NodePool) string {
	if p.UpdateInfo == nil || p.UpdateInfo.BlueGreenInfo == nil || p.UpdateInfo.BlueGreenInfo.Phase == "" {
		return kindSurge
	}
	if up := p.UpgradeSettings; up != nil && up.BlueGreenSettings != nil && up.BlueGreenSettings.AutoscaledRolloutPolicy != nil {
		return kindAutoscaled
	}
	return kindBlueGreen
}

// abortAdvice says what GKE allows on an upgrade that has not ended, by
// its kind, its state and its blue/green phase:
//   - running, every kind and phase but deleting blue: operations.cancel
//     pauses it in its phase, nodes under way finish (seed 002, "cancel
//     pauses in the current phase (not during phase 5)"; API reference,
//     Operation.operationType UPGRADE_NODES "may be canceled");
//   - DELETING_BLUE_POOL: nothing, it "cannot be paused" (seed 002,
//     phase 5), and blue is gone at its end: only waiting remains;
//   - NODE_POOL_SOAKING: completeUpgrade ends the soak and deletes blue
//     (API reference, nodePools.completeUpgrade);
//   - cancelled or failed: nodePools.rollback "rolls back a previously
//     Aborted or Failed NodePool upgrade" (API reference), except an
//     autoscaled blue/green one, which "can be cancelled and resumed, not
//     rolled back" (seed 002); the update again resumes it
//     (https://cloud.google.com/kubernetes-engine/docs/how-to/upgrading-a-cluster#resume-upgrade);
//   - ROLLBACK_STARTED: GKE rolls back already.
func abortAdvice(kind string, p cloud.UpdateProgress, pool, group string) string {
	cmd := func(c string) string { return fmt.Sprintf("\"kubectl nodeupgrade %s %s\"", c, group) }
	what := fmt.Sprintf("GKE's %s upgrade %s of node pool %q", kind, p.ID, pool)
	if kind != kindSurge {
		what += " in phase " + p.Phase
	}
	undo := fmt.Sprintf("%s puts the old version back (nodePools.rollback, PDBs honoured) or %s goes on", cmd("rollback"), cmd("resume"))
	switch {
	case p.Phase == "ROLLBACK_STARTED":
		return fmt.Sprintf("%s is being rolled back by GKE already: wait for it to end (%s shows it), then abort again", what, cmd("status"))
	case p.Phase == "DELETING_BLUE_POOL":
		return fmt.Sprintf("%s cannot be stopped or undone: GKE deletes blue, which it does not pause; %s follows it to its end", what, cmd("resume"))
	case kind == kindAutoscaled && p.Finished():
		return fmt.Sprintf("%s is paused (%s); GKE cannot roll an autoscaled blue-green upgrade back: %s goes on with it", what, stateWord(p.State), cmd("resume"))
	case p.Finished():
		return fmt.Sprintf("%s is paused (%s); abort cannot undo it behind GKE's back: %s", what, stateWord(p.State), undo)
	case kind == kindAutoscaled:
		return fmt.Sprintf("%s is running; abort cannot stop it behind GKE's back: %s pauses it (operations.cancel), then %s goes on; GKE cannot roll it back", what, cmd("cancel"), cmd("resume"))
	}
	pause := fmt.Sprintf("%s pauses it (operations.cancel; the nodes under way finish), then %s", cmd("cancel"), undo)
	if p.Phase == "NODE_POOL_SOAKING" {
		return fmt.Sprintf("%s is soaking; abort cannot stop it behind GKE's back: %s ends the soak now and GKE deletes blue (completeUpgrade), or %s", what, cmd("complete"), pause)
	}
	return fmt.Sprintf("%s is running; abort cannot stop it behind GKE's back: %s", what, pause)
}

// stateWord is an ended update's state in a sentence: "cancelled",
// "failed".
func stateWord(s cloud.UpdateState) string { return strings.ToLower(string(s)) }
