package gcefake

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// ProviderID is the provider ID of an instance's node, as the GCE cloud
// provider sets it: gce://PROJECT/ZONE/NAME.
func ProviderID(in Instance) string {
	return fmt.Sprintf("gce://%s/%s/%s", in.Project, in.Zone, in.Name)
}

// NodeOptions say what node KubeNodes makes for an instance.
type NodeOptions struct {
	// Labels are added to every node, besides the template's kube-labels.
	Labels map[string]string
}

// KubeNodes returns OnLaunch and OnDelete callbacks that make an
// instance a kwok node named after it (a GCE VM's hostname is its name),
// with its provider ID, zone and region labels and its template's
// kube-labels, and delete the node when the group deletes the instance.
// A recreated instance keeps its name: its new VM finds the node of the
// old one if nobody deleted it, and takes it as it is (cordon, taints),
// as a kubelet does.
func KubeNodes(c kubernetes.Interface, o NodeOptions) (onLaunch, onDelete func(context.Context, Instance) error) {
	onLaunch = func(ctx context.Context, in Instance) error {
		labels := maps.Clone(in.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, o.Labels)
		labels[scenario.RegionLabel] = RegionOf(in.Zone)
		labels["node.kubernetes.io/instance-type"] = "e2-standard-4"
		return scenario.JoinNode(ctx, c, scenario.Node{Name: in.Name, Zone: in.Zone, Labels: labels, ProviderID: ProviderID(in)})
	}
	onDelete = func(ctx context.Context, in Instance) error {
		return scenario.LeaveNode(ctx, c, in.Name)
	}
	return onLaunch, onDelete
}

// StartWithKube starts a Server whose instances are nodes of c.
func StartWithKube(ctx context.Context, c kubernetes.Interface, opts Options, nodes NodeOptions) (*Server, error) {
	opts.OnLaunch, opts.OnDelete = KubeNodes(c, nodes)
	return Start(ctx, opts)
}
