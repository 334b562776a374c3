package session

import (
	"fmt"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// RolledBackError ends a run (not the rollback command) that turned
// around and finished its rollback: the group is back as it was, not
// upgraded, so the command must not exit 0 as an upgrade does. Gate is
// the failed gate that turned it around (--on-gate-fail rollback).
type RolledBackError struct {
	Group string
	Gate  *state.WaveGate
}

func (e *RolledBackError) Error() string {
	failed := gate.Failed(e.Gate.Verdicts)
	parts := make([]string, len(failed))
	for i, v := range failed {
		parts[i] = v.String()
	}
	return fmt.Sprintf("node group %q rolled back (--on-gate-fail rollback) before wave %d: %s; back as before the run, not upgraded: fix what the gate sees and run again", e.Group, e.Gate.Wave, strings.Join(parts, "; "))
}

// rolledBack is the end of rec's run that rolled back where the command
// asked for the upgrade: a RolledBackError, from what the record says
// turned it around.
func rolledBack(rec *state.Record, group string) error {
	// A rollback control was asked for by a person who knows the group
	// is back: only a gate's rollback is news a script must route on.
	if g := rec.LastGate(); g != nil && !g.Pending() && !g.Pass {
		return &RolledBackError{Group: group, Gate: g}
	}
	return nil
}
