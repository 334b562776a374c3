package aws

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// A managed node group is a cloud.Shrinker so that abort can take back
// the scale-up EKS leaves behind when its update fails: EKS documents no
// scale-down after a failure (User Guide, managed-node-update-behavior),
// and its API has no call that removes a chosen node. The run removes
// each drained node as the Cluster Autoscaler does on a managed node
// group, TerminateInstanceInAutoScalingGroup with the desired size
// lowered, which EKS reflects in the group's desiredSize (API Reference,
// NodegroupScalingConfig: "the desiredSize parameter is altered by the
// Cluster Autoscaler"); max goes back through UpdateNodegroupConfig. The
// run never resizes it otherwise: it is no cloud.Scaler.
var _ cloud.Shrinker = (*ManagedNodeGroup)(nil)

// Sizes implements cloud.Pool: the scaling as EKS describes it.
func (m *ManagedNodeGroup) Sizes(ctx context.Context) (plan.Sizes, error) {
	return m.groupSizes(ctx, m.group.Name)
}

// groupSizes reads a node group of the cluster's scalingConfig.
func (m *ManagedNodeGroup) groupSizes(ctx context.Context, group string) (plan.Sizes, error) {
	g, err := m.eks.DescribeNodegroup(ctx, m.group.Cluster, group)
	if err != nil {
		return plan.Sizes{}, err
	}
	return plan.Sizes{Min: g.Min, Desired: g.Desired, Max: g.Max}, nil
}

// Machines implements cloud.Pool: the instances of the group's Auto
// Scaling group.
func (m *ManagedNodeGroup) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	g, err := m.api.Group(ctx, m.asg.Name)
	if err != nil {
		return nil, nil, err
	}
	byNode, pending := MapNodes(g, nodes)
	return byNode, pending, nil
}

// Current implements cloud.Pool.
func (m *ManagedNodeGroup) Current(machine plan.Machine, version string) bool {
	return machine.Version == version && !machine.Leaving()
}

// SetMax implements cloud.Shrinker: UpdateNodegroupConfig's maxSize,
// waited until the group is ACTIVE again.
func (m *ManagedNodeGroup) SetMax(ctx context.Context, max int32) error {
	_, err := m.eks.UpdateConfig(ctx, m.group.Cluster, m.group.Name, ConfigChange{Max: &max})
	return err
}

// Shrink implements cloud.Shrinker: the drained node's instance
// terminated with the desired size lowered by one, as the Cluster
// Autoscaler removes a node of a managed node group.
func (m *ManagedNodeGroup) Shrink(ctx context.Context, node string) error {
	id, err := instanceOfNode(ctx, m.kube, node)
	if err != nil || id == "" {
		return err
	}
	return m.api.TerminateShrink(ctx, id)
}
