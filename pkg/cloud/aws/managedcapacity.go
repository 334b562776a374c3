package aws

import (
	"context"
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.CapacityProver = (*ManagedNodeGroup)(nil)

// ProveCapacity implements cloud.CapacityProver: EKS's scale-up (the
// larger of twice the zones and maxUnavailable, ManagedNodeGroup.Plan)
// launches in the node group's Auto Scaling group from its launch
// template (User Guide, managed-node-update-behavior, Scale up phase), so
// its vCPU quota, the zones that offer its type, its subnets' addresses
// and the capacity reservations it may use are proven as an Auto Scaling
// group's are (NodeGroup.ProveCapacity).
func (m *ManagedNodeGroup) ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error) {
	if m.asg == nil {
		return &plan.CapacityPlan{Unprovable: []string{fmt.Sprintf("EKS managed node group %q reports no Auto Scaling group to read its capacity from", m.group.Name)}}, nil
	}
	return (&NodeGroup{API: m.api, Client: m.kube, ASG: m.asg.Name}).ProveCapacity(ctx, added)
}
