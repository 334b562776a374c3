package aks

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// AgentPoolLabel is the label AKS puts on an agent pool's nodes
// (https://learn.microsoft.com/en-us/azure/aks/use-labels#reserved-system-labels).
const AgentPoolLabel = "kubernetes.azure.com/agentpool"

// NodeImageLabel is the node image version AKS labels a node with.
const NodeImageLabel = "kubernetes.azure.com/node-image-version"

// The provider's flags, kept in plan.CloudTarget.Options by name:
// --aks-cluster, not --cluster (kubectl's), and AKS's own words for the
// targets (--orchestrator-version, --node-image), not aws's
// --kubernetes-version.
const (
	optCluster       = "aks-cluster"
	optResourceGroup = "resource-group"
	optVersion       = "orchestrator-version"
	optImage         = "node-image"
	optDrainTimeout  = "aks-drain-timeout"
)

func init() { cloud.Register(aksCloud{}) }

// aksCloud is the provider "aks" as planning and running see it.
type aksCloud struct{}

var (
	_ cloud.FlagBinder = aksCloud{}
	_ cloud.Helper     = aksCloud{}
	_ cloud.FlagValues = aksCloud{}
)

func (aksCloud) Name() string { return Name }

// NodeGroupLabels implements cloud.NodeGroupLabeler.
func (aksCloud) NodeGroupLabels() []string { return []string{AgentPoolLabel} }

// Owns reports whether a provider ID names an Azure virtual machine (of a
// scale set): azure:///subscriptions/...
func (aksCloud) Owns(providerID string) bool {
	_, ok := parseProviderID(providerID)
	return ok
}

// Help describes the provider for --provider's help.
func (aksCloud) Help() string {
	return "AKS upgrades the agent pool itself (its surge upgrade), with the run's upgrade settings"
}

// BindFlags binds the provider's flags.
func (aksCloud) BindFlags(f *cloud.Flags) {
	f.Option(optCluster, "AKS: the managed cluster of the agent pool (default: from the nodes' node resource group, MC_<group>_<cluster>_<location>)")
	f.Option(optResourceGroup, "AKS: the managed cluster's resource group (default: as --aks-cluster)")
	f.TargetOption(optVersion, "AKS: upgrade the agent pool to this Kubernetes version (1.31 or 1.31.5; at most the control plane's, never lower than the pool's)")
	f.TargetOption(optImage, "AKS: upgrade the agent pool's node image to the latest AKS offers it (\"latest\", or that image's name)")
	f.Option(optDrainTimeout, "AKS: how long AKS tries to evict a node's pods, PDBs honoured, before the upgrade fails (drainTimeoutInMinutes) for the run, in whole minutes (30m); default the pool's, AKS's 30m when unset")
}

// FlagValues completes --node-image.
func (aksCloud) FlagValues(flag string) []string {
	if flag == optImage {
		return []string{"latest"}
	}
	return nil
}

var (
	versionPattern = regexp.MustCompile(`^\d+\.\d+(\.\d+)?$`)
	imagePattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// Validate checks the flags without calling Azure.
func (aksCloud) Validate(t plan.CloudTarget) error {
	o := t.Options
	switch {
	case o[optVersion] != "" && !versionPattern.MatchString(o[optVersion]):
		return inputErrorf("invalid --%s %q: want 1.X or 1.X.Y", optVersion, o[optVersion])
	case o[optImage] != "" && !imagePattern.MatchString(o[optImage]):
		return inputErrorf("invalid --%s %q: want \"latest\" or a node image version such as AKSUbuntu-2204gen2containerd-202502.09.0", optImage, o[optImage])
	case o[optVersion] != "" && o[optImage] != "":
		return inputErrorf("--%s and --%s both given: a Kubernetes version upgrade moves the nodes to the latest node image too; give one", optVersion, optImage)
	}
	if v := o[optDrainTimeout]; v != "" {
		if _, err := drainMinutes(v); err != nil {
			return err
		}
	}
	return nil
}

// maxDrainMinutes is the largest drainTimeoutInMinutes AKS takes (the
// REST spec's AgentPoolUpgradeSettings, 2025-02-01: minimum 1, maximum
// 1440; "az aks nodepool update --drain-timeout").
const maxDrainMinutes = 1440

// drainMinutes reads --aks-drain-timeout: whole minutes within AKS's
// range, as AKS takes it.
func drainMinutes(v string) (int32, error) {
	m, err := strconv.Atoi(strings.TrimSuffix(v, "m"))
	if err != nil || m <= 0 || m > maxDrainMinutes || !strings.HasSuffix(v, "m") {
		return 0, inputErrorf("invalid --%s %q: want whole minutes from 1m to %dm such as 30m (AKS's drainTimeoutInMinutes)", optDrainTimeout, v, maxDrainMinutes)
	}
	return int32(m), nil
}

// Open reads the agent pool of the nodes and resolves the target; it
// only reads, and refuses, before any write, what AKS would refuse.
func (aksCloud) Open(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	name, err := poolOf(nodes)
	if t.Group != "" {
		// The record's pool: after a blue/green run deleted blue, green's.
		name, err = t.Group, nil
	}
	if err != nil {
		return nil, nil, err
	}
	id, err := clusterOf(nodes, t.Options[optResourceGroup], t.Options[optCluster])
	if err != nil {
		return nil, nil, err
	}
	c, err := newClients(id.subscription)
	if err != nil {
		return nil, nil, err
	}
	ap := &AgentPool{c: c, kube: client, id: id, name: name}
	if err := ap.read(ctx); err != nil {
		return nil, nil, err
	}
	if t.Strategy == plan.StrategyBlueGreen {
		return openBlueGreen(ctx, ap, nodes, t)
	}
	if err := ap.resolveTarget(ctx, t.Options); err != nil {
		return nil, nil, err
	}
	ap.readPlanFacts(ctx)
	return ap.cloudGroup(nodes), ap, nil
}

// poolOf is the one agent pool the nodes' label names.
func poolOf(nodes []corev1.Node) (string, error) {
	return cloud.PoolOf(nodes, AgentPoolLabel, "AKS", "agent pool")
}

// clusterID names a managed cluster.
type clusterID struct {
	subscription, group, name string
}

// providerID is what a node's azure:// provider ID names
// (azarm.ParseInstanceID).
type providerID = azarm.InstanceID

func parseProviderID(id string) (providerID, bool) { return azarm.ParseInstanceID(id) }

// clusterOf finds the cluster: the flags, else the node resource group
// AKS names MC_<resource group>_<cluster>_<location>
// (https://learn.microsoft.com/en-us/azure/aks/faq#why-are-two-resource-groups-created-with-aks).
func clusterOf(nodes []corev1.Node, group, name string) (clusterID, error) {
	var pid providerID
	for i := range nodes {
		if p, ok := parseProviderID(nodes[i].Spec.ProviderID); ok {
			pid = p
			break
		}
	}
	if pid.Subscription == "" {
		return clusterID{}, inputErrorf("the nodes have no azure:// provider IDs to find their subscription from")
	}
	id := clusterID{subscription: pid.Subscription, group: group, name: name}
	if group != "" && name != "" {
		return id, nil
	}
	parts := strings.Split(pid.Group, "_")
	if len(parts) != 4 || !strings.EqualFold(parts[0], "MC") {
		return clusterID{}, inputErrorf("node resource group %q is not AKS's default MC_<group>_<cluster>_<location>; give --%s and --%s", pid.Group, optResourceGroup, optCluster)
	}
	if id.group == "" {
		id.group = parts[1]
	}
	if id.name == "" {
		id.name = parts[2]
	}
	return id, nil
}
