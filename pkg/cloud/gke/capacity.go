package gke

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.CapacityProver = (*NodePool)(nil)

// ProveCapacity implements cloud.CapacityProver: the region's Compute
// quotas the surge nodes count against (gce.RegionQuotas, through the
// provider's Compute client), and the room of the pool's pod range (see
// podRoom). GKE asks for neither before it surges: short of quota it
// lowers its parallelism without a word, short of pod IPs its surge nodes
// fail with IP_SPACE_EXHAUSTED.
func (n *NodePool) ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error) {
	cfg := n.pool.Config
	var c *plan.CapacityPlan
	if cfg == nil || cfg.MachineType == "" || len(n.pool.Locations) == 0 {
		c = &plan.CapacityPlan{Unprovable: []string{fmt.Sprintf("node pool %q reports no machine type or zone", n.name)}}
	} else {
		c = gce.RegionQuotas(ctx, n.c.compute, gce.Launch{
			Project: n.project, Zones: n.pool.Locations, MachineType: cfg.MachineType, Spot: cfg.Spot || cfg.Preemptible,
		}, added)
	}
	cidr, err := podRange(ctx, n.c.gke, n.clusterPath(), n.cluster, n.pool)
	if err != nil {
		c.Unprovable = append(c.Unprovable, oneLine(err.Error()))
		return c, nil
	}
	q, err := podRoom(n.project, n.location, n.pool, cidr, added)
	if err != nil {
		c.Unprovable = append(c.Unprovable, err.Error())
		return c, nil
	}
	c.Quotas = append(c.Quotas, q)
	return c, nil
}

// podRange is the pool's pod IPv4 range in CIDR notation: its own
// (networkConfig.podIpv4CidrBlock), else the cluster's default
// (ipAllocationPolicy.clusterIpv4CidrBlock), which a pool without a range
// of its own uses (container-api.json, NodeNetworkConfig.createPodRange).
func podRange(ctx context.Context, svc *container.Service, path, cluster string, p *container.NodePool) (string, error) {
	if nc := p.NetworkConfig; nc != nil && strings.Contains(nc.PodIpv4CidrBlock, ".") {
		return nc.PodIpv4CidrBlock, nil
	}
	cl, err := svc.Projects.Locations.Clusters.Get(path).Context(ctx).Do()
	if err != nil {
		return "", wrap(err, "get GKE cluster %q for its pod range", cluster)
	}
	if p := cl.IpAllocationPolicy; p != nil && p.ClusterIpv4CidrBlock != "" {
		return p.ClusterIpv4CidrBlock, nil
	}
	return "", fmt.Errorf("GKE cluster %q reports no pod range (ipAllocationPolicy.clusterIpv4CidrBlock)", cluster)
}

// podRoom is what the surge nodes need of the pool's pod range: each node
// takes a block of the pool's podIpv4CidrSize ("the pod CIDR block size
// per node"), and the range has free what its
// networkConfig.podIpv4RangeUtilization (Usage / the range's IPs) leaves
// (container-api.json, NodePool and NodeNetworkConfig). Free IPs are not
// all whole aligned blocks; the finding counts them as if they were.
func podRoom(project, location string, p *container.NodePool, cidr string, added int32) (plan.QuotaUse, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() {
		return plan.QuotaUse{}, fmt.Errorf("node pool %q has pod range %q, not an IPv4 CIDR", p.Name, cidr)
	}
	if p.PodIpv4CidrSize <= 0 || p.PodIpv4CidrSize > 32 || p.NetworkConfig == nil {
		return plan.QuotaUse{}, fmt.Errorf("node pool %q reports no pod CIDR block size per node (podIpv4CidrSize) or range utilization", p.Name)
	}
	total := int64(1) << (32 - prefix.Bits())
	per := int64(1) << (32 - p.PodIpv4CidrSize)
	free := int64(float64(total) * (1 - p.NetworkConfig.PodIpv4RangeUtilization))
	return plan.QuotaUse{
		Scope: strings.Join([]string{"gcp", project, location, "pods-" + prefix.Masked().String()}, "/"),
		Name:  fmt.Sprintf("pod range %s of node pool %s (a /%d per node)", prefix.Masked(), p.Name, p.PodIpv4CidrSize),
		Unit:  "IP", Needed: int64(added) * per, Free: free, Limit: total, PerNode: per,
	}, nil
}
