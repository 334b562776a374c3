package aws

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// cniSettings are the Amazon VPC CNI's settings that decide how many
// subnet addresses a node takes, read from the aws-node DaemonSet's
// container environment
// (https://github.com/aws/amazon-vpc-cni-k8s#cni-configuration-variables).
type cniSettings struct {
	warmENI, warmIP, minIP int64
	prefix                 bool // ENABLE_PREFIX_DELEGATION: /28 prefixes, not addresses
	custom                 bool // AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: pods on ENIConfig subnets
	// eniLabel is ENI_CONFIG_LABEL_DEF: the node label whose value names
	// a node's ENIConfig under custom networking.
	eniLabel string
}

// readCNI reads the aws-node DaemonSet of kube-system; ok is false where
// there is none (another CNI, or none installed).
func readCNI(ctx context.Context, in capacityInput) (s cniSettings, ok bool, err error) {
	ds, err := in.kube.AppsV1().DaemonSets("kube-system").Get(ctx, "aws-node", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("cannot read DaemonSet %q: %w", "kube-system/aws-node", err)
	}
	s.warmENI = 1 // the VPC CNI's default
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name != "aws-node" {
			continue
		}
		for _, e := range c.Env {
			n, _ := strconv.ParseInt(e.Value, 10, 64)
			switch e.Name {
			case "WARM_ENI_TARGET":
				s.warmENI = n
			case "WARM_IP_TARGET":
				s.warmIP = n
			case "MINIMUM_IP_TARGET":
				s.minIP = n
			case "ENABLE_PREFIX_DELEGATION":
				s.prefix = e.Value == "true"
			case "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG":
				s.custom = e.Value == "true"
			case "ENI_CONFIG_LABEL_DEF":
				s.eniLabel = e.Value
			}
		}
	}
	return s, true, nil
}

// nodeIPs is how many subnet addresses a node of a type with maxENI
// network interfaces of perENI addresses each takes with pods pods on it,
// as the VPC CNI's ipamd allocates them
// (https://github.com/aws/amazon-vpc-cni-k8s/blob/master/docs/eni-and-ip-target.md,
// whose table of examples TestNodeIPs replays). Each ENI takes its own
// primary address and holds perENI-1 secondary ones for pods.
//   - WARM_IP_TARGET or MINIMUM_IP_TARGET set (they override
//     WARM_ENI_TARGET): max(MINIMUM_IP_TARGET, pods + WARM_IP_TARGET)
//     secondary addresses, on as many ENIs as hold them.
//   - Otherwise ipamd keeps WARM_ENI_TARGET whole ENIs of free addresses
//     beside those the pods use, every attached ENI filled:
//     (ceil(pods / (perENI-1)) + WARM_ENI_TARGET) ENIs × perENI.
//
// Either is at most every ENI of the type, filled.
func nodeIPs(s cniSettings, maxENI, perENI, pods int64) int64 {
	slots := perENI - 1
	if maxENI <= 0 || slots <= 0 {
		return 1
	}
	if s.warmIP > 0 || s.minIP > 0 {
		secondary := min(max(s.minIP, pods+s.warmIP), maxENI*slots)
		return max(ceilDiv(secondary, slots), 1) + secondary
	}
	enis := min(max(ceilDiv(pods, slots)+s.warmENI, 1), maxENI)
	return enis * perENI
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// typeNetwork is the type's network interfaces and IPv4 addresses per
// interface (DescribeInstanceTypes, NetworkInfo).
func typeNetwork(ctx context.Context, p *Client, typ string) (maxENI, perENI int64, err error) {
	out, err := p.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{ec2types.InstanceType(typ)}})
	if err != nil {
		return 0, 0, wrap(err, "describe instance type %q", typ)
	}
	for _, it := range out.InstanceTypes {
		if string(it.InstanceType) == typ && it.NetworkInfo != nil {
			return int64(sdkaws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces)), int64(sdkaws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface)), nil
		}
	}
	return 0, 0, fmt.Errorf("cannot read the network interfaces of instance type %q: EC2 describes none", typ)
}

// busiestPods is the most pods with their own address (not on the host's
// network, not finished) on one of the group's nodes: the pods an added
// node takes over from the node it replaces.
func busiestPods(ctx context.Context, in capacityInput) (int64, error) {
	nodes, err := groupNodes(ctx, in)
	if err != nil {
		return 0, err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return cloud.BusiestNode(ctx, in.kube, names)
}

// groupNodes are the nodes of the group's instances.
func groupNodes(ctx context.Context, in capacityInput) ([]corev1.Node, error) {
	ids := map[string]bool{}
	for _, i := range in.g.Instances {
		ids[i.ID] = true
	}
	nodes, err := in.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot list the nodes: %w", err)
	}
	var out []corev1.Node
	for _, n := range nodes.Items {
		if _, id, ok := InstanceIDFromProviderID(n.Spec.ProviderID); ok && ids[id] {
			out = append(out, n)
		}
	}
	return out, nil
}

// subnets describes the group's subnets (DescribeSubnets by ID).
func subnets(ctx context.Context, p *Client, ids []string) ([]ec2types.Subnet, error) {
	var out []ec2types.Subnet
	pg := ec2.NewDescribeSubnetsPaginator(p.ec2, &ec2.DescribeSubnetsInput{SubnetIds: ids})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, wrap(err, "describe subnets %s", quoteList(ids))
		}
		out = append(out, page.Subnets...)
	}
	return out, nil
}

// subnetIDs are the group's subnets (VPCZoneIdentifier).
func subnetIDs(g *AutoScalingGroup) []string {
	var out []string
	for _, s := range strings.Split(g.VPCZoneIdentifier, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// proveSubnetIPs is, for each of the group's subnets, the addresses the
// added nodes and their pods take (nodeIPs each) against what the subnet
// has free (DescribeSubnets, AvailableIpAddressCount). Each subnet is
// asked to hold every added node: the surge strategy adds them one zone at
// a time, and Auto Scaling launches in another zone's subnet when one
// zone cannot.
func proveSubnetIPs(ctx context.Context, in capacityInput) ([]plan.QuotaUse, []string) {
	ids := subnetIDs(in.g)
	if len(ids) == 0 {
		return nil, []string{fmt.Sprintf("Auto Scaling group %q names no subnets (VPCZoneIdentifier): the addresses of the nodes it adds are not proven", in.g.Name)}
	}
	perNode, unprovable := perNodeIPs(ctx, in)
	out, err := subnetRoom(ctx, in, ids, perNode, nil)
	if err != nil {
		return nil, append(unprovable, oneLine(err.Error()))
	}
	return out, unprovable
}

// subnetRoom is, for each subnet, perNode addresses for each added node
// against what it has free (DescribeSubnets, AvailableIpAddressCount),
// named by name where it is given.
func subnetRoom(ctx context.Context, in capacityInput, ids []string, perNode int64, name func(id string) string) ([]plan.QuotaUse, error) {
	described, err := subnets(ctx, in.p, ids)
	if err != nil {
		return nil, err
	}
	out := make([]plan.QuotaUse, 0, len(described))
	for _, s := range described {
		id := sdkaws.ToString(s.SubnetId)
		q := plan.QuotaUse{
			Scope: strings.Join([]string{"aws", accountOf(in.g.ARN), id, "ips"}, "/"),
			Name:  fmt.Sprintf("subnet %s (%s)", id, sdkaws.ToString(s.AvailabilityZone)),
			Unit:  "IP", Needed: int64(in.added) * perNode, Free: int64(sdkaws.ToInt32(s.AvailableIpAddressCount)), PerNode: perNode,
		}
		if name != nil {
			q.Name = name(id) + " (" + sdkaws.ToString(s.AvailabilityZone) + ")"
		}
		out = append(out, q)
	}
	return out, nil
}

// onlyNodes ends what perNodeIPs says when it counts each node's own
// address alone.
const onlyNodes = ": only the nodes' own addresses are counted"

// perNodeIPs is how many addresses one added node takes, and what could
// not be counted: without the VPC CNI's settings, or where its pods' room
// cannot be proven, a node's own (primary) address alone.
func perNodeIPs(ctx context.Context, in capacityInput) (int64, []string) {
	if in.kube == nil {
		return 1, []string{"the cluster's VPC CNI settings were not read" + onlyNodes}
	}
	cni, ok, err := readCNI(ctx, in)
	switch {
	case err != nil:
		return 1, []string{oneLine(err.Error()) + onlyNodes}
	case !ok:
		return 1, []string{"no DaemonSet \"kube-system/aws-node\" (the Amazon VPC CNI) to read how many addresses pods take" + onlyNodes}
	case cni.prefix:
		return 1, []string{"the VPC CNI assigns /28 prefixes (ENABLE_PREFIX_DELEGATION), whose room in the subnets cannot be proven from their free addresses" + onlyNodes}
	case cni.custom:
		return 1, nil // pods take the ENIConfigs' subnets (proveENIConfigSubnets)
	}
	maxENI, perENI, err := typeNetwork(ctx, in.p, in.typ)
	if err != nil {
		return 1, []string{oneLine(err.Error()) + onlyNodes}
	}
	pods, err := busiestPods(ctx, in)
	if err != nil {
		return 1, []string{oneLine(err.Error()) + onlyNodes}
	}
	return nodeIPs(cni, maxENI, perENI, pods), nil
}
