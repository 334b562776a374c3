package plugin

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// refuseManagedUpdate refuses to abort a run whose service's update has
// not ended where the provider says what the service allows instead
// (cloud.UpdateAborter: EKS, GKE): abort never stops or undoes the
// service's update behind its back, and changes nothing when it refuses.
func (o *AbortOptions) refuseManagedUpdate(ctx context.Context, sess *session.Session, rec *state.Record) error {
	if rec == nil || rec.FinishedAt != nil || rec.Managed == nil || (rec.Managed.UpdateID == "" && !session.StartedUnheard(rec)) || rec.Request == nil {
		return nil
	}
	co := &ControlOptions{IOStreams: o.IOStreams, action: "abort", sess: sess, NodeGroup: rec.NodeGroup, StateNamespace: o.StateNamespace}
	_, u, err := co.openManaged(ctx, rec)
	if err != nil {
		return err
	}
	a, ok := u.(cloud.UpdateAborter)
	if !ok || rec.Managed.UpdateID == "" {
		return nil
	}
	advice, err := a.AbortAdvice(ctx, rec.Managed.UpdateID, co.NodeGroup)
	if err != nil || advice == "" {
		return err
	}
	return usageErrorf("cannot abort: %s", advice)
}
