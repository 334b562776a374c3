package azurefake

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// The virtual networks' subnets the fake's pools are on, and
// Microsoft.Network's Virtual Networks - List Usage over them
// (https://learn.microsoft.com/en-us/rest/api/virtualnetwork/virtual-networks/list-usage,
// API 2024-05-01), which says per subnet what is used and its size.

// NetworkAPIVersion is the API version the fake serves
// Microsoft.Network at.
const NetworkAPIVersion = "2024-05-01"

// opVNetUsages is List Usage's Azure action: "Get the IP usage for each
// subnet of the virtual network"
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/permissions/networking#microsoftnetwork).
const opVNetUsages = "Microsoft.Network/virtualNetworks/usages/read"

func init() { apiVersions[opVNetUsages] = NetworkAPIVersion }

// vnetUsage is VirtualNetworkUsage of the published model: the subnet's
// ID, "Indicates number of IPs used from the Subnet" (currentValue),
// "Indicates the size of the subnet" (limit), both doubles, its name
// (value SubnetSpace, localized "Subnet size and usage", as the API's
// example) and unit Count.
type vnetUsage struct {
	CurrentValue float64       `json:"currentValue"`
	ID           string        `json:"id"`
	Limit        float64       `json:"limit"`
	Name         vnetUsageName `json:"name"`
	Unit         string        `json:"unit"`
}

type vnetUsageName struct {
	LocalizedValue string `json:"localizedValue"`
	Value          string `json:"value"`
}

// vnetUsageList is VirtualNetworkListUsageResult: value and nextLink.
type vnetUsageList struct {
	Value    []vnetUsage `json:"value"`
	NextLink string      `json:"nextLink,omitempty"`
}

// SubnetSpec is a subnet of a virtual network of the fake's subscription:
// its prefix length (a /24 has 256 addresses, of which Azure keeps 5) and
// the addresses others hold in it (load balancers, private endpoints,
// other pools).
type SubnetSpec struct {
	ResourceGroup, VNet, Name string
	PrefixBits                int
	OtherUsed                 int64
}

// networkProfiles are the clusters' network profiles.
type networkProfiles = map[*cluster]*armcs.NetworkProfile

// subnet is a subnet the fake knows, by its resource ID in lower case.
type subnet struct {
	id    string
	size  int64
	other int64
}

// azureReserved are the addresses Azure keeps of every subnet ("Azure
// reserves the first four addresses and the last address",
// https://learn.microsoft.com/en-us/azure/virtual-network/virtual-networks-faq#are-there-any-restrictions-on-using-ip-addresses-within-these-subnets).
const azureReserved = 5

// CreateSubnet makes a subnet and returns its resource ID.
func (s *Server) CreateSubnet(spec SubnetSpec) string {
	id := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s/subnets/%s", s.opts.Subscription, spec.ResourceGroup, spec.VNet, spec.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subnets == nil {
		s.subnets = map[string]*subnet{}
	}
	s.subnets[strings.ToLower(id)] = &subnet{id: id, size: int64(1)<<(32-spec.PrefixBits) - azureReserved, other: spec.OtherUsed}
	return id
}

// PoolNetwork is where a pool's nodes and pods take their addresses, and
// the cluster's network plugin ("azure", "kubenet") and its mode
// ("overlay" or "").
type PoolNetwork struct {
	VNetSubnetID, PodSubnetID string
	MaxPods                   int32
	Plugin, PluginMode        string
}

// SetPoolNetwork puts a pool on subnets (CreateSubnet's IDs) and sets its
// cluster's network plugin.
func (s *Server) SetPoolNetwork(group, clusterName, name string, n PoolNetwork) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[key(group, clusterName)]
	if c == nil || c.pools[strings.ToLower(name)] == nil {
		return fmt.Errorf("no agent pool %s of cluster %s/%s", name, group, clusterName)
	}
	props := c.pools[strings.ToLower(name)].model.Properties
	props.VnetSubnetID, props.PodSubnetID, props.MaxPods = nonEmpty(n.VNetSubnetID), nonEmpty(n.PodSubnetID), &n.MaxPods
	if s.networks == nil {
		s.networks = networkProfiles{}
	}
	s.networks[c] = &armcs.NetworkProfile{NetworkPlugin: (*armcs.NetworkPlugin)(nonEmpty(n.Plugin)), NetworkPluginMode: (*armcs.NetworkPluginMode)(nonEmpty(n.PluginMode))}
	return nil
}

func nonEmpty(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// networkProfileLocked is the cluster's networkProfile, nil unset.
func (s *Server) networkProfileLocked(c *cluster) *armcs.NetworkProfile { return s.networks[c] }

// addressesLocked is what a machine of p takes of subnet id, by AKS's
// rules for its network plugin
// (https://learn.microsoft.com/en-us/azure/aks/concepts-network-ip-address-planning):
// its own address on the node subnet, and with Azure CNI without overlay
// or a pod subnet its maxPods pre-allocated there too
// (https://learn.microsoft.com/en-us/azure/aks/configure-azure-cni, "Plan
// IP addressing"); on a pod subnet, the batch of 16 a node asks for when
// it starts (https://learn.microsoft.com/en-us/azure/aks/configure-azure-cni-dynamic-ip-allocation).
func (s *Server) addressesLocked(p *pool, id string) int64 {
	props := p.model.Properties
	var n int64
	if props.VnetSubnetID != nil && strings.EqualFold(*props.VnetSubnetID, id) {
		n++
		np := s.networks[p.c]
		flat := np != nil && np.NetworkPlugin != nil && *np.NetworkPlugin == armcs.NetworkPluginAzure && np.NetworkPluginMode == nil
		if flat && props.PodSubnetID == nil && props.MaxPods != nil {
			n += int64(*props.MaxPods)
		}
	}
	if props.PodSubnetID != nil && strings.EqualFold(*props.PodSubnetID, id) {
		n += 16
	}
	return n
}

// subnetUsedLocked is what is used of a subnet: others' and every machine's of
// the fake's pools (surge machines too) and scale sets.
func (s *Server) subnetUsedLocked(sn *subnet) int64 {
	used := sn.other
	for _, c := range s.clusters {
		for _, p := range c.pools {
			used += int64(len(p.nodes)) * s.addressesLocked(p, sn.id)
		}
	}
	for _, ss := range s.scaleSetsLocked() {
		used += int64(len(ss.vms)) * ipConfigsOn(ss.model, sn.id)
	}
	return used
}

// SetScaleSetSubnet puts the model of a scale set on a subnet
// (CreateSubnet's ID): one network interface with configs IP
// configurations there, each an address of the subnet per instance
// (VirtualMachineScaleSetNetworkProfile of the Compute model).
func (s *Server) SetScaleSetSubnet(group, name, subnetID string, configs int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.scaleSetsLocked()[key(group, name)]
	if ss == nil {
		return fmt.Errorf("no scale set %s/%s", group, name)
	}
	nic := &armcompute.VirtualMachineScaleSetNetworkConfiguration{Name: ptr(name + "-nic"),
		Properties: &armcompute.VirtualMachineScaleSetNetworkConfigurationProperties{Primary: ptr(true)}}
	for i := range configs {
		nic.Properties.IPConfigurations = append(nic.Properties.IPConfigurations, &armcompute.VirtualMachineScaleSetIPConfiguration{
			Name: ptr(fmt.Sprintf("ipconfig%d", i+1)), Properties: &armcompute.VirtualMachineScaleSetIPConfigurationProperties{
				Primary: ptr(i == 0), Subnet: &armcompute.APIEntityReference{ID: ptr(subnetID)}}})
	}
	ss.model.Properties.VirtualMachineProfile.NetworkProfile = &armcompute.VirtualMachineScaleSetNetworkProfile{
		NetworkInterfaceConfigurations: []*armcompute.VirtualMachineScaleSetNetworkConfiguration{nic}}
	return nil
}

// ipConfigsOn counts the IP configurations of a scale set's model on
// subnet id.
func ipConfigsOn(m armcompute.VirtualMachineScaleSet, id string) int64 {
	var n int64
	if m.Properties == nil || m.Properties.VirtualMachineProfile == nil || m.Properties.VirtualMachineProfile.NetworkProfile == nil {
		return 0
	}
	for _, nic := range m.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations {
		if nic == nil || nic.Properties == nil {
			continue
		}
		for _, ip := range nic.Properties.IPConfigurations {
			if ip != nil && ip.Properties != nil && ip.Properties.Subnet != nil && ip.Properties.Subnet.ID != nil && strings.EqualFold(*ip.Properties.Subnet.ID, id) {
				n++
			}
		}
	}
	return n
}

// subnetRefusalLocked is AKS's failure of an upgrade whose added
// machines of p do not fit one of its subnets, in the words users report
// ("Pre-allocated IPs 276 exceeds IPs available 251 in Subnet",
// Azure/AKS#1795, code InsufficientSubnetSize); nil when they fit.
func (s *Server) subnetRefusalLocked(p *pool, add int) *armError {
	for _, sn := range s.subnets {
		per := s.addressesLocked(p, sn.id)
		if per == 0 || add <= 0 {
			continue
		}
		mine := int64(len(p.nodes)) * per
		if need, have := mine+int64(add)*per, sn.size-s.subnetUsedLocked(sn)+mine; need > have {
			return errorf(http.StatusBadRequest, "InsufficientSubnetSize", "Pre-allocated IPs %d exceeds IPs available %d in Subnet %s", need, have, sn.id)
		}
	}
	return nil
}

// networkRoute names List Usage of a virtual network; nil for another
// request.
func (s *Server) networkRoute(q *request) (string, func(*request)) {
	p := q.parts
	if q.r.Method == http.MethodGet && len(p) == 9 && p[2] == "resourcegroups" && p[5] == "microsoft.network" && p[6] == "virtualnetworks" && p[8] == "usages" {
		return opVNetUsages, s.listVNetUsages
	}
	return "", nil
}

// listVNetUsages answers List Usage: the virtual network's subnets, one a
// page (nextLink with a $skiptoken) so that clients follow the pages; a
// virtual network the fake does not know is ARM's 404.
func (s *Server) listVNetUsages(q *request) {
	prefix := strings.ToLower(strings.TrimSuffix(q.r.URL.Path, "/usages")) + "/subnets/"
	s.mu.Lock()
	var out []vnetUsage
	for id, sn := range s.subnets {
		if strings.HasPrefix(id, prefix) {
			out = append(out, vnetUsage{ID: sn.id, CurrentValue: float64(s.subnetUsedLocked(sn)), Limit: float64(sn.size), Unit: "Count",
				Name: vnetUsageName{LocalizedValue: "Subnet size and usage", Value: "SubnetSpace"}})
		}
	}
	s.mu.Unlock()
	if len(out) == 0 {
		writeError(q.w, errorf(http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.Network/virtualNetworks/%s' under resource group '%s' was not found.", q.raw[7], q.raw[3]))
		return
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	skip, _ := strconv.Atoi(q.r.URL.Query().Get("$skiptoken"))
	page := vnetUsageList{Value: out[min(skip, len(out)):min(skip+1, len(out))]}
	if skip+1 < len(out) {
		page.NextLink = fmt.Sprintf("%s%s?api-version=%s&$skiptoken=%d", s.URL, q.r.URL.Path, NetworkAPIVersion, skip+1)
	}
	writeJSON(q.w, http.StatusOK, page)
}
