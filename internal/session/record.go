package session

import (
	"context"
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Replan plans rec's recorded request again, as abort and the service's
// controls need it: the group, the provider that changes it (following
// the run's green group where it made one) and the nodes. The saved plan
// the run was started from is not compared: what it settled is in the
// recorded request. action names the command for the error.
func (s *Session) Replan(ctx context.Context, rec *state.Record, action string) (*Planned, error) {
	r, err := FromRecord(rec, nil, action)
	if err != nil {
		return nil, err
	}
	r.PlanFile = ""
	// Abort and the service's controls put the group back or act on the
	// service's update at any time: maintenance windows hold only a run.
	r.Windows, r.NotBefore, r.NotAfter = nil, "", ""
	if err := r.ValidateRun(); err != nil {
		return nil, err
	}
	pl, err := s.Plan(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("cannot %s: error when reading node group %q as its run recorded it: %w", action, rec.NodeGroup, err)
	}
	pl.UseRecordedGreen(rec)
	return pl, nil
}

// UseRecordedGreen makes the provider see the green group rec's run made,
// beside blue: a resumed or aborted blue/green run works on both.
func (pl *Planned) UseRecordedGreen(rec *state.Record) {
	if bg, ok := pl.Provider.(cloud.BlueGreen); ok && rec != nil && rec.Cloud != nil && rec.Cloud.Green != "" {
		bg.UseGreen(rec.Cloud.Green)
	}
}

// RunBack is the way back once a run has ended, when rollback no longer
// takes it: a run towards the version the group launched before, with
// the provider's flag naming an existing version.
func RunBack(rec *state.Record, group string) string {
	if c := rec.Cloud; c != nil && c.FromVersion != "" {
		if flag := cloud.BoundFlags().Version[c.Provider]; flag != "" {
			return fmt.Sprintf("\"kubectl nodeupgrade run %s --%s %s\"", group, flag, c.FromVersion)
		}
	}
	return "a run towards the previous version"
}
