package azurefake

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// vmSize is a VM size the fake knows: its family (the name of its
// family's vCPU quota) and vCPUs, from the size pages
// (https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/general-purpose/dsv5-series,
// .../dsv3-series).
type vmSize struct {
	name, family string
	vcpus        int64
}

var vmSizes = []vmSize{
	{"Standard_D2s_v5", "standardDSv5Family", 2},
	{"Standard_D4s_v5", "standardDSv5Family", 4},
	{"Standard_D8s_v5", "standardDSv5Family", 8},
	{"Standard_D2s_v3", "standardDSv3Family", 2},
	{"Standard_D4s_v3", "standardDSv3Family", 4},
}

// The vCPU quotas' usage names and what Azure calls them
// (https://learn.microsoft.com/en-us/azure/virtual-machines/quotas:
// regional vCPUs, per-family vCPUs, Spot vCPUs).
const (
	usageCores     = "cores"
	usageSpotCores = "lowPriorityCores"
)

// defaultLimit is the fake's vCPU limit of a quota no test set: the
// fake's own number (Azure's depend on the subscription's offer).
const defaultLimit = 100

// SetQuota sets the limit of a vCPU quota by its usage name ("cores",
// "lowPriorityCores", "standardDSv5Family").
func (s *Server) SetQuota(usage string, limit int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acct.limits == nil {
		s.acct.limits = map[string]int64{}
	}
	s.acct.limits[strings.ToLower(usage)] = limit
}

func (s *Server) limitLocked(usage string) int64 {
	if l, ok := s.acct.limits[strings.ToLower(usage)]; ok {
		return l
	}
	return defaultLimit
}

// listSKUs answers Resource Skus - List with the fake's VM sizes in its
// location; the fake does not filter by $filter's location, since it
// has one. The answer is the published model's (armcompute
// ResourceSKUsResult), not a provider's type.
func (s *Server) listSKUs(q *request) {
	var out armcompute.ResourceSKUsResult
	for _, v := range vmSizes {
		out.Value = append(out.Value, &armcompute.ResourceSKU{ResourceType: to.Ptr("virtualMachines"), Name: to.Ptr(v.name), Family: to.Ptr(v.family),
			Locations:    []*string{to.Ptr(s.opts.Location)},
			Capabilities: []*armcompute.ResourceSKUCapabilities{{Name: to.Ptr("vCPUs"), Value: to.Ptr(strconv.FormatInt(v.vcpus, 10))}}})
	}
	writeJSON(q.w, http.StatusOK, out)
}

// listUsages answers Usage - List: the vCPUs of every machine of the
// fake's pools (surge machines too) and scale sets against the limits.
func (s *Server) listUsages(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	used := s.usedLocked()
	names := map[string]string{usageCores: "Total Regional vCPUs", usageSpotCores: "Total Regional Low-priority vCPUs"}
	for _, v := range vmSizes {
		names[v.family] = familyName(v.family)
	}
	var out armcompute.ListUsagesResult // the published model's (armcompute Usage)
	for name, localized := range names {
		out.Value = append(out.Value, &armcompute.Usage{CurrentValue: to.Ptr(int32(used[name])), Limit: to.Ptr(s.limitLocked(name)),
			Unit: to.Ptr("Count"), Name: &armcompute.UsageName{Value: to.Ptr(name), LocalizedValue: to.Ptr(localized)}})
	}
	writeJSON(q.w, http.StatusOK, out)
}

// familyName is a family quota's localized name.
func familyName(family string) string {
	return "Standard " + strings.TrimSuffix(strings.TrimPrefix(family, "standard"), "Family") + " Family vCPUs"
}

// quotaRefusalLocked is Compute's refusal of add more machines of size
// past the regional or the family's vCPU quota: "Code=OperationNotAllowed
// Message=Operation could not be completed as it results in exceeding
// approved standardDSv3Family Cores quota" (a 409,
// https://learn.microsoft.com/en-us/azure/azure-resource-manager/troubleshooting/error-resource-quota);
// nil when they fit.
func (s *Server) quotaRefusalLocked(size vmSize, add int64) *armError {
	used := s.usedLocked()
	for _, name := range []string{size.family, usageCores} {
		limit, need := s.limitLocked(name), add*size.vcpus
		if name != "" && used[name]+need > limit {
			return errorf(http.StatusConflict, "OperationNotAllowed", "Operation could not be completed as it results in exceeding approved %s quota. Additional details - Deployment Model: Resource Manager, Location: %s, Current Limit: %d, Current Usage: %d, Additional Required: %d, (Minimum) New Limit Required: %d.",
				name, s.opts.Location, limit, used[name], need, used[name]+need)
		}
	}
	return nil
}

// usedLocked are the vCPUs in use by quota name: the pools' machines and
// the scale sets' instances.
func (s *Server) usedLocked() map[string]int64 {
	used := map[string]int64{}
	for _, ss := range s.scaleSetsLocked() {
		size := sizeOf(ss.model.SKU.Name)
		n := int64(len(ss.vms)) * size.vcpus
		used[usageCores] += n
		used[size.family] += n
	}
	for _, c := range s.clusters {
		for _, p := range c.pools {
			size := sizeOf(p.model.Properties.VMSize)
			n := int64(len(p.nodes)) * size.vcpus
			if pr := p.model.Properties.ScaleSetPriority; pr != nil && *pr == armcs.ScaleSetPrioritySpot {
				used[usageSpotCores] += n
				continue
			}
			used[usageCores] += n
			used[size.family] += n
		}
	}
	return used
}

// sizeOf is a VM size the fake knows; an unknown one counts no vCPUs.
func sizeOf(p *string) vmSize {
	name := ""
	if p != nil {
		name = *p
	}
	for _, v := range vmSizes {
		if strings.EqualFold(v.name, name) {
			return v
		}
	}
	return vmSize{name: name}
}
