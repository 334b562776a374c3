package vmss

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.CapacityProver = (*ScaleSet)(nil)

// Usage names of Compute's regional vCPU quotas. Azure counts a VM's vCPUs
// against the region's total and its family's for regular VMs, and
// against the region's Spot total for Spot VMs
// (https://learn.microsoft.com/en-us/azure/virtual-machines/quotas).
const (
	usageCores     = "cores"
	usageSpotCores = "lowPriorityCores"
)

// ProveCapacity implements cloud.CapacityProver: the vCPU quotas the
// scale set's VM size counts against (Usage - List), its vCPUs and family
// (Resource Skus - List), and the zones of the scale set the size is not
// offered in for the subscription (the SKU's restrictions), each a limit
// with nothing free; the addresses of its subnets (subnetQuotas).
func (s *ScaleSet) ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error) {
	m, err := s.mustGet(ctx, s.name)
	if err != nil {
		return nil, err
	}
	size, location := "", deref(m.Location)
	if m.SKU != nil {
		size = deref(m.SKU.Name)
	}
	if size == "" || location == "" {
		return &plan.CapacityPlan{Unprovable: []string{fmt.Sprintf("scale set %q reports no VM size or location", s.name)}}, nil
	}
	sku, err := s.c.findSKU(ctx, location, size)
	if err != nil {
		return &plan.CapacityPlan{Unprovable: []string{oneLine(err)}}, nil
	}
	vcpus := skuVCPUs(sku)
	if vcpus <= 0 {
		return &plan.CapacityPlan{Unprovable: []string{fmt.Sprintf("resource SKU %s names no vCPUs", size)}}, nil
	}
	want := []string{usageCores, deref(sku.Family)}
	if p := m.Properties; p != nil && p.VirtualMachineProfile != nil && p.VirtualMachineProfile.Priority != nil &&
		*p.VirtualMachineProfile.Priority == armcompute.VirtualMachinePriorityTypesSpot {
		want = []string{usageSpotCores}
	}
	out := &plan.CapacityPlan{}
	usages, err := s.c.usageOf(ctx, location, want)
	if err != nil {
		out.Unprovable = append(out.Unprovable, oneLine(err))
	}
	for _, u := range usages {
		limit := int64(deref(u.Limit))
		out.Quotas = append(out.Quotas, plan.QuotaUse{
			Scope: "azure/" + s.sub + "/" + location + "/" + deref(u.Name.Value), Name: usageName(u), Unit: "vCPU",
			Needed: int64(added) * vcpus, Free: limit - int64(deref(u.CurrentValue)), Limit: limit, PerNode: vcpus,
		})
	}
	out.Quotas = append(out.Quotas, zoneRefusals(s.sub, location, size, m.Zones, sku, added)...)
	ips, unprovable := s.c.subnetQuotas(ctx, m, added)
	out.Quotas, out.Unprovable = append(out.Quotas, ips...), append(out.Unprovable, unprovable...)
	return out, nil
}

// findSKU is the virtual machine SKU named size in location.
func (c *clients) findSKU(ctx context.Context, location, size string) (*armcompute.ResourceSKU, error) {
	pager := c.skus.NewListPager(&armcompute.ResourceSKUsClientListOptions{Filter: to.Ptr(fmt.Sprintf("location eq '%s'", location))})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, wrap(err, "read the resource SKUs of %s", location)
		}
		for _, k := range page.Value {
			if k != nil && strings.EqualFold(deref(k.ResourceType), "virtualMachines") && strings.EqualFold(deref(k.Name), size) {
				return k, nil
			}
		}
	}
	return nil, fmt.Errorf("no virtual machine SKU %s in %s", size, location)
}

// usageOf is Compute's usages of location named in want, all of them or
// an error naming those missing.
func (c *clients) usageOf(ctx context.Context, location string, want []string) ([]*armcompute.Usage, error) {
	var out []*armcompute.Usage
	pager := c.usages.NewListPager(location, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, wrap(err, "read the Compute quotas of %s", location)
		}
		for _, u := range page.Value {
			if u != nil && u.Name != nil && slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, deref(u.Name.Value)) }) {
				out = append(out, u)
			}
		}
	}
	if len(out) < len(want) {
		return out, fmt.Errorf("the Compute usages of %s name no quota %s", location, strings.Join(want, " or "))
	}
	return out, nil
}

// skuVCPUs is the SKU's "vCPUs" capability, 0 without it.
func skuVCPUs(k *armcompute.ResourceSKU) int64 {
	for _, c := range k.Capabilities {
		if c != nil && deref(c.Name) == "vCPUs" {
			n, _ := strconv.ParseInt(deref(c.Value), 10, 64)
			return n
		}
	}
	return 0
}

// zoneRefusals are the zones of the scale set its VM size is restricted
// in for the subscription (a ResourceSKURestrictions of type Zone, or of
// type Location, which covers them all): Compute places none of the
// added instances there, so each is a limit with none free
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/troubleshooting/error-sku-not-available).
func zoneRefusals(sub, location, size string, zones []*string, k *armcompute.ResourceSKU, added int32) []plan.QuotaUse {
	var out []plan.QuotaUse
	for _, z := range zones {
		reason, ok := restricted(k, deref(z))
		if !ok {
			continue
		}
		out = append(out, plan.QuotaUse{
			Scope: "azure/" + sub + "/" + location + "/" + size + "/zone-" + deref(z),
			Name:  fmt.Sprintf("%s in zone %s (%s)", size, deref(z), reason), Unit: "instance", Needed: int64(added),
		})
	}
	return out
}

// restricted says whether the SKU is not offered in zone, and why.
func restricted(k *armcompute.ResourceSKU, zone string) (string, bool) {
	for _, r := range k.Restrictions {
		if r == nil || r.Type == nil {
			continue
		}
		reason := "restricted"
		if r.ReasonCode != nil {
			reason = string(*r.ReasonCode)
		}
		switch *r.Type {
		case armcompute.ResourceSKURestrictionsTypeLocation:
			return reason, true
		case armcompute.ResourceSKURestrictionsTypeZone:
			if r.RestrictionInfo != nil && slices.ContainsFunc(r.RestrictionInfo.Zones, func(z *string) bool { return deref(z) == zone }) {
				return reason, true
			}
		}
	}
	return "", false
}

func usageName(u *armcompute.Usage) string {
	if u.Name.LocalizedValue != nil && *u.Name.LocalizedValue != "" {
		return *u.Name.LocalizedValue
	}
	return deref(u.Name.Value)
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// deref is *p, the zero value for nil.
func deref[T any](p *T) T { return azarm.Deref(p) }
