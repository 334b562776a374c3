package awsfake

import (
	"maps"
	"slices"
	"strconv"
)

// instanceTypeNetwork are the network interfaces and IPv4 addresses per
// interface of the instance types the scenarios launch, as the Amazon EC2
// "Instance type specifications", Network specifications
// (https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html#gp_network,
// .../co.html#co_network), list them; DescribeInstanceTypes answers them
// as botocore's ec2 model shapes NetworkInfo (maximumNetworkInterfaces,
// ipv4AddressesPerInterface).
var instanceTypeNetwork = map[string][2]int{
	"m5.large": {3, 10}, "m5.xlarge": {4, 15}, "m5.2xlarge": {4, 15}, "m5.4xlarge": {8, 30},
	"c5.large": {3, 10}, "c5.xlarge": {4, 15}, "t3.medium": {3, 6}, "t3.large": {3, 12},
}

// subnetSize is the addresses of a fake subnet no test sized: a /20, less
// the five AWS reserves in every subnet ("The first four IP addresses and
// the last IP address in each subnet CIDR block are not available",
// Amazon VPC User Guide, Subnet CIDR blocks).
const subnetSize = 4096 - 5

// capacityState is what the tests set of EC2's capacity: the instance
// types withheld from zones (WithholdOffering) and the subnets' free
// addresses (SetSubnetFree).
type capacityState struct {
	withheld map[[2]string]bool // by zone, instance type
	free     map[string]int     // by subnet ID
	short    map[[2]string]bool // by zone, instance type: no capacity (SetNoCapacity)
	acts     activityState      // scaling activities (activities.go)
	reserved reservationState   // Capacity Reservations (reservations.go)
}

// WithholdOffering makes EC2 not offer instance type typ in zone:
// DescribeInstanceTypeOfferings leaves it out there.
func (s *Server) WithholdOffering(zone, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capacity.withheld == nil {
		s.capacity.withheld = map[[2]string]bool{}
	}
	s.capacity.withheld[[2]string{zone, typ}] = true
}

// SetSubnetFree sets the AvailableIpAddressCount DescribeSubnets answers
// for subnet (Subnet(zone)); a subnet not set answers subnetSize less its
// instances' addresses.
func (s *Server) SetSubnetFree(subnet string, free int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capacity.free == nil {
		s.capacity.free = map[string]int{}
	}
	s.capacity.free[subnet] = free
}

// offering is one row of DescribeInstanceTypeOfferings: botocore's
// InstanceTypeOffering (instanceType, locationType, location).
type offering struct{ typ, locationType, location string }

// describeOfferings answers DescribeInstanceTypeOfferings. LocationType
// is "region" when not given (API reference: "the default is region"); the
// fake knows the zones its groups use and those a location filter names,
// and no zone IDs or Outposts, whose location types answer none. Filters
// are the reference's instance-type and location; another is
// InvalidParameterValue. Every page is one: the fake's few offerings fit
// DITOMaxResults' least (5) only where the filters narrow them, so a
// MaxResults below the answer's length is not paged.
func (s *Server) describeOfferings(f form) ([]*node, error) {
	lt := f.get("LocationType")
	if lt == "" {
		lt = "region"
	}
	var locations []string
	switch lt {
	case "region":
		locations = []string{s.opts.Region}
	case "availability-zone":
		locations = s.knownZones(f)
	}
	var sel []offering
	for _, loc := range locations {
		for _, typ := range slices.Sorted(maps.Keys(instanceTypeVCPUs)) {
			if !s.capacity.withheld[[2]string{loc, typ}] {
				sel = append(sel, offering{typ, lt, loc})
			}
		}
	}
	sel, err := filtered(f, sel, offeringField, anyWildcard)
	if err != nil {
		return nil, err
	}
	items := make([]*node, 0, len(sel))
	for _, o := range sel {
		items = append(items, el("item", txt("instanceType", o.typ), txt("locationType", o.locationType), txt("location", o.location)))
	}
	return []*node{el("instanceTypeOfferingSet", items...)}, nil
}

// anyWildcard says whether one of a filter's values (with * and ?)
// matches v.
func anyWildcard(values []string, v string) bool {
	return slices.ContainsFunc(values, func(w string) bool { return wildcard(w).MatchString(v) })
}

func offeringField(name string) (func(offering) string, bool) {
	switch name {
	case "instance-type":
		return func(o offering) string { return o.typ }, true
	case "location":
		return func(o offering) string { return o.location }, true
	}
	return nil, false
}

// knownZones are the zones of the fake's groups and those the request's
// location filters name that are zones of its region.
func (s *Server) knownZones(f form) []string {
	var out []string
	add := func(z string) {
		if zoneRE.MatchString(z) && regionOfZone(z) == s.opts.Region && !slices.Contains(out, z) {
			out = append(out, z)
		}
	}
	for _, g := range s.groups {
		for _, z := range g.Zones {
			add(z)
		}
	}
	for i := 1; f.has("Filter." + strconv.Itoa(i) + ".Name"); i++ {
		if p := "Filter." + strconv.Itoa(i); f.get(p+".Name") == "location" {
			for _, z := range f.list(p + ".Value") {
				add(z)
			}
		}
	}
	slices.Sort(out)
	return out
}

// regionOfZone is a zone's region: the zone less its letter.
func regionOfZone(z string) string { return z[:len(z)-1] }

// describeSubnets answers DescribeSubnets for the subnets named
// (SubnetId.N) or, with none, the subnets of the fake's groups: botocore's
// Subnet shape's subnetId, availabilityZone, availableIpAddressCount,
// state. A subnet the fake does not have (Subnet's form) is EC2's
// InvalidSubnetID.NotFound.
func (s *Server) describeSubnets(f form) ([]*node, error) {
	ids := f.list("SubnetId")
	if len(ids) == 0 {
		for _, g := range s.groups {
			for _, sn := range g.Subnets {
				if !slices.Contains(ids, sn) {
					ids = append(ids, sn)
				}
			}
		}
		slices.Sort(ids)
	}
	items := make([]*node, 0, len(ids))
	for _, id := range ids {
		zone, ok := subnetZone(id)
		if !ok || regionOfZone(zone) != s.opts.Region {
			return nil, ec2Err("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
		items = append(items, el("item", txt("subnetId", id), txt("state", "available"), txt("vpcId", "vpc-awsfake"),
			txt("availabilityZone", zone), num("availableIpAddressCount", s.subnetFree(id))))
	}
	return []*node{el("subnetSet", items...)}, nil
}

// subnetFree is what a test set, or the subnet's size less an address
// for each of its instances not terminated.
func (s *Server) subnetFree(id string) int {
	if n, ok := s.capacity.free[id]; ok {
		return n
	}
	n := subnetSize
	for _, in := range s.instances {
		if in.subnet == id && in.State != StateTerminated {
			n--
		}
	}
	return n
}
