package session

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// ServiceControl carries cancel, complete or resume out on the service's
// update id of run (one whose update the cloud's service runs) with the
// service's own control: it checks the lifecycle, records what was asked
// (Managed.Asked), then calls the service and records its answer: for
// resume, the update that continues the run, which it returns. A live
// run owns its record and reads the service's answer itself: for it only
// the service is asked.
func (s Controls) ServiceControl(ctx context.Context, run *Run, cmd Command, u cloud.ManagedUpdater, id string) (string, error) {
	if err := run.Accept(cmd); err != nil {
		return "", err
	}
	rec := run.Record
	if rec.Managed == nil {
		return "", fmt.Errorf("cannot %s: the run on %q recorded no service's update", cmd, rec.NodeGroup)
	}
	rec.Managed.Asked = &state.ServiceAsk{Control: string(cmd), Update: id, At: time.Now().UTC().Truncate(time.Second)}
	if err := s.saveUnlessAlive(ctx, run); err != nil {
		return "", err
	}
	newID, err := callService(ctx, cmd, u, id)
	if err != nil {
		return "", err
	}
	rec.Managed.Asked.Answered = true
	if newID != "" {
		rec.Managed.UpdateID = newID
	}
	return newID, s.saveUnlessAlive(ctx, run)
}

// callService calls the service's control cmd on update id; resume
// returns the update that continues it.
func callService(ctx context.Context, cmd Command, u cloud.ManagedUpdater, id string) (string, error) {
	switch cmd {
	case CmdCancel:
		if c, ok := u.(cloud.UpdateCanceller); ok {
			return "", c.CancelUpdate(ctx, id)
		}
	case CmdComplete:
		if c, ok := u.(cloud.UpdateCompleter); ok {
			return "", c.CompleteUpdate(ctx, id)
		}
	case CmdResume:
		if r, ok := u.(cloud.UpdateResumer); ok {
			return r.ResumeUpdate(ctx, id)
		}
	}
	return "", Usagef("cannot %s: the service's update of %q offers no %s", cmd, u.GroupName(), cmd)
}

// saveUnlessAlive saves run's record where no live process owns it.
func (s Controls) saveUnlessAlive(ctx context.Context, run *Run) error {
	if run.Alive {
		return nil
	}
	return s.store().Save(ctx, run.Record)
}
