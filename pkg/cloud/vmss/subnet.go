package vmss

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// actionVNetUsages reads a virtual network's usages: "Get the IP usage
// for each subnet of the virtual network"
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/networking#microsoftnetwork).
const actionVNetUsages = "Microsoft.Network/virtualNetworks/usages/read"

// subnetQuotas are the addresses the added instances take of the scale
// set's subnets, from its model's network profile: each IP configuration
// of an instance's network interfaces takes one address of its subnet
// (what a CNI that pre-allocates pods' addresses as secondary
// configurations asks for too). Each subnet is held against the free
// addresses of its virtual network's usages.
func (c *clients) subnetQuotas(ctx context.Context, m *armcompute.VirtualMachineScaleSet, added int32) ([]plan.QuotaUse, []string) {
	perVM, order := configsBySubnet(m)
	if len(order) == 0 {
		return nil, []string{fmt.Sprintf("scale set %q names no subnet in its model's network profile: the addresses of its added instances are not proven", deref(m.Name))}
	}
	var out []plan.QuotaUse
	var unprovable []string
	for _, id := range order {
		s, ok := azarm.ParseSubnet(id)
		if !ok {
			unprovable = append(unprovable, fmt.Sprintf("scale set %q names subnet %q, not a subnet's resource ID", deref(m.Name), id))
			continue
		}
		used, size, err := armEndpoint.ReadSubnet(ctx, c.pipeline, s)
		if err != nil {
			unprovable = append(unprovable, oneLine(err))
			continue
		}
		out = append(out, azarm.SubnetQuota(s, used, size, perVM[strings.ToLower(id)], added, "IP configurations"))
	}
	return out, unprovable
}

// configsBySubnet counts the IP configurations of the model's network
// interfaces per subnet (by lower-case ID), and the subnets in order.
func configsBySubnet(m *armcompute.VirtualMachineScaleSet) (map[string]int64, []string) {
	per := map[string]int64{}
	var order []string
	p := m.Properties
	if p == nil || p.VirtualMachineProfile == nil || p.VirtualMachineProfile.NetworkProfile == nil {
		return per, nil
	}
	for _, nic := range p.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations {
		if nic == nil || nic.Properties == nil {
			continue
		}
		for _, ip := range nic.Properties.IPConfigurations {
			if ip == nil || ip.Properties == nil || ip.Properties.Subnet == nil || deref(ip.Properties.Subnet.ID) == "" {
				continue
			}
			id := deref(ip.Properties.Subnet.ID)
			if !slices.ContainsFunc(order, func(o string) bool { return strings.EqualFold(o, id) }) {
				order = append(order, id)
			}
			per[strings.ToLower(id)]++
		}
	}
	return per, order
}
