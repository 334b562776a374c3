package aks

import (
	"context"
	"fmt"
	"strings"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.CapacityProver = (*AgentPool)(nil)

// ProveCapacity implements cloud.CapacityProver: the vCPU quotas the
// nodes AKS adds count against (read with the plan's facts), and the
// addresses they take of the pool's subnets (subnetNeeds), each against what
// its virtual network's usages say is free. AKS asks the same before it
// surges and fails the upgrade short of them ("Pre-allocated IPs 276
// exceeds IPs available 251 in Subnet", Azure/AKS#1795).
func (a *AgentPool) ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error) {
	c := &plan.CapacityPlan{InstanceType: str(a.pool.Properties.VMSize)}
	if q := a.facts.quota; q != nil {
		c.Quotas = q.uses(a.id.subscription, a.location, added)
	} else if a.facts.quotaErr != "" {
		c.Unprovable = append(c.Unprovable, "the vCPU quota of the surge is not read: "+a.facts.quotaErr)
	}
	needs, unprovable := poolNetwork{a}.subnetNeeds(ctx)
	c.Unprovable = append(c.Unprovable, unprovable...)
	for _, n := range needs {
		used, size, err := armEndpoint.ReadSubnet(ctx, a.c.pipeline, n.subnet)
		if err != nil {
			c.Unprovable = append(c.Unprovable, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		c.Quotas = append(c.Quotas, azarm.SubnetQuota(n.subnet, used, size, n.perNode, added, n.what))
	}
	return c, nil
}

// poolNetwork reads what the pool's nodes take of its subnets; a type of
// its own keeps AgentPool within the methods one type may declare.
type poolNetwork struct{ *AgentPool }

// subnetNeed is what each added node takes of one subnet.
type subnetNeed struct {
	subnet  azarm.Subnet
	perNode int64
	what    string
}

// subnetNeeds are the pool's subnets and what an added node takes of
// each, by the cluster's network plugin
// (https://learn.microsoft.com/en-us/azure/aks/concepts-network-ip-address-planning):
//   - kubenet, and Azure CNI Overlay (networkPlugin azure,
//     networkPluginMode overlay): the node's own address; pods take theirs
//     from the pod CIDR, not the subnet.
//   - Azure CNI with a pod subnet (podSubnetID, dynamic allocation): the
//     node's address of vnetSubnetID, its pods' of podSubnetID (podBatches).
//   - Azure CNI otherwise: 1 + maxPods addresses, pre-allocated, AKS's
//     formula "(number of nodes + max surge) × (1 + max pods)" of "Plan IP
//     addressing" (https://learn.microsoft.com/en-us/azure/aks/configure-azure-cni),
//     of which the pool's nodes hold theirs already: the surge's share.
func (a poolNetwork) subnetNeeds(ctx context.Context) ([]subnetNeed, []string) {
	p := a.pool.Properties
	id := str(p.VnetSubnetID)
	if id == "" {
		return nil, []string{fmt.Sprintf("agent pool %q names no vnetSubnetID: its nodes are on the virtual network AKS made in the node resource group, whose addresses are not read", a.name)}
	}
	node, ok := azarm.ParseSubnet(id)
	if !ok {
		return nil, []string{fmt.Sprintf("agent pool %q has vnetSubnetID %q, not a subnet's resource ID", a.name, id)}
	}
	plugin, mode := networkPlugin(a.network)
	switch {
	case plugin == armcs.NetworkPluginKubenet || plugin == armcs.NetworkPluginAzure && mode == armcs.NetworkPluginModeOverlay:
		return []subnetNeed{{node, 1, "node"}}, nil
	case plugin == armcs.NetworkPluginAzure && str(p.PodSubnetID) != "":
		pods, ok := azarm.ParseSubnet(str(p.PodSubnetID))
		if !ok {
			return []subnetNeed{{node, 1, "node"}}, []string{fmt.Sprintf("agent pool %q has podSubnetID %q, not a subnet's resource ID", a.name, str(p.PodSubnetID))}
		}
		batches, err := a.podBatches(ctx)
		if err != nil {
			return []subnetNeed{{node, 1, "node"}}, []string{err.Error()}
		}
		return []subnetNeed{{node, 1, "node"}, {pods, batches, "pods"}}, nil
	case plugin == armcs.NetworkPluginAzure && p.MaxPods != nil:
		return []subnetNeed{{node, 1 + int64(*p.MaxPods), "node and its maxPods"}}, nil
	case plugin == armcs.NetworkPluginAzure:
		return []subnetNeed{{node, 1, "node"}}, []string{fmt.Sprintf("agent pool %q reports no maxPods: the Azure CNI addresses of its pods are not counted", a.name)}
	}
	return []subnetNeed{{node, 1, "node"}}, []string{fmt.Sprintf("AKS cluster %q has network plugin %q: its pods' addresses are not counted", a.id.name, plugin)}
}

// networkPlugin is the cluster's networkProfile.networkPlugin and
// networkPluginMode ("" unset).
func networkPlugin(n *armcs.NetworkProfile) (armcs.NetworkPlugin, armcs.NetworkPluginMode) {
	var plugin armcs.NetworkPlugin
	var mode armcs.NetworkPluginMode
	if n != nil {
		if n.NetworkPlugin != nil {
			plugin = *n.NetworkPlugin
		}
		if n.NetworkPluginMode != nil {
			mode = *n.NetworkPluginMode
		}
	}
	return plugin, mode
}

// podBatch is how many pod subnet addresses Azure CNI's dynamic
// allocation gives a node at a time: "IPs are allocated to nodes in
// batches of 16"; a node asks for another batch "any time there are less
// than 8 IPs unallocated in their allotment"
// (https://learn.microsoft.com/en-us/azure/aks/configure-azure-cni-dynamic-ip-allocation, "Plan IP addressing").
const (
	podBatch     = 16
	podBatchSlop = 8
)

// podBatches is what an added node takes of the pod subnet: the batches
// that hold the pods of the pool's busiest node (the most an added node
// takes over from the one it replaces), at most its maxPods.
func (a poolNetwork) podBatches(ctx context.Context) (int64, error) {
	pods, err := a.busiestPods(ctx)
	if err != nil {
		return 0, err
	}
	if m := a.pool.Properties.MaxPods; m != nil {
		pods = min(pods, int64(*m))
	}
	return (pods + podBatchSlop + podBatch - 1) / podBatch * podBatch, nil
}

// busiestPods is the most pods with an address of their own on one node
// of the pool (cloud.BusiestNode).
func (a poolNetwork) busiestPods(ctx context.Context) (int64, error) {
	if a.kube == nil {
		return 0, fmt.Errorf("the pods of agent pool %q are not counted: no cluster client", a.name)
	}
	nodes, err := a.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: AgentPoolLabel + "=" + a.name})
	if err != nil {
		return 0, fmt.Errorf("cannot list the nodes of agent pool %q: %w", a.name, err)
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	return cloud.BusiestNode(ctx, a.kube, names)
}

var _ cloud.CapacityProver = (*PoolBlueGreen)(nil)

// ProveCapacity implements cloud.CapacityProver: green is made with blue's
// settings (greenPool), on blue's subnets, so its nodes take what blue's
// would.
func (b *PoolBlueGreen) ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error) {
	return b.blue.ProveCapacity(ctx, added)
}
