package awsfake

import (
	"context"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/clusterautoscaler"
)

// SafeToEvictAnnotation set to "false" on a pod keeps the cluster
// autoscaler from removing its node.
const SafeToEvictAnnotation = clusterautoscaler.SafeToEvictAnnotation

// AutoscalerOptions configure RunAutoscaler; groups are named by their
// Auto Scaling group names.
type AutoscalerOptions = clusterautoscaler.Options

// RunAutoscaler plays a small cluster autoscaler (clusterautoscaler.Run)
// against this Server's Auto Scaling groups until ctx ends: it raises a
// group's desired capacity, up to its max, and removes a node's instance
// as TerminateInstanceInAutoScalingGroup with the desired capacity
// decremented does; a group at its min keeps its nodes. A new node's
// labels are those of an instance from the group's launch template, as
// the NodeOptions given to StartWithKube label it. Logf defaults to the
// Server's.
func (s *Server) RunAutoscaler(ctx context.Context, c kubernetes.Interface, opts AutoscalerOptions) error {
	if opts.Logf == nil {
		opts.Logf = s.logf
	}
	s.mu.Lock()
	nodes := NodeOptions{}
	if s.nodes != nil {
		nodes = *s.nodes
	}
	s.mu.Unlock()
	return clusterautoscaler.Run(ctx, c, autoscaled{s: s, nodes: nodes}, opts)
}

// autoscaled is the Server as the cluster autoscaler sees it.
type autoscaled struct {
	s     *Server
	nodes NodeOptions
}

func (a autoscaled) Changed() <-chan struct{} {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	return a.s.changed
}

// Group is a group that is not being deleted, with the labels a node
// launched for it now would get.
func (a autoscaled) Group(name string) (clusterautoscaler.Group, bool) {
	g, labels, ok := a.s.templateLabels(name, a.nodes)
	if !ok {
		return clusterautoscaler.Group{}, false
	}
	out := clusterautoscaler.Group{Name: name, Desired: int(g.Desired), Max: int(g.Max), Zones: g.Zones, Labels: labels}
	for _, in := range g.Instances {
		if in.Lifecycle == LifecyclePending || in.Lifecycle == LifecycleInService {
			out.Machines = append(out.Machines, ProviderID(in))
		}
	}
	return out, true
}

func (a autoscaled) Machine(providerID string) (clusterautoscaler.Machine, bool) {
	in, ok := a.s.Instance(instanceID(providerID))
	if !ok || in.Lifecycle != LifecycleInService {
		return clusterautoscaler.Machine{}, false
	}
	return clusterautoscaler.Machine{ID: in.ID, Group: in.Group}, true
}

func (a autoscaled) Raise(group string, n int) (int, int, bool) {
	from, to, ok := a.s.raiseDesired(group, int32(n))
	return int(from), int(to), ok
}

func (a autoscaled) Remove(m clusterautoscaler.Machine) error {
	return a.s.TerminateInstance(m.ID, true)
}

// instanceID reads the instance id out of a provider ID aws:///zone/i-...
func instanceID(providerID string) string {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return ""
	}
	id := rest[strings.LastIndex(rest, "/")+1:]
	if !strings.HasPrefix(id, "i-") {
		return ""
	}
	return id
}

// templateLabels returns a snapshot of a group that is not being deleted
// and the labels a node launched for it now would get.
func (s *Server) templateLabels(name string, o NodeOptions) (Group, map[string]string, bool) {
	g, ok := s.Group(name)
	if !ok || g.Status != "" || len(g.Zones) == 0 {
		return Group{}, nil, false
	}
	lt, ok := s.LaunchTemplate(g.LaunchTemplateID)
	if !ok {
		return Group{}, nil, false
	}
	vn, ok := lt.resolve(g.LaunchTemplateVersion)
	if !ok {
		return Group{}, nil, false
	}
	v := lt.Versions[vn-1]
	in := Instance{
		Group: name, Zone: g.Zones[0], ImageID: v.ImageID, InstanceType: v.InstanceType,
		LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name, LaunchTemplateVersion: strconv.FormatInt(vn, 10),
	}
	s.mu.Lock()
	if ng := s.eks().byASG()[name]; ng != nil {
		// A managed node group's node gets EKS's labels and the group's
		// (see eksInstanceLocked): the cluster autoscaler reads them with
		// DescribeNodegroup (its AWS provider's managed node group cache).
		in.NodeLabels = ng.nodeLabels(ng.sources[vn])
	}
	s.mu.Unlock()
	return g, o.NodeLabels(in), true
}

// raiseDesired adds up to n to a group's desired capacity, not past its
// max.
func (s *Server) raiseDesired(name string, n int32) (from, to int32, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil || g.deleting {
		return 0, 0, false
	}
	from, to = g.Desired, min(g.Max, g.Desired+n)
	if to <= from {
		return from, from, false
	}
	g.Desired = to
	s.notify()
	return from, to, true
}
