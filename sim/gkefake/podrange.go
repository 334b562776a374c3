package gkefake

import (
	"math/bits"
	"net/netip"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// GKE's defaults: a cluster's pod range is a /14, a Standard node runs at
// most 110 pods
// (https://cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr).
const (
	defaultPodRange = "10.4.0.0/14"
	defaultMaxPods  = 110
)

// podBlockBits is the prefix length of the pod block each node takes:
// maxPodsPerNode "rounded off to next power of 2 and we then double that
// to get the size of pod CIDR block per node" (container-api.json,
// PodCIDROverprovisionConfig; 110 pods: 256 IPs, a /24).
func podBlockBits(maxPods int64) int64 {
	ips := (uint64(1) << bits.Len64(uint64(maxPods-1))) * 2
	return 32 - int64(bits.TrailingZeros64(ips))
}

// podNetworkLocked fills in the pool's pod networking as nodePools.get
// reports it (container-api.json): maxPodsConstraint.maxPodsPerNode,
// podIpv4CidrSize ("The pod CIDR block size per node in this node pool")
// and networkConfig.podIpv4RangeUtilization ("Usage/[Total number of IPs
// in the secondary range], Usage=numNodes*numZones*podIPsPerNode"), of
// the cluster's range, which every pool of the fake takes its blocks of;
// podIpv4CidrBlock is left out, "only applicable if create_pod_range is
// true".
func (s *Server) podNetworkLocked(p *pool, np *container.NodePool) {
	np.MaxPodsConstraint = &container.MaxPodsConstraint{MaxPodsPerNode: p.maxPods}
	np.PodIpv4CidrSize = podBlockBits(p.maxPods)
	np.NetworkConfig = &container.NodeNetworkConfig{PodRange: "gke-" + p.c.name + "-pods", PodIpv4RangeUtilization: s.podUtilizationLocked(p.c)}
}

// podUtilizationLocked is the share of the cluster's pod range its pools'
// nodes (every instance of their groups, blue and green, until deleted)
// take.
func (s *Server) podUtilizationLocked(c *cluster) float64 {
	prefix, err := netip.ParsePrefix(c.podRange)
	if err != nil {
		return 0
	}
	var used int64
	for _, p := range c.pools {
		per := int64(1) << (32 - podBlockBits(p.maxPods))
		for _, groups := range [][]string{p.groups, p.green} {
			for i := range groups {
				g, _ := s.Compute.Group(groupKey(p, groups, i))
				for _, in := range g.Instances {
					if in.Action != gcefake.ActionDeleting {
						used += per
					}
				}
			}
		}
	}
	return float64(used) / float64(int64(1)<<(32-prefix.Bits()))
}
