package plugin

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// refuseManagedUpdate refuses to abort a run whose service's update has
// not ended where the provider says what the service allows instead
// (cloud.UpdateAborter: GKE's phases): abort never stops or undoes the
// service's update behind its back, and changes nothing when it refuses.
func (o *AbortOptions) refuseManagedUpdate(ctx context.Context, po *PlanOptions, rec *state.Record) error {
	if rec == nil || rec.FinishedAt != nil || rec.Managed == nil || rec.Managed.UpdateID == "" || rec.Request == nil {
		return nil
	}
	co := &ControlOptions{configFlags: o.configFlags, IOStreams: o.IOStreams, action: "abort", client: po.client, NodeGroup: po.recordName(), StateNamespace: o.StateNamespace}
	req := requestToRepeat(rec)
	req.PlanFile = "" // the group and its provider are all abort needs of it
	_, u, err := co.openManaged(ctx, req)
	if err != nil {
		return err
	}
	a, ok := u.(cloud.UpdateAborter)
	if !ok {
		return nil
	}
	advice, err := a.AbortAdvice(ctx, rec.Managed.UpdateID, co.NodeGroup)
	if err != nil || advice == "" {
		return err
	}
	return usageErrorf("cannot abort: %s", advice)
}
