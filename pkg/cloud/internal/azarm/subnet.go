package azarm

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// NetworkAPIVersion is the API version of Virtual Networks - List Usage
// (https://learn.microsoft.com/en-us/rest/api/virtualnetwork/virtual-networks/list-usage).
const NetworkAPIVersion = "2024-05-01"

// SubnetUsage is one entry of Virtual Networks - List Usage
// (VirtualNetworkUsage): id the subnet's resource ID, currentValue "the
// number of IPs used from the subnet", limit "the size of the subnet"
// (Azure's 5 reserved addresses left out: a /24 is 251), both numbers
// (double in the model); a currentValue of -1 says Azure does not count
// the subnet (the API's own GatewaySubnet example).
type SubnetUsage struct {
	ID           string  `json:"id"`
	CurrentValue float64 `json:"currentValue"`
	Limit        float64 `json:"limit"`
	Unit         string  `json:"unit,omitempty"`
	Name         struct {
		Value          string `json:"value"`
		LocalizedValue string `json:"localizedValue"`
	} `json:"name"`
}

// SubnetUsageList is Virtual Networks - List Usage's answer
// (VirtualNetworkListUsageResult), paged by nextLink.
type SubnetUsageList struct {
	Value    []SubnetUsage `json:"value"`
	NextLink string        `json:"nextLink,omitempty"`
}

// Subnet is a subnet's resource ID split into its parts
// (/subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks/V/subnets/N).
type Subnet struct {
	ID, Subscription, Group, VNet, Name string
}

// ParseSubnet splits a subnet's resource ID; false where id is none.
func ParseSubnet(id string) (Subnet, bool) {
	p := strings.Split(strings.Trim(id, "/"), "/")
	if len(p) != 10 || !strings.EqualFold(p[0], "subscriptions") || !strings.EqualFold(p[2], "resourceGroups") ||
		!strings.EqualFold(p[5], "Microsoft.Network") || !strings.EqualFold(p[6], "virtualNetworks") || !strings.EqualFold(p[8], "subnets") {
		return Subnet{}, false
	}
	return Subnet{ID: id, Subscription: p[1], Group: p[3], VNet: p[7], Name: p[9]}, true
}

// String names the subnet in messages.
func (s Subnet) String() string {
	return fmt.Sprintf("subnet %q of virtual network %q (resource group %s)", s.Name, s.VNet, s.Group)
}

// ReadSubnet reads what is used of the subnet and its size from its
// virtual network's usages, every page.
func (e Endpoint) ReadSubnet(ctx context.Context, pl Pipeline, s Subnet) (used, size int64, err error) {
	next := fmt.Sprintf("%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s/usages",
		strings.TrimSuffix(e.URL(), "/"), url.PathEscape(s.Subscription), url.PathEscape(s.Group), url.PathEscape(s.VNet))
	for next != "" {
		var page SubnetUsageList
		if err := GetJSON(ctx, pl, next, NetworkAPIVersion, &page); err != nil {
			return 0, 0, e.Wrap(err, "read the usages of virtual network %q", s.VNet)
		}
		for _, u := range page.Value {
			if !strings.EqualFold(strings.TrimSuffix(u.ID, "/"), strings.TrimSuffix(s.ID, "/")) {
				continue
			}
			if u.CurrentValue < 0 || u.Limit <= 0 {
				return 0, 0, fmt.Errorf("virtual network %q does not count the addresses of %s (currentValue %v, limit %v)", s.VNet, s, u.CurrentValue, u.Limit)
			}
			return int64(math.Round(u.CurrentValue)), int64(math.Round(u.Limit)), nil
		}
		next = page.NextLink
	}
	return 0, 0, fmt.Errorf("the usages of virtual network %q name no %s", s.VNet, s)
}

// SubnetQuota is what added nodes taking perNode addresses each need of
// the subnet, against what it has free; what says whose addresses they
// are ("nodes", "pods").
func SubnetQuota(s Subnet, used, size, perNode int64, added int32, what string) plan.QuotaUse {
	return plan.QuotaUse{
		Scope: strings.ToLower(strings.Join([]string{"azure", s.Subscription, s.Group, s.VNet, s.Name, "ips"}, "/")),
		Name:  fmt.Sprintf("%s (%d IPs per added node for its %s)", s, perNode, what),
		Unit:  "IP", Needed: int64(added) * perNode, Free: size - used, Limit: size, PerNode: perNode,
	}
}
