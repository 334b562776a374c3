package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// A group with a mixed instances policy launches any of its overrides'
// instance types; which one Auto Scaling picks (its allocation strategy,
// EC2's capacity at the moment) the plan cannot tell, so it proves the
// worst case and says so.

// proveMixedVCPUs holds each vCPU quota the overrides' types count
// against to every added node launched as that quota's largest type.
func proveMixedVCPUs(ctx context.Context, in capacityInput) ([]plan.QuotaUse, []string) {
	types := map[string]int64{}
	for _, t := range in.g.overrides {
		types[t] = 0
	}
	vcpus, err := instanceTypeVCPUs(ctx, in.p, types)
	if err != nil {
		return nil, []string{oneLine(err.Error())}
	}
	largest := map[vcpuBucket]string{}
	var unprovable []string
	for _, t := range slices.Sorted(maps.Keys(types)) {
		b, ok := bucketOf(t)
		if !ok {
			unprovable = append(unprovable, fmt.Sprintf("instance type %q of the mixed instances policy is of a family without a known vCPU quota", t))
			continue
		}
		if cur, ok := largest[b]; !ok || vcpus[t] > vcpus[cur] {
			largest[b] = t
		}
	}
	var out []plan.QuotaUse
	for _, b := range slices.SortedFunc(maps.Keys(largest), func(a, b vcpuBucket) int { return cmp.Compare(a.onDemand, b.onDemand) }) {
		q, err := vcpuQuota(ctx, in.p, in.g, b, in.spot, largest[b], in.added)
		if err != nil {
			unprovable = append(unprovable, oneLine(err.Error()))
			continue
		}
		q.Name += fmt.Sprintf(", as if every added node were a %s, the largest it counts of the mixed instances policy's %s", largest[b], strings.Join(in.g.overrides, ", "))
		out = append(out, q)
	}
	return out, unprovable
}

// proveMixedOffered finds the group's zones where EC2 offers none of the
// overrides' types: Auto Scaling launches a type a zone does not offer
// in no zone, but one of the others where it can.
func proveMixedOffered(ctx context.Context, in capacityInput) ([]plan.QuotaUse, []string) {
	if len(in.g.Zones) == 0 {
		return nil, nil
	}
	offered := map[string]bool{}
	for _, t := range in.g.overrides {
		zones, err := offeredZones(ctx, in.p, t, in.g.Zones)
		if err != nil {
			return nil, []string{oneLine(err.Error())}
		}
		maps.Copy(offered, zones)
	}
	var out []plan.QuotaUse
	for _, z := range in.g.Zones {
		if offered[z] {
			continue
		}
		out = append(out, plan.QuotaUse{
			Scope: strings.Join([]string{"aws", accountOf(in.g.ARN), in.p.region, "mixed", z}, "/"),
			Name: fmt.Sprintf("any of %s in zone %s, where EC2 offers none of them (take the zone's subnet out of Auto Scaling group %q or add a type the zone offers to its mixed instances policy)",
				strings.Join(in.g.overrides, ", "), z, in.g.Name),
			Unit: "instance", Needed: int64(in.added),
		})
	}
	return out, nil
}
