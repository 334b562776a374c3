package awsfake

import (
	"context"
	"fmt"
)

// ManagedNodeGroupSpec describes a managed node group to set up without
// the SDK, as CreateNodegroup would make it.
type ManagedNodeGroupSpec struct {
	Cluster, Name     string
	Zones             []string // its subnets are the fake's of these zones
	Min, Desired, Max int32
	// Version and ReleaseVersion default to the cluster's version and its
	// latest release (AddRelease); with LaunchTemplate they are for a
	// template without an image. A version below the cluster's makes the
	// group as it was before the control plane's upgrade (CreateNodegroup
	// itself takes only the cluster's).
	Version, ReleaseVersion string
	// LaunchTemplate is a user's template (id and version, "" for its
	// default); one whose version has an image makes a custom-AMI group.
	LaunchTemplate *LaunchTemplateSpec
	Labels         map[string]string
	Taints         []Taint
	UpdateConfig   *NodegroupUpdateConfig // default maxUnavailable 1, DEFAULT
	// RemoteAccess, NodeRepairConfig and WarmPoolConfig are kept and
	// described, nothing more (see Nodegroup).
	RemoteAccess     *RemoteAccessConfig
	NodeRepairConfig *NodeRepairConfig
	WarmPoolConfig   *WarmPoolConfig
}

// ManagedNodeGroup creates a managed node group in an existing cluster
// (CreateEKSCluster) and waits until it is ACTIVE: its instances in
// service and, with a cluster (StartWithKube), their nodes Ready.
func (s *Server) ManagedNodeGroup(ctx context.Context, spec ManagedNodeGroupSpec) (Nodegroup, error) {
	req := Nodegroup{
		NodegroupName: spec.Name, NodeRole: "arn:aws:iam::123456789012:role/eks-node",
		ScalingConfig: &NodegroupScaling{MinSize: &spec.Min, DesiredSize: &spec.Desired, MaxSize: &spec.Max},
		Version:       spec.Version, ReleaseVersion: spec.ReleaseVersion, LaunchTemplate: spec.LaunchTemplate,
		Labels: spec.Labels, Taints: spec.Taints, UpdateConfig: spec.UpdateConfig,
		RemoteAccess: spec.RemoteAccess, NodeRepairConfig: spec.NodeRepairConfig, WarmPoolConfig: spec.WarmPoolConfig,
	}
	for _, z := range spec.Zones {
		req.Subnets = append(req.Subnets, Subnet(z))
	}
	s.mu.Lock()
	c := s.eks().clusters[spec.Cluster]
	var err error
	if c == nil {
		err = fmt.Errorf("no cluster %q", spec.Cluster)
	} else {
		_, err = s.createNodegroupLocked(c, req)
	}
	s.mu.Unlock()
	if err != nil {
		return Nodegroup{}, err
	}
	return s.WaitNodegroup(ctx, spec.Cluster, spec.Name, func(ng Nodegroup) bool { return ng.Status != NodegroupCreating })
}

// WaitNodegroup waits until cond, called with a snapshot of the node
// group after every change, returns true, and returns that snapshot.
func (s *Server) WaitNodegroup(ctx context.Context, cluster, name string, cond func(Nodegroup) bool) (Nodegroup, error) {
	return s.waitNodegroup(ctx, cluster, name, func(ng Nodegroup, ok bool) bool { return ok && cond(ng) })
}

// WaitNodegroupGone waits until the node group no longer exists.
func (s *Server) WaitNodegroupGone(ctx context.Context, cluster, name string) error {
	_, err := s.waitNodegroup(ctx, cluster, name, func(_ Nodegroup, ok bool) bool { return !ok })
	return err
}

func (s *Server) waitNodegroup(ctx context.Context, cluster, name string, cond func(Nodegroup, bool) bool) (Nodegroup, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		ng, ok := s.Nodegroup(cluster, name)
		if cond(ng, ok) {
			return ng, nil
		}
		select {
		case <-ctx.Done():
			return ng, fmt.Errorf("node group %q: %w", name, ctx.Err())
		case <-ch:
		}
	}
}

// WaitEKSUpdate waits until an update of the node group has ended, and
// returns it.
func (s *Server) WaitEKSUpdate(ctx context.Context, cluster, name, id string) (Update, error) {
	var last Update
	_, err := s.WaitNodegroup(ctx, cluster, name, func(Nodegroup) bool {
		for _, u := range s.EKSUpdates(cluster, name) {
			if u.ID == id {
				last = u
				return u.Status != UpdateInProgress
			}
		}
		return false
	})
	return last, err
}

// DeleteNodegroup deletes a managed node group as the DeleteNodegroup
// call does (its nodes drained, then terminated), without the SDK: what
// a test does in the place of a client killed after its call.
func (s *Server) DeleteNodegroup(cluster, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ng, err := s.nodegroupArg(cluster, name)
	if err != nil {
		return err
	}
	_, err = s.deleteNodegroup(s.eks().clusters[cluster], ng)
	return err
}
