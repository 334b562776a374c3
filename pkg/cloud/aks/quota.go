package aks

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Microsoft.Compute API versions of the two reads of the quota check:
// Usage - List and Resource Skus - List
// (https://learn.microsoft.com/en-us/rest/api/compute/usage/list,
// https://learn.microsoft.com/en-us/rest/api/compute/resource-skus/list).
const (
	usagesAPIVersion = "2025-04-01"
	skusAPIVersion   = "2021-07-01"
)

// Usage is one quota of Usage - List: its name (name.value: "cores",
// "lowPriorityCores", a VM family's "standardDSv5Family"), what is used
// and the limit, in vCPUs.
type Usage struct {
	Name struct {
		Value          string `json:"value"`
		LocalizedValue string `json:"localizedValue"`
	} `json:"name"`
	CurrentValue int64  `json:"currentValue"`
	Limit        int64  `json:"limit"`
	Unit         string `json:"unit"`
}

// UsageList is Usage - List's answer.
type UsageList struct {
	Value    []Usage `json:"value"`
	NextLink string  `json:"nextLink,omitempty"`
}

// SKU is one resource SKU of Resource Skus - List: a VM size's name,
// family (the usage name of its family's quota) and capabilities
// ("vCPUs").
type SKU struct {
	ResourceType string       `json:"resourceType"`
	Name         string       `json:"name"`
	Family       string       `json:"family"`
	Locations    []string     `json:"locations"`
	Capabilities []Capability `json:"capabilities"`
}

// Capability is one of a resource SKU's capabilities.
type Capability struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SKUList is Resource Skus - List's answer.
type SKUList struct {
	Value    []SKU  `json:"value"`
	NextLink string `json:"nextLink,omitempty"`
}

// quota is what the surge nodes draw on: the pool's VM size, its vCPUs,
// and the quotas (Usage) they count against. Azure counts a VM's vCPUs
// against the region's total and its family's for regular VMs, and
// against the region's Spot total for Spot VMs
// (https://learn.microsoft.com/en-us/azure/virtual-machines/quotas).
type quota struct {
	size   string
	vcpus  int64
	counts []Usage
}

// readQuota reads the quotas the pool's surge nodes count against, from
// the VM size's resource SKU and the location's usages.
func (a *AgentPool) readQuota(ctx context.Context) (*quota, error) {
	p := a.pool.Properties
	size := str(p.VMSize)
	if size == "" {
		return nil, fmt.Errorf("the pool reports no vmSize")
	}
	sub := strings.TrimSuffix(endpoint(), "/") + "/subscriptions/" + url.PathEscape(a.id.subscription) + "/providers/Microsoft.Compute"
	sku, err := a.findSKU(ctx, sub+"/skus?$filter="+url.QueryEscape(fmt.Sprintf("location eq '%s'", a.location)), size)
	if err != nil {
		return nil, err
	}
	want := []string{"cores", sku.Family}
	if p.ScaleSetPriority != nil && *p.ScaleSetPriority == armcs.ScaleSetPrioritySpot {
		want = []string{"lowPriorityCores"}
	}
	q := &quota{size: size}
	for _, c := range sku.Capabilities {
		if c.Name == "vCPUs" {
			q.vcpus, _ = strconv.ParseInt(c.Value, 10, 64)
		}
	}
	if q.vcpus <= 0 {
		return nil, fmt.Errorf("resource SKU %s names no vCPUs", size)
	}
	next := sub + "/locations/" + url.PathEscape(a.location) + "/usages"
	for next != "" {
		var page UsageList
		if err := a.c.getJSON(ctx, next, usagesAPIVersion, &page); err != nil {
			return nil, wrap(err, "read the Compute quotas of %s", a.location)
		}
		for _, u := range page.Value {
			for _, w := range want {
				if strings.EqualFold(u.Name.Value, w) {
					q.counts = append(q.counts, u)
				}
			}
		}
		next = page.NextLink
	}
	if len(q.counts) < len(want) {
		return nil, fmt.Errorf("the Compute usages of %s name no quota %s", a.location, strings.Join(want, " or "))
	}
	return q, nil
}

// findSKU finds the virtual machine SKU named size.
func (a *AgentPool) findSKU(ctx context.Context, u, size string) (SKU, error) {
	for u != "" {
		var page SKUList
		if err := a.c.getJSON(ctx, u, skusAPIVersion, &page); err != nil {
			return SKU{}, wrap(err, "read the resource SKUs of %s", a.location)
		}
		for _, s := range page.Value {
			if strings.EqualFold(s.ResourceType, "virtualMachines") && strings.EqualFold(s.Name, size) {
				return s, nil
			}
		}
		u = page.NextLink
	}
	return SKU{}, fmt.Errorf("no virtual machine SKU %s in %s", size, a.location)
}

// uses are what added new nodes take of every quota, for the plan's
// capacity check: a surge past one is an insufficient-quota blocker
// naming the --max-surge that fits, as AKS's upgrade would otherwise fail
// only when it adds them.
func (q *quota) uses(subscription, location string, added int32) []plan.QuotaUse {
	out := make([]plan.QuotaUse, 0, len(q.counts))
	for _, u := range q.counts {
		out = append(out, plan.QuotaUse{
			Scope: "azure/" + subscription + "/" + location + "/" + u.Name.Value, Name: strings.Trim(nameOf(u), `"`), Unit: "vCPU",
			Needed: int64(added) * q.vcpus, Free: max(u.Limit-u.CurrentValue, 0), Limit: u.Limit, PerNode: q.vcpus,
		})
	}
	return out
}

// fit says what n new nodes (what) need of every quota, and how many of
// them fit.
func (q *quota) fit(n int, what string) (line string, fits int64) {
	fits = int64(n)
	var parts []string
	for _, u := range q.counts {
		free := max(u.Limit-u.CurrentValue, 0)
		fits = min(fits, free/q.vcpus)
		parts = append(parts, fmt.Sprintf("%s %d of %d free", nameOf(u), free, u.Limit))
	}
	return fmt.Sprintf("%d %s of %s need %d vCPUs; %s", n, what, q.size, int64(n)*q.vcpus, strings.Join(parts, ", ")), fits
}

func nameOf(u Usage) string {
	if u.Name.LocalizedValue != "" {
		return fmt.Sprintf("%q", u.Name.LocalizedValue)
	}
	return u.Name.Value
}
