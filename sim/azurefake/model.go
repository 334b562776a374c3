package azurefake

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// The agent pool's provisioning states the fake goes through. The model
// types provisioningState as a plain string
// (ManagedClusterAgentPoolProfileProperties.ProvisioningState, read-only);
// the values are those AKS reports: Succeeded, Failed, Canceled
// (https://learn.microsoft.com/en-us/azure/aks/manage-abort-operations:
// "the provisioning state ... Canceling ... Canceled"), Upgrading and
// UpgradingNodeImageVersion for the two upgrades, Updating for a change of
// settings alone.
const (
	stateSucceeded    = "Succeeded"
	stateFailed       = "Failed"
	stateCanceling    = "Canceling"
	stateCanceled     = "Canceled"
	stateUpgrading    = "Upgrading"
	stateUpgradeImage = "UpgradingNodeImageVersion"
	stateUpdating     = "Updating"
)

// cluster is a managed cluster and its agent pools.
type cluster struct {
	group, name, version string
	nodeGroup            string // the MC_ resource group of its scale sets
	versions             []string
	pools                map[string]*pool // by lower-case name
}

// pool is an agent pool: the SDK's model of it, and the fake's own state.
type pool struct {
	c     *cluster
	model armcs.AgentPool
	// scaleSet names the pool's scale set in the node resource group.
	scaleSet string
	nodes    []*machine
	// image is the node image the pool's new machines run, latest the
	// latest AKS offers the pool (upgradeProfiles/default).
	latest string
	// op is the operation running on the pool, nil when none.
	op *operation
	// extra are the upgrade settings only PoolAPIVersion has.
	extra upgradeExtra
}

// machine is a scale set instance and the node it registers as.
type machine struct {
	index          int
	name           string
	version, image string
	// surge marks a machine the running upgrade added.
	surge bool
	// quarantined marks a machine whose drain undrainableNodeBehavior
	// Cordon gave up on: left cordoned on its old version.
	quarantined bool
}

// ClusterSpec describes a managed cluster: its resource group, name,
// control plane version, and the versions AKS offers its pools.
type ClusterSpec struct {
	ResourceGroup, Name, Version string
	Versions                     []string
}

// PoolSpec describes an agent pool: its count, zones, Kubernetes version
// and node image, the latest image AKS offers it, and its upgrade
// settings (nil: AKS's defaults).
type PoolSpec struct {
	ResourceGroup, Cluster, Name string
	Count                        int
	Zones                        []string
	Version, Image, LatestImage  string
	Upgrade                      *armcs.AgentPoolUpgradeSettings
	// Labels are the pool's nodeLabels, which its nodes carry.
	Labels map[string]string
	// Spot makes a Spot pool (scaleSetPriority Spot).
	Spot bool
	// MaxUnavailable and Undrainable are the pool's maxUnavailable and
	// undrainableNodeBehavior, which only PoolAPIVersion has ("": unset).
	MaxUnavailable, Undrainable string
}

// CreateCluster makes a managed cluster with no pool.
func (s *Server) CreateCluster(spec ClusterSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusters[key(spec.ResourceGroup, spec.Name)] = &cluster{group: spec.ResourceGroup, name: spec.Name, version: spec.Version,
		nodeGroup: fmt.Sprintf("MC_%s_%s_%s", spec.ResourceGroup, spec.Name, s.opts.Location), versions: spec.Versions, pools: map[string]*pool{}}
}

// CreatePool makes an agent pool of Count machines and their nodes.
func (s *Server) CreatePool(ctx context.Context, spec PoolSpec) error {
	s.mu.Lock()
	c := s.clusters[key(spec.ResourceGroup, spec.Cluster)]
	if c == nil {
		s.mu.Unlock()
		return fmt.Errorf("no cluster %s/%s", spec.ResourceGroup, spec.Cluster)
	}
	p := &pool{c: c, scaleSet: fmt.Sprintf("aks-%s-%d-vmss", spec.Name, 10000000+len(c.pools)), latest: spec.LatestImage}
	p.model = armcs.AgentPool{
		ID:   to.Ptr(s.poolID(c, spec.Name)),
		Name: to.Ptr(spec.Name),
		Type: to.Ptr("Microsoft.ContainerService/managedClusters/agentPools"),
		Properties: &armcs.ManagedClusterAgentPoolProfileProperties{
			Count: to.Ptr(int32(spec.Count)), VMSize: to.Ptr("Standard_D4s_v5"), OSType: to.Ptr(armcs.OSTypeLinux),
			Mode: to.Ptr(armcs.AgentPoolModeUser), Type: to.Ptr(armcs.AgentPoolTypeVirtualMachineScaleSets),
			OrchestratorVersion: to.Ptr(spec.Version), CurrentOrchestratorVersion: to.Ptr(spec.Version),
			NodeImageVersion: to.Ptr(spec.Image), ProvisioningState: to.Ptr(stateSucceeded),
			AvailabilityZones: to.SliceOfPtrs(spec.Zones...), UpgradeSettings: spec.Upgrade,
			PowerState: &armcs.PowerState{Code: to.Ptr(armcs.CodeRunning)},
			NodeLabels: labelPtrs(spec.Labels), ScaleSetPriority: spotPriority(spec.Spot),
		},
	}
	s.newETagLocked(p)
	if spec.MaxUnavailable != "" {
		p.extra.MaxUnavailable = ptr(spec.MaxUnavailable)
	}
	if spec.Undrainable != "" {
		p.extra.UndrainableNodeBehavior = ptr(spec.Undrainable)
	}
	c.pools[strings.ToLower(spec.Name)] = p
	var ms []*machine
	for range spec.Count {
		ms = append(ms, s.newMachineLocked(p, spec.Version, spec.Image, false))
	}
	s.mu.Unlock()
	for _, m := range ms {
		if err := s.joinNode(ctx, p, m); err != nil {
			return err
		}
	}
	return nil
}

// newMachineLocked adds a machine to the pool.
func (s *Server) newMachineLocked(p *pool, version, image string, surge bool) *machine {
	idx := 0
	for _, m := range p.nodes {
		idx = max(idx, m.index+1)
	}
	// A scale set's instance's computer name is its name prefix and the
	// instance ID in base 36, six digits (aks-nodepool1-12345678-vmss000000).
	id := itoa36(idx)
	m := &machine{index: idx, name: p.scaleSet + strings.Repeat("0", max(6-len(id), 0)) + id, version: version, image: image, surge: surge}
	p.nodes = append(p.nodes, m)
	return m
}

func itoa36(i int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if i == 0 {
		return "0"
	}
	var out []byte
	for ; i > 0; i /= 36 {
		out = append([]byte{digits[i%36]}, out...)
	}
	return string(out)
}

func key(group, name string) string { return strings.ToLower(group + "/" + name) }

func (s *Server) clusterID(c *cluster) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.ContainerService/managedClusters/%s", s.opts.Subscription, c.group, c.name)
}

func (s *Server) poolID(c *cluster, name string) string {
	return s.clusterID(c) + "/agentPools/" + name
}

// Pool returns a copy of a pool's model, as GET answers it.
func (s *Server) Pool(group, clusterName, name string) (armcs.AgentPool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolLocked(group, clusterName, name)
	if p == nil {
		return armcs.AgentPool{}, false
	}
	return s.poolView(p), true
}

func (s *Server) poolLocked(group, clusterName, name string) *pool {
	c := s.clusters[key(group, clusterName)]
	if c == nil {
		return nil
	}
	return c.pools[strings.ToLower(name)]
}

// poolView is the pool's model with its count now.
func (s *Server) poolView(p *pool) armcs.AgentPool {
	m := p.model
	props := *m.Properties
	props.Count = to.Ptr(int32(len(p.nodes)))
	m.Properties = &props
	return m
}

// spotPriority is a pool's scaleSetPriority: Spot, or nil (Regular).
func spotPriority(spot bool) *armcs.ScaleSetPriority {
	if !spot {
		return nil
	}
	return ptr(armcs.ScaleSetPrioritySpot)
}
