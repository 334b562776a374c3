package gke

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// NodePoolLabel is the label GKE puts on a node pool's nodes.
const NodePoolLabel = "cloud.google.com/gke-nodepool"

// The provider's flags, kept in plan.CloudTarget.Options by name.
// --gke-cluster, not --cluster: kubectl's --cluster names a kubeconfig
// cluster.
const (
	optCluster     = "gke-cluster"
	optLocation    = "location"
	optNodeVersion = "node-version"
	optImageType   = "image-type"
	optPDBTimeout  = "pdb-timeout"
)

func init() { cloud.Register(gkeCloud{}) }

// gkeCloud is the provider "gke" as planning and running see it.
type gkeCloud struct{}

func (gkeCloud) Name() string { return Name }

// NodeGroupLabels implements cloud.NodeGroupLabeler.
func (gkeCloud) NodeGroupLabels() []string { return []string{NodePoolLabel} }

// Owns reports whether a provider ID names a Compute Engine instance; a
// GKE node is one, so Claims says which are GKE's.
func (gkeCloud) Owns(providerID string) bool {
	_, _, _, ok := gce.InstanceFromProviderID(providerID)
	return ok
}

// Claims reports whether the node is a GKE node pool's: a Compute Engine
// instance with GKE's node pool label.
func (c gkeCloud) Claims(n *corev1.Node) bool {
	return n.Labels[NodePoolLabel] != "" && c.Owns(n.Spec.ProviderID)
}

// Help describes the provider for --provider's help.
func (gkeCloud) Help() string {
	return "GKE upgrades the node pool itself (nodePools.update), with the run's upgrade settings"
}

// BindFlags binds the provider's flags.
func (gkeCloud) BindFlags(f *cloud.Flags) {
	f.Option(optCluster, "GKE: the cluster of the node pool (default: the cluster-name metadata of the nodes' instances)")
	f.Option(optLocation, "GKE: the cluster's location, a region or a zone (default: the cluster-location metadata of the nodes' instances)")
	f.TargetOption(optNodeVersion, "GKE: upgrade the node pool to this version (1.31, 1.31.2, 1.31.2-gke.1000, \"-\" for the control plane's, \"latest\"; at most the control plane's)")
	f.TargetOption(optImageType, "GKE: move the node pool to this image type (COS_CONTAINERD, UBUNTU_CONTAINERD, ...)")
	f.Option(optPDBTimeout, "GKE: how long GKE honours PodDisruptionBudgets before it deletes the pods (nodeDrainConfig.pdbTimeoutDuration) for the run; default the pool's, GKE's 1h when unset")
}

// FlagValues completes --node-version's aliases.
func (gkeCloud) FlagValues(flag string) []string {
	if flag == optNodeVersion {
		return []string{"-", "latest"}
	}
	return nil
}

var (
	versionPattern   = regexp.MustCompile(`^(-|latest|\d+\.\d+(\.\d+(-gke\.\d+)?)?)$`)
	imageTypePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// Validate checks the flags without calling GKE.
func (gkeCloud) Validate(t plan.CloudTarget) error {
	o := t.Options
	switch {
	case o[optNodeVersion] != "" && !versionPattern.MatchString(o[optNodeVersion]):
		return inputErrorf("invalid --%s %q: want 1.X, 1.X.Y, 1.X.Y-gke.N, \"-\" or \"latest\"", optNodeVersion, o[optNodeVersion])
	case o[optImageType] != "" && !imageTypePattern.MatchString(o[optImageType]):
		return inputErrorf("invalid --%s %q: want an image type such as COS_CONTAINERD or UBUNTU_CONTAINERD", optImageType, o[optImageType])
	}
	if v := o[optPDBTimeout]; v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return inputErrorf("invalid --%s %q: want a positive duration such as 1h or 90s", optPDBTimeout, v)
		}
	}
	return nil
}

// Open reads the node pool of the nodes and resolves the target. It only
// reads.
func (gkeCloud) Open(ctx context.Context, _ kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	name, err := poolOf(nodes)
	if err != nil {
		return nil, nil, err
	}
	c, err := newClients(ctx)
	if err != nil {
		return nil, nil, err
	}
	project, cluster, location, err := c.clusterOf(ctx, nodes, t.Options[optCluster], t.Options[optLocation])
	if err != nil {
		return nil, nil, err
	}
	np := &NodePool{c: c, project: project, location: location, cluster: cluster, name: name,
		fromMetadata: t.Options[optCluster] == "" || t.Options[optLocation] == ""}
	if err := np.read(ctx); err != nil {
		return nil, nil, err
	}
	if err := np.resolveTarget(ctx, t.Options); err != nil {
		return nil, nil, err
	}
	return np.cloudGroup(nodes), np, nil
}

// poolOf is the one node pool the nodes' label names.
func poolOf(nodes []corev1.Node) (string, error) {
	return cloud.PoolOf(nodes, NodePoolLabel, "GKE", "node pool")
}

// clusterOf finds the cluster: the flags, else the cluster-name and
// cluster-location metadata GKE sets on its nodes' instances.
func (c *clients) clusterOf(ctx context.Context, nodes []corev1.Node, cluster, location string) (project, name, loc string, err error) {
	type instanceRef struct{ project, zone, name string }
	var refs []instanceRef
	for i := range nodes {
		if p, z, in, ok := gce.InstanceFromProviderID(nodes[i].Spec.ProviderID); ok {
			refs = append(refs, instanceRef{p, z, in})
		}
	}
	if len(refs) == 0 {
		return "", "", "", inputErrorf("the nodes have no gce:// provider IDs to find their project from")
	}
	project = refs[0].project
	if cluster != "" && location != "" {
		return project, cluster, location, nil
	}
	// A node whose instance is gone (an upgrade deleted it, its Node object
	// not yet) says nothing: the next one may.
	var meta map[string]string
	instance := ""
	for _, ref := range refs[:min(len(refs), maxInstancesAsked)] {
		meta, err = c.instanceMetadata(ctx, ref.project, ref.zone, ref.name)
		if err == nil || !errors.Is(err, errInstanceNotFound) {
			instance = ref.name
			break
		}
	}
	if instance == "" {
		first := refs[0]
		return "", "", "", inputErrorf("instance %q not found in project %q, zone %q; check the credentials' project, or give --%s and --%s", first.name, first.project, first.zone, optCluster, optLocation)
	}
	if err != nil {
		return "", "", "", err
	}
	if cluster == "" {
		cluster = meta["cluster-name"]
	}
	if location == "" {
		location = meta["cluster-location"]
	}
	if cluster == "" || location == "" {
		return "", "", "", inputErrorf("instance %q carries no cluster-name and cluster-location metadata; give --%s and --%s", instance, optCluster, optLocation)
	}
	return project, cluster, location, nil
}

// maxInstancesAsked bounds the instances asked for the cluster's metadata
// when the first are gone.
const maxInstancesAsked = 5

// errInstanceNotFound is behind instanceMetadata's error for an instance
// that does not exist.
var errInstanceNotFound = errors.New("instance not found")

// instanceMetadata reads an instance's metadata items.
func (c *clients) instanceMetadata(ctx context.Context, project, zone, instance string) (map[string]string, error) {
	in, err := c.compute.Instances.Get(project, zone, instance).Context(ctx).Do()
	if apiCode(err) == http.StatusNotFound {
		return nil, errInstanceNotFound
	}
	if err != nil {
		return nil, wrap(err, "get instance %q in zone %q", instance, zone)
	}
	meta := map[string]string{}
	if in.Metadata != nil {
		for _, it := range in.Metadata.Items {
			if it.Value != nil {
				meta[it.Key] = *it.Value
			}
		}
	}
	return meta, nil
}

// String names the pool in messages.
func (n *NodePool) String() string {
	return fmt.Sprintf("node pool %q of cluster %q (%s)", n.name, n.cluster, n.location)
}
