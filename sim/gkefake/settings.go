package gkefake

import (
	"time"

	container "google.golang.org/api/container/v1"
)

// runningOpLocked is the operation running on the pool, nil if none: GKE
// "generally allows only one cluster-level operation or one operation per
// node pool at a time" and refuses another while one runs with "Cluster is
// running incompatible operation OPERATION_NAME"
// (https://cloud.google.com/kubernetes-engine/docs/troubleshooting/concurrent-operations).
func runningOpLocked(p *pool) *operation {
	if p.settingsOp != nil {
		return p.settingsOp
	}
	if p.up != nil {
		return p.up.op
	}
	return nil
}

// incompatible is GKE's refusal of a change while o runs: 400
// FAILED_PRECONDITION (see runningOpLocked).
func incompatible(o *operation) error {
	return failedPrecondition("Cluster is running incompatible operation %s.", o.op.Name)
}

// startSettingsLocked starts the update of the pool's settings alone. It
// is an UPGRADE_NODES operation like an upgrade ("A node pool is being
// updated. Despite calling this an \"upgrade\", this includes most forms
// of updates to node pools", container-api.json, Operation.operationType)
// and runs Options.SettingsDuration, the pool RECONCILING meanwhile
// (NodePool.status: "Some work is actively being done on the node pool").
// GKE does not document when the new settings show: the fake shows them
// when the operation ends DONE, so a client sees what it set only after
// waiting for the operation; a cancel ends it without them.
func (s *Server) startSettingsLocked(p *pool, body *container.UpdateNodePoolRequest) *container.Operation {
	o := s.newOpLocked(p, "update of the node pool's settings")
	was := p.status
	p.settingsOp, p.status = o, "RECONCILING"
	s.changedLocked(p)
	s.wg.Add(1)
	go s.runSettings(p, o, was, *body)
	return s.opView(o)
}

// runSettings runs the settings' operation to its end and puts the
// pool's status back.
func (s *Server) runSettings(p *pool, o *operation, was string, body container.UpdateNodePoolRequest) {
	defer s.wg.Done()
	err := s.settingsWait(o)
	if s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.settingsOp, p.status = nil, was
	if err == nil {
		s.applySettingsLocked(p, &body)
	} else {
		s.changedLocked(p)
	}
	s.endLocked(o, err)
}

// settingsWait waits Options.SettingsDuration, errCancelled once a cancel
// asks the operation to stop.
func (s *Server) settingsWait(o *operation) error {
	end := time.Now().Add(s.opts.SettingsDuration)
	for {
		if s.stopping(o) {
			return errCancelled
		}
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if err := sleep(s.ctx, min(left, s.opts.PollEvery)); err != nil {
			return err
		}
	}
}
