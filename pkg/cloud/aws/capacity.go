package aws

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.CapacityProver = (*NodeGroup)(nil)

// vcpuBucket is one of EC2's vCPU quotas of running instances: the
// instance families it counts, by the letters that begin an instance
// type's name, and its Service Quotas codes On-Demand and Spot. The table
// is "On-Demand Instance quotas" and "Spot Instance quotas" of the Amazon
// EC2 User Guide
// (https://docs.aws.amazon.com/ec2/latest/userguide/ec2-on-demand-instances.html#ec2-on-demand-instances-limits,
// https://docs.aws.amazon.com/ec2/latest/userguide/using-spot-limits.html).
type vcpuBucket struct {
	name           string
	onDemand, spot string
}

var (
	bucketStandard = vcpuBucket{"Standard (A, C, D, H, I, M, R, T, Z)", "L-1216C47A", "L-34B43A08"}
	bucketF        = vcpuBucket{"F", "L-74FC7D96", "L-88CF9481"}
	bucketG        = vcpuBucket{"G and VT", "L-DB2E81BA", "L-3819A6DF"}
	bucketInf      = vcpuBucket{"Inf", "L-1945791B", "L-B5D1601B"}
	bucketP        = vcpuBucket{"P", "L-417A185B", "L-7212CCBC"}
	bucketX        = vcpuBucket{"X", "L-7295265B", "L-E3A00192"}
	bucketTrn      = vcpuBucket{"Trn", "L-2C3B7624", "L-6B0D517C"}
	bucketDL       = vcpuBucket{"DL", "L-6E869C2A", "L-85EED4F7"}
)

// familyBuckets maps an instance type's leading letters to its bucket.
// A family missing here has no bucket the run knows: a warning, never a
// guess.
var familyBuckets = map[string]vcpuBucket{
	"a": bucketStandard, "c": bucketStandard, "d": bucketStandard, "h": bucketStandard,
	"i": bucketStandard, "im": bucketStandard, "is": bucketStandard, "m": bucketStandard,
	"r": bucketStandard, "t": bucketStandard, "z": bucketStandard,
	"f": bucketF, "g": bucketG, "vt": bucketG, "inf": bucketInf, "p": bucketP,
	"x": bucketX, "trn": bucketTrn, "dl": bucketDL,
}

// bucketOf is the vCPU quota an instance type counts against.
func bucketOf(instanceType string) (vcpuBucket, bool) {
	family, _, _ := strings.Cut(instanceType, ".")
	if i := strings.IndexFunc(family, func(r rune) bool { return r < 'a' || r > 'z' }); i >= 0 {
		family = family[:i] // m7g → m, inf2 → inf, u-6tb1 → u
	}
	b, ok := familyBuckets[family]
	return b, ok
}

// ProveCapacity implements cloud.CapacityProver: the vCPU quota of the
// bucket the group's instance type counts against (Service Quotas
// GetServiceQuota), less the vCPUs of the region's running instances in
// that bucket (DescribeInstances, DescribeInstanceTypes); the zones of the
// group that do not offer the type (capacity_offer.go); the addresses the
// added nodes and their pods take of the group's subnets (capacity_ips.go);
// the existing capacity reservations they may launch in
// (capacity_reserved.go).
func (n *NodeGroup) ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return nil, err
	}
	typ, spot, err := groupInstanceType(ctx, n.API, g)
	if err != nil || typ == "" {
		return &plan.CapacityPlan{Unprovable: []string{unprovableType(g.Name, err)}}, nil
	}
	if t := n.templateType(ctx, g); t != "" {
		typ = t
	}
	c := &plan.CapacityPlan{InstanceType: typ}
	in := capacityInput{p: n.API, kube: n.Client, g: g, typ: typ, spot: spot, added: added}
	proofs := []func(context.Context, capacityInput) ([]plan.QuotaUse, []string){proveVCPUs, proveOffered, proveSubnetIPs, proveENIConfigSubnets}
	if len(g.overrides) > 0 {
		proofs[0], proofs[1] = proveMixedVCPUs, proveMixedOffered
	}
	for _, prove := range proofs {
		quotas, unprovable := prove(ctx, in)
		c.Quotas = append(c.Quotas, quotas...)
		c.Unprovable = append(c.Unprovable, unprovable...)
	}
	var unprovable []string
	c.Reserved, unprovable = proveReserved(ctx, in)
	c.Unprovable = append(c.Unprovable, unprovable...)
	return c, nil
}

// capacityInput is what each of ProveCapacity's proofs reads.
type capacityInput struct {
	p     *Client
	kube  kubernetes.Interface // nil: the cluster's settings (the VPC CNI's) are not read
	g     *AutoScalingGroup
	typ   string
	spot  bool
	added int32
}

// proveVCPUs is the vCPU quota of the type's bucket; an unknown family is
// not guessed.
func proveVCPUs(ctx context.Context, in capacityInput) ([]plan.QuotaUse, []string) {
	b, ok := bucketOf(in.typ)
	if !ok {
		return nil, []string{fmt.Sprintf("instance type %q is of a family without a known vCPU quota", in.typ)}
	}
	q, err := vcpuQuota(ctx, in.p, in.g, b, in.spot, in.typ, in.added)
	if err != nil {
		return nil, []string{oneLine(err.Error())}
	}
	return []plan.QuotaUse{q}, nil
}

// templateType is the instance type the target launch template version
// names, which the added nodes launch as; "" where it names none (a mixed
// instances policy's overrides choose) or cannot be read, and the type of
// the group's instances stands.
func (n *NodeGroup) templateType(ctx context.Context, g *AutoScalingGroup) string {
	version := cmp.Or(n.Version, g.LaunchTemplateVersion)
	if g.LaunchTemplateID == "" || version == "" {
		return ""
	}
	res := resolver{p: n.API, cache: map[[2]string]ec2types.LaunchTemplateVersion{}}
	v, err := res.version(ctx, g.LaunchTemplateID, "", version)
	if err != nil || v.LaunchTemplateData == nil {
		return ""
	}
	return string(v.LaunchTemplateData.InstanceType)
}

func unprovableType(group string, err error) string {
	if err != nil {
		return fmt.Sprintf("cannot read the instance type of Auto Scaling group %q: %s", group, oneLine(err.Error()))
	}
	return fmt.Sprintf("Auto Scaling group %q has no instance to read its instance type from", group)
}

// groupInstanceType is the instance type of the group's first instance
// EC2 describes, and whether it is a Spot Instance.
func groupInstanceType(ctx context.Context, p *Client, g *AutoScalingGroup) (string, bool, error) {
	ids := make([]string, 0, len(g.Instances))
	for _, in := range g.Instances {
		ids = append(ids, in.ID)
	}
	described, err := p.describeInstances(ctx, ids)
	if err != nil {
		return "", false, err
	}
	for _, id := range ids {
		if in, ok := described[id]; ok {
			return string(in.InstanceType), in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot, nil
		}
	}
	return "", false, nil
}

// vcpuQuota is the bucket's quota: its value, and what the region's
// running and pending instances of the bucket use of it.
func vcpuQuota(ctx context.Context, p *Client, g *AutoScalingGroup, b vcpuBucket, spot bool, typ string, added int32) (plan.QuotaUse, error) {
	code, market := b.onDemand, "On-Demand"
	if spot {
		code, market = b.spot, "Spot"
	}
	out, err := servicequotas.NewFromConfig(p.cfg).GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{
		ServiceCode: sdkaws.String("ec2"), QuotaCode: sdkaws.String(code)})
	if err != nil {
		return plan.QuotaUse{}, wrap(err, "read the EC2 vCPU quota %s", code)
	}
	if out.Quota == nil || out.Quota.Value == nil {
		return plan.QuotaUse{}, fmt.Errorf("service Quotas gave no value of quota %s", code)
	}
	used, perNode, err := vcpusInUse(ctx, p, b, spot, typ)
	if err != nil {
		return plan.QuotaUse{}, err
	}
	limit := int64(*out.Quota.Value)
	return plan.QuotaUse{
		Scope: strings.Join([]string{"aws", accountOf(g.ARN), p.region, code}, "/"),
		Name:  fmt.Sprintf("Running %s %s instances (%s)", market, b.name, code),
		Unit:  "vCPU", Needed: int64(added) * perNode, Free: limit - used, Limit: limit, PerNode: perNode,
	}, nil
}

// accountOf is the account of an ARN (arn:aws:autoscaling:region:account:...).
func accountOf(arn string) string {
	if parts := strings.Split(arn, ":"); len(parts) > 4 {
		return parts[4]
	}
	return ""
}

// vcpusInUse sums the vCPUs of the region's pending and running instances
// of the bucket and market (what EC2 counts against the quota), and gives
// the vCPUs of typ.
func vcpusInUse(ctx context.Context, p *Client, b vcpuBucket, spot bool, typ string) (used, perType int64, err error) {
	counts := map[string]int64{typ: 0}
	pg := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: sdkaws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return 0, 0, wrap(err, "describe the region's running instances")
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				ib, ok := bucketOf(string(in.InstanceType))
				if ok && ib == b && (in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot) == spot {
					counts[string(in.InstanceType)]++
				}
			}
		}
	}
	vcpus, err := instanceTypeVCPUs(ctx, p, counts)
	if err != nil {
		return 0, 0, err
	}
	for t, n := range counts {
		used += n * vcpus[t]
	}
	return used, vcpus[typ], nil
}

// instanceTypeVCPUs are the default vCPUs of each type
// (DescribeInstanceTypes, at most 100 types a call).
func instanceTypeVCPUs(ctx context.Context, p *Client, types map[string]int64) (map[string]int64, error) {
	names := make([]ec2types.InstanceType, 0, len(types))
	for t := range types {
		names = append(names, ec2types.InstanceType(t))
	}
	out := map[string]int64{}
	for len(names) > 0 {
		chunk := names[:min(len(names), 100)]
		names = names[len(chunk):]
		res, err := p.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: chunk})
		if err != nil {
			return nil, wrap(err, "describe instance types")
		}
		for _, it := range res.InstanceTypes {
			if it.VCpuInfo != nil && it.VCpuInfo.DefaultVCpus != nil {
				out[string(it.InstanceType)] = int64(*it.VCpuInfo.DefaultVCpus)
			}
		}
	}
	return out, nil
}
