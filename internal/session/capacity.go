package session

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// proveCapacity records in the plan what the nodes the run adds at its
// peak need of the cloud's limits, and finds the limits they exceed; a
// cloud that could not be asked is a capacity-unprovable warning. With
// --reserve-surge it records the reservations the run will make, and
// fails where the cloud cannot reserve for the group (Spot, several
// instance types), before anything changes.
func proveCapacity(ctx context.Context, p cloud.Provider, pl *plan.Plan) error {
	prover, ok := p.(cloud.CapacityProver)
	added := pl.PeakAdded()
	if !ok || added <= 0 {
		return nil
	}
	c, err := prover.ProveCapacity(ctx, added)
	if err != nil {
		c = &plan.CapacityPlan{Unprovable: []string{oneLineOf(err)}}
	}
	c.Added, pl.Capacity = added, c
	pl.AddFindings(c.Findings(pl)...)
	rs, ok := p.(cloud.SurgeReserver)
	if !ok || !rs.ReservesSurge() || plan.FirstRaise(pl) <= 0 {
		return nil
	}
	c.Reservations, err = rs.PlanReservations(ctx, plan.FirstRaise(pl), "")
	return err
}
