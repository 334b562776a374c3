package aws

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// NodeGroup is a node group backed by an Auto Scaling group: the provider
// "aws" of a run.
type NodeGroup struct {
	API    *Client
	Client kubernetes.Interface
	// ASG is the Auto Scaling group.
	ASG string
	// AMI and Version are the target as --ami and --launch-template-version
	// give it; both empty means the group's current configuration.
	AMI, Version string
	// ClonedFrom is the group the ASG was cloned from where it is the
	// green of an earlier blue/green run (its TagBlue); "" otherwise.
	ClonedFrom string
	// Surge is --reserve-surge: the scale-ups' capacity is reserved
	// first (reserve.go).
	Surge bool

	green string // blue/green: the second group Machines reports too
}

var (
	_ cloud.Scaler     = (*NodeGroup)(nil)
	_ cloud.Rebalancer = (*NodeGroup)(nil)
)

// RebalanceName implements cloud.Rebalancer.
func (n *NodeGroup) RebalanceName() string { return AZRebalance }

// RebalanceHeld implements cloud.Rebalancer.
func (n *NodeGroup) RebalanceHeld(ctx context.Context) (bool, error) {
	return n.API.ProcessSuspended(ctx, n.ASG, AZRebalance)
}

// RebalanceZones implements cloud.Rebalancer: the group's Availability
// Zones.
func (n *NodeGroup) RebalanceZones(ctx context.Context) ([]string, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return nil, err
	}
	return g.Zones, nil
}

// HoldRebalance implements cloud.Rebalancer.
func (n *NodeGroup) HoldRebalance(ctx context.Context) error {
	return n.API.SuspendProcess(ctx, n.ASG, AZRebalance)
}

// ReleaseRebalance implements cloud.Rebalancer.
func (n *NodeGroup) ReleaseRebalance(ctx context.Context) error {
	return n.API.ResumeProcess(ctx, n.ASG, AZRebalance)
}

// Name implements cloud.Provider.
func (n *NodeGroup) Name() string { return Name }

// GroupName implements cloud.Scaler.
func (n *NodeGroup) GroupName() string { return n.ASG }

// Describe implements cloud.Provider.
func (n *NodeGroup) Describe() string {
	return fmt.Sprintf("terminate the instance; Auto Scaling group %q launches its replacement", n.ASG)
}

// Setup implements cloud.Scaler.
func (n *NodeGroup) Setup(ctx context.Context) (string, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return "", err
	}
	return n.API.SetTarget(ctx, g, n.AMI, n.Version)
}

// Sizes implements cloud.Scaler.
func (n *NodeGroup) Sizes(ctx context.Context) (plan.Sizes, error) {
	lo, d, hi, err := n.API.Sizes(ctx, n.ASG)
	return plan.Sizes{Min: lo, Desired: d, Max: hi}, err
}

// SetDesiredAndMax implements cloud.Scaler.
func (n *NodeGroup) SetDesiredAndMax(ctx context.Context, desired, max int32) error {
	return n.API.SetSize(ctx, n.ASG, desired, max)
}

// SetMax implements cloud.Scaler.
func (n *NodeGroup) SetMax(ctx context.Context, max int32) error {
	return n.API.SetMax(ctx, n.ASG, max)
}

// Machines implements cloud.Scaler.
func (n *NodeGroup) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return nil, nil, err
	}
	if n.green != "" {
		green, err := n.API.Group(ctx, n.green)
		if err != nil {
			return nil, nil, err
		}
		both := *g
		both.Instances = append(slices.Clone(g.Instances), green.Instances...)
		g = &both
	}
	byNode, pending := MapNodes(g, nodes)
	return byNode, pending, nil
}

// MapNodes joins nodes to the group's instances by their provider IDs.
func MapNodes(g *AutoScalingGroup, nodes []*corev1.Node) (byNode map[string]plan.Machine, pending []plan.Machine) {
	byID := make(map[string]plan.Machine, len(g.Instances))
	for _, in := range g.Instances {
		byID[in.ID] = plan.Machine{
			ID: in.ID, Zone: in.Zone, Template: in.LaunchTemplateID, Version: in.LaunchTemplateVersion,
			Image: in.ImageID, State: machineState(in.Lifecycle), Lifecycle: in.Lifecycle, Launched: in.Launched,
		}
	}
	byNode = make(map[string]plan.Machine, len(nodes))
	joined := make(map[string]bool, len(nodes))
	for _, node := range nodes {
		if _, id, ok := InstanceIDFromProviderID(node.Spec.ProviderID); ok {
			if m, member := byID[id]; member {
				byNode[node.Name], joined[id] = m, true
			}
		}
	}
	for _, in := range g.Instances {
		if !joined[in.ID] {
			pending = append(pending, byID[in.ID])
		}
	}
	return byNode, pending
}

// Current implements cloud.Scaler.
func (n *NodeGroup) Current(m plan.Machine, version string) bool {
	return m.Version == version && !m.Leaving()
}

// RemoveNode implements cloud.Provider: the instance is terminated and the
// group launches a replacement from the target version.
func (n *NodeGroup) RemoveNode(ctx context.Context, node string) error {
	return n.terminate(ctx, node, n.API.Terminate)
}

// Shrink implements cloud.Scaler.
func (n *NodeGroup) Shrink(ctx context.Context, node string) error {
	return n.terminate(ctx, node, n.API.TerminateShrink)
}

// terminate ends the instance of node with how (replaced by the group, or
// the group shrunk); nothing when the node is gone already.
func (n *NodeGroup) terminate(ctx context.Context, node string, how func(ctx context.Context, id string) error) error {
	id, err := n.instanceOf(ctx, node)
	if err != nil || id == "" {
		return err
	}
	if err := n.API.refuseWarm(ctx, id, node); err != nil {
		return err
	}
	return how(ctx, id)
}

// instanceOf reads a node's instance ID; "" when the node is gone already
// (its instance terminated by an earlier, interrupted call).
func (n *NodeGroup) instanceOf(ctx context.Context, node string) (string, error) {
	return instanceOfNode(ctx, n.Client, node)
}

// instanceOfNode reads a node's instance ID; "" when the node is gone.
func instanceOfNode(ctx context.Context, client kubernetes.Interface, node string) (string, error) {
	obj, err := cloud.NodeOf(ctx, client, node)
	if err != nil || obj == nil {
		return "", err
	}
	_, id, ok := InstanceIDFromProviderID(obj.Spec.ProviderID)
	if !ok {
		return "", fmt.Errorf("node %q has no EC2 instance in its provider ID %q", node, obj.Spec.ProviderID)
	}
	return id, nil
}

var _ cloud.BlueGreen = (*NodeGroup)(nil)

// PrepareTarget implements cloud.BlueGreen: the target version is made if
// it must be, but blue keeps launching its own.
func (n *NodeGroup) PrepareTarget(ctx context.Context) (string, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return "", err
	}
	t, err := n.API.ResolveTarget(ctx, g, n.AMI, n.Version)
	if err != nil {
		return "", err
	}
	if !t.Create {
		return t.Version, nil
	}
	return n.API.createVersion(ctx, g, t, n.AMI)
}

// CheckQuota implements cloud.BlueGreen.
func (n *NodeGroup) CheckQuota(ctx context.Context) error { return n.API.CheckGroupQuota(ctx) }

// GreenName implements cloud.BlueGreen: named after the group an earlier
// run's green was cloned from, so names do not grow run after run
// ("ng1-v4" after "ng1-v3", not "ng1-v3-v4"), unless that is the ASG's
// own name.
func (n *NodeGroup) GreenName(version string) string {
	if n.ClonedFrom != "" {
		if name := GreenName(n.ClonedFrom, version); name != n.ASG {
			return name
		}
	}
	return GreenName(n.ASG, version)
}

// clonedFrom is the group g was cloned from as a green group, "" when g
// is none.
func clonedFrom(g *AutoScalingGroup) string {
	if g.Tags[TagRole].Value != RoleGreen {
		return ""
	}
	return g.Tags[TagBlue].Value
}

// CreateGreen implements cloud.BlueGreen. Green gets the sizes blue had
// before the run pinned it.
func (n *NodeGroup) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	blue, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return err
	}
	blue.Min, blue.Desired, blue.Max = sizes.Min, sizes.Desired, sizes.Max
	_, err = n.API.CloneGroup(ctx, blue, name, version)
	return err
}

// UseGreen implements cloud.BlueGreen.
func (n *NodeGroup) UseGreen(name string) { n.green = name }

// GroupSizes implements cloud.BlueGreen.
func (n *NodeGroup) GroupSizes(ctx context.Context, group string) (plan.Sizes, error) {
	lo, d, hi, err := n.API.Sizes(ctx, group)
	return plan.Sizes{Min: lo, Desired: d, Max: hi}, err
}

// SetGroupSizes implements cloud.BlueGreen.
func (n *NodeGroup) SetGroupSizes(ctx context.Context, group string, s plan.Sizes) error {
	return n.API.SetSizes(ctx, group, s.Min, s.Desired, s.Max)
}

// DeleteGroup implements cloud.BlueGreen.
func (n *NodeGroup) DeleteGroup(ctx context.Context, group string) error {
	return n.API.DeleteGroup(ctx, group)
}
