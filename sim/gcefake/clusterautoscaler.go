package gcefake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/clusterautoscaler"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// ClusterAutoscalerOptions configure RunClusterAutoscaler; groups are
// named by their keys (see Group.Key).
type ClusterAutoscalerOptions struct {
	clusterautoscaler.Options
	// MinSize and MaxSize bound every group's target size, as the
	// autoscaler's --nodes=MIN:MAX:GROUP does; MaxSize 0 is 100.
	MinSize, MaxSize int64
}

// RunClusterAutoscaler plays the Kubernetes cluster autoscaler
// (clusterautoscaler.Run) against this Server's managed instance groups
// until ctx ends, as its GCE cloud provider drives them: a scale-up
// raises a group's target size with instanceGroupManagers.resize
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/resize),
// and a scale-down deletes a node's instance with deleteInstances, which
// lowers the target size
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/deleteInstances).
// It is not the Compute autoscaler resource (see Autoscale): that one
// scales on the VMs' utilisation and knows no pods.
func (s *Server) RunClusterAutoscaler(ctx context.Context, c kubernetes.Interface, opts ClusterAutoscalerOptions) error {
	if opts.MaxSize == 0 {
		opts.MaxSize = 100
	}
	if opts.Logf == nil {
		opts.Logf = s.logf
	}
	return clusterautoscaler.Run(ctx, c, autoscaled{s: s, min: opts.MinSize, max: opts.MaxSize}, opts.Options)
}

// autoscaled is the Server as the cluster autoscaler sees it.
type autoscaled struct {
	s        *Server
	min, max int64
}

func (a autoscaled) Changed() <-chan struct{} {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	return a.s.changed
}

// Group is a group not being deleted, with the labels a node it created
// now would get: its template's kube-labels and the region's.
func (a autoscaled) Group(key string) (clusterautoscaler.Group, bool) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	g := a.s.groups[key]
	if g == nil || g.deleting {
		return clusterautoscaler.Group{}, false
	}
	it, err := a.s.templateLocked(g.project, g.igm.InstanceTemplate)
	if err != nil {
		return clusterautoscaler.Group{}, false
	}
	labels := maps.Clone(kubeLabels(it))
	if labels == nil {
		labels = map[string]string{}
	}
	labels[scenario.RegionLabel] = RegionOf(g.zones[0])
	out := clusterautoscaler.Group{Name: key, Desired: int(g.igm.TargetSize), Max: int(a.max), Zones: g.zones, Labels: labels}
	for _, k := range g.members {
		if in := a.s.instances[k]; in.Action != ActionDeleting {
			out.Machines = append(out.Machines, ProviderID(in.Instance))
		}
	}
	return out, true
}

// Machine is a running instance with no action under way.
func (a autoscaled) Machine(providerID string) (clusterautoscaler.Machine, bool) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	in := a.s.instances[instanceKey(providerID)]
	if in == nil || in.Action != ActionNone || in.Status != StatusRunning {
		return clusterautoscaler.Machine{}, false
	}
	return clusterautoscaler.Machine{ID: in.key, Group: in.Group}, true
}

// Raise is resize to a larger target size.
func (a autoscaled) Raise(key string, n int) (int, int, bool) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	g := a.s.groups[key]
	if g == nil || g.deleting {
		return 0, 0, false
	}
	from := g.igm.TargetSize
	to := min(a.max, from+int64(n))
	if to <= from {
		return int(from), int(from), false
	}
	g.igm.TargetSize = to
	a.s.notifyLocked()
	return int(from), int(to), true
}

// Remove is deleteInstances of one instance: the target size goes down by
// one, which the autoscaler does not do below MinSize.
func (a autoscaled) Remove(m clusterautoscaler.Machine) error {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	in := a.s.instances[m.ID]
	g := a.s.groups[m.Group]
	switch {
	case in == nil || g == nil || in.Group != g.key:
		return fmt.Errorf("no instance %s in group %s", m.ID, m.Group)
	case g.igm.TargetSize <= a.min:
		return fmt.Errorf("group %s is at its min size %d", g.name, a.min)
	case in.Action == ActionDeleting:
		return nil
	}
	g.igm.TargetSize--
	a.s.deleteLocked(in)
	a.s.notifyLocked()
	return nil
}

// instanceKey is the key of the instance a provider ID
// gce://PROJECT/ZONE/NAME names; "" when it names none.
func instanceKey(providerID string) string {
	rest, ok := strings.CutPrefix(providerID, "gce://")
	if parts := strings.Split(rest, "/"); !ok || len(parts) != 3 || slices.Contains(parts, "") {
		return ""
	}
	return rest
}
