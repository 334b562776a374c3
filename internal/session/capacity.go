package session

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// proveCapacity records in the plan what the nodes the run adds at its
// peak need of the cloud's limits, and finds the limits they exceed; a
// cloud that could not be asked is a capacity-unprovable warning.
func proveCapacity(ctx context.Context, p cloud.Provider, pl *plan.Plan) {
	prover, ok := p.(cloud.CapacityProver)
	added := pl.PeakAdded()
	if !ok || added <= 0 {
		return
	}
	c, err := prover.ProveCapacity(ctx, added)
	if err != nil {
		c = &plan.CapacityPlan{Unprovable: []string{oneLineOf(err)}}
	}
	pl.Capacity = c
	pl.AddFindings(c.Findings(pl)...)
}
