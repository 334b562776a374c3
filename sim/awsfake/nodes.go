package awsfake

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// Labels EKS puts on the nodes of a managed node group.
const (
	NodeGroupLabel     = "eks.amazonaws.com/nodegroup"
	ImageLabel         = "eks.amazonaws.com/nodegroup-image"
	SourceLTIDLabel    = "eks.amazonaws.com/sourceLaunchTemplateId"
	SourceLTVersionLbl = "eks.amazonaws.com/sourceLaunchTemplateVersion"
)

// NodeOptions say what node KubeNodes makes for an instance.
type NodeOptions struct {
	// GroupLabelKey is the node-group label; default NodeGroupLabel. Its
	// value is GroupLabelValues[group] if set, else the name of the
	// instance's launch template, else the group's name. The template
	// stands for its user data: on a self-managed node group the label is
	// set by the bootstrap's --kubelet-extra-args, so a group cloned with
	// the same template (blue/green) labels its nodes with the same value.
	GroupLabelKey    string
	GroupLabelValues map[string]string
	// NoEKSLabels leaves out the eks.amazonaws.com image and source launch
	// template labels, as on a self-managed node group.
	NoEKSLabels bool
	// Labels are added to every node.
	Labels map[string]string
	// NameByInstanceID names nodes after the instance id instead of the
	// private DNS name (ip-10-N-x-y.<region>.compute.internal, N the
	// Server's number in the process).
	NameByInstanceID bool
	// NotReady, if set and true for an instance, makes a node that kwok
	// does not manage, so it never becomes Ready (bootstrap failure). It is
	// called from the Server's launch goroutines, concurrently and while a
	// test runs: to flip it at run time, close over something safe for
	// that, e.g. func(Instance) bool { return broken.Load() } with broken
	// an atomic.Bool.
	NotReady func(Instance) bool
}

// NodeName is the name of the node KubeNodes makes for an instance.
func (o NodeOptions) NodeName(in Instance) string {
	if o.NameByInstanceID {
		return in.ID
	}
	return in.PrivateDNS
}

// ProviderID is the cloud provider's id for an instance's node.
func ProviderID(in Instance) string { return fmt.Sprintf("aws:///%s/%s", in.Zone, in.ID) }

// NodeLabels returns the labels KubeNodes puts on an instance's node, besides
// the zone, region and kwok ones.
func (o NodeOptions) NodeLabels(in Instance) map[string]string {
	if in.NodeLabels != nil {
		// An EKS managed node group's: EKS's labels and the group's.
		l := maps.Clone(in.NodeLabels)
		l[scenario.RegionLabel] = regionOf(in.Zone)
		l["node.kubernetes.io/instance-type"] = in.InstanceType
		maps.Copy(l, o.Labels)
		return l
	}
	key := o.GroupLabelKey
	if key == "" {
		key = NodeGroupLabel
	}
	val := o.GroupLabelValues[in.Group]
	if val == "" {
		val = in.LaunchTemplateName
	}
	if val == "" {
		val = in.Group
	}
	l := map[string]string{
		key:                                val,
		scenario.RegionLabel:               regionOf(in.Zone),
		"node.kubernetes.io/instance-type": in.InstanceType,
	}
	if !o.NoEKSLabels {
		l[ImageLabel] = in.ImageID
		l[SourceLTIDLabel] = in.LaunchTemplateID
		l[SourceLTVersionLbl] = in.LaunchTemplateVersion
	}
	maps.Copy(l, o.Labels)
	return l
}

// regionOf drops the zone letter: us-east-1a → us-east-1. Zones that do
// not look like AWS ones (sim-a) keep the sim's region.
func regionOf(zone string) string {
	if n := len(zone); n > 1 && zone[n-1] >= 'a' && zone[n-1] <= 'z' && zone[n-2] >= '0' && zone[n-2] <= '9' {
		return zone[:n-1]
	}
	return scenario.Region
}

// KubeNodes returns OnLaunch and OnTerminate callbacks that create a kwok
// node for each launched instance (provider ID aws:///zone/id, zone label,
// node-group and EKS labels) and delete it when the instance terminates.
func KubeNodes(c kubernetes.Interface, o NodeOptions) (onLaunch, onTerminate func(context.Context, Instance) error) {
	onLaunch = func(ctx context.Context, in Instance) error {
		name := o.NodeName(in)
		if o.NotReady != nil && o.NotReady(in) {
			return createUnmanagedNode(ctx, c, name, in, o.NodeLabels(in))
		}
		return scenario.JoinNode(ctx, c, scenario.Node{
			Name:           name,
			Zone:           in.Zone,
			Labels:         o.NodeLabels(in),
			ProviderID:     ProviderID(in),
			Taints:         in.NodeTaints,
			KubeletVersion: in.KubeletVersion,
		})
	}
	onTerminate = func(ctx context.Context, in Instance) error {
		return scenario.LeaveNode(ctx, c, o.NodeName(in))
	}
	return onLaunch, onTerminate
}

// createUnmanagedNode makes a node without the kwok annotation: nothing
// plays its kubelet, so it never reports Ready.
func createUnmanagedNode(ctx context.Context, c kubernetes.Interface, name string, in Instance, labels map[string]string) error {
	l := map[string]string{scenario.HostnameLabel: name, scenario.ZoneLabel: in.Zone, "type": "kwok"}
	maps.Copy(l, labels)
	_, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Spec:       corev1.NodeSpec{ProviderID: ProviderID(in)},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
