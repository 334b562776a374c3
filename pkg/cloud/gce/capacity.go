package gce

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.CapacityProver = (*NodeGroup)(nil)

// Regional quota metrics (compute-api.json, Quota.metric) a new instance
// counts against besides its vCPUs': one instance, and one in-use
// external address for each network interface with an access config
// (https://cloud.google.com/compute/resource-usage#regional_quotas).
const (
	metricCPUs           = "CPUS"
	metricPreemptible    = "PREEMPTIBLE_CPUS"
	metricInstances      = "INSTANCES"
	metricInUseAddresses = "IN_USE_ADDRESSES"
)

// familyMetrics are the regional vCPU quotas of the machine series that
// have one of their own; N1, E2 and the shared-core f1 and g1 count
// against CPUS, as do custom machine types of no series (custom-C-M, N1's)
// (https://cloud.google.com/compute/resource-usage#cpu_quota). A series
// missing from both lists has no quota the run knows: a warning, never a
// guess.
var familyMetrics = map[string]string{
	"n1": metricCPUs, "e2": metricCPUs, "f1": metricCPUs, "g1": metricCPUs, "custom": metricCPUs,
	"n2": "N2_CPUS", "n2d": "N2D_CPUS", "c2": "C2_CPUS", "c2d": "C2D_CPUS", "c3": "C3_CPUS",
	"m1": "M1_CPUS", "m2": "M2_CPUS", "m3": "M3_CPUS", "a2": "A2_CPUS", "t2d": "T2D_CPUS", "t2a": "T2A_CPUS",
}

// cpuMetric is the regional vCPU quota a machine type counts against: its
// series' (the name's first part), or PREEMPTIBLE_CPUS for Spot and
// preemptible VMs where the region grants that quota (without it they
// count against the regular ones, as the page above says).
func cpuMetric(machineType string, spot bool, r *compute.Region) (string, bool) {
	if spot {
		if q := quotaOf(r, metricPreemptible); q != nil && q.Limit > 0 {
			return metricPreemptible, true
		}
	}
	series, _, _ := strings.Cut(machineType, "-")
	m, ok := familyMetrics[series]
	return m, ok
}

// ProveCapacity implements cloud.CapacityProver: the region's quotas the
// added instances count against (see RegionQuotas), each launched from
// the target template.
func (n *NodeGroup) ProveCapacity(ctx context.Context, added int32) (*plan.CapacityPlan, error) {
	it, zones, err := launchTemplate(ctx, n.API, n.MIGs, n.Template)
	if err != nil {
		return &plan.CapacityPlan{Unprovable: []string{oneLine(err.Error())}}, nil
	}
	p := it.Properties
	return RegionQuotas(ctx, n.API.svc, Launch{
		Project: n.API.project, Zones: zones, MachineType: lastSegment(p.MachineType),
		Spot:        p.Scheduling != nil && (p.Scheduling.Preemptible || p.Scheduling.ProvisioningModel == "SPOT"),
		ExternalIPs: accessConfigs(p),
	}, added), nil
}

// Launch is what an added instance is: where (the zones of one region
// it may launch in), of which machine type, Spot (or preemptible) or not,
// with how many external addresses.
type Launch struct {
	Project, MachineType string
	Zones                []string
	Spot                 bool
	ExternalIPs          int64
}

// RegionQuotas reads the region's quotas (regions.get) added instances of
// l count against: their machine type's vCPUs (machineTypes.get) of the
// series' vCPU quota, one each of INSTANCES, and their external addresses
// of IN_USE_ADDRESSES; and each zone that does not offer the machine type
// as a limit with none free. What it cannot read it names in Unprovable.
func RegionQuotas(ctx context.Context, svc *compute.Service, l Launch, added int32) *plan.CapacityPlan {
	c := &plan.CapacityPlan{InstanceType: l.MachineType}
	if len(l.Zones) == 0 {
		c.Unprovable = []string{fmt.Sprintf("no zone to read machine type %q in", l.MachineType)}
		return c
	}
	mt, missing, err := machineTypeIn(ctx, svc, l)
	for _, z := range missing {
		c.Quotas = append(c.Quotas, notOffered(l, z, added))
	}
	if err != nil || mt == nil {
		if err != nil {
			c.Unprovable = []string{oneLine(err.Error())}
		}
		return c
	}
	region := RegionOf(l.Zones[0])
	r, err := svc.Regions.Get(l.Project, region).Context(ctx).Do()
	if err != nil {
		c.Unprovable = []string{oneLine(wrap(err, "get the quotas of region %q", region).Error())}
		return c
	}
	cpu, ok := cpuMetric(l.MachineType, l.Spot, r)
	if !ok {
		c.Unprovable = append(c.Unprovable, fmt.Sprintf("machine type %q is of a series without a known vCPU quota", l.MachineType))
	}
	want := map[string]int64{cpu: mt.GuestCpus, metricInstances: 1, metricInUseAddresses: l.ExternalIPs}
	for _, metric := range []string{cpu, metricInstances, metricInUseAddresses} {
		if metric == "" || want[metric] == 0 {
			continue
		}
		if q := quotaOf(r, metric); q != nil {
			c.Quotas = append(c.Quotas, quotaUse(l.Project, region, q, want[metric], added))
		} else {
			c.Unprovable = append(c.Unprovable, fmt.Sprintf("region %q reports no quota %s", region, metric))
		}
	}
	return c
}

// machineTypeIn reads l's machine type in each of its zones
// (machineTypes.get is zonal): a zone where Compute answers 404 does not
// offer it, and no instance of the group launches there
// (https://cloud.google.com/compute/docs/regions-zones#available: "not
// all machine types are available in all zones"). mt is the type as the
// first zone that offers it reports it; nil where none does.
func machineTypeIn(ctx context.Context, svc *compute.Service, l Launch) (mt *compute.MachineType, missing []string, err error) {
	for _, z := range l.Zones {
		got, err := svc.MachineTypes.Get(l.Project, z, l.MachineType).Context(ctx).Do()
		switch {
		case isCode(err, http.StatusNotFound):
			missing = append(missing, z)
		case err != nil:
			return nil, missing, wrap(err, "get machine type %q in zone %q", l.MachineType, z)
		case mt == nil:
			mt = got
		}
	}
	return mt, missing, nil
}

// notOffered is a zone that does not offer the machine type as a limit
// with none free: the added instances cannot launch there.
func notOffered(l Launch, zone string, added int32) plan.QuotaUse {
	return plan.QuotaUse{
		Scope: strings.Join([]string{"gcp", l.Project, zone, l.MachineType}, "/"),
		Name: fmt.Sprintf("%s in zone %s, where Compute does not offer it (take the zone out of the group's zones or launch another machine type)",
			l.MachineType, zone),
		Unit: "instance", Needed: int64(added),
	}
}

// quotaUse is what added instances, per of the quota each, need of q.
func quotaUse(project, region string, q *compute.Quota, per int64, added int32) plan.QuotaUse {
	unit := map[string]string{metricInstances: "instance", metricInUseAddresses: "IP"}[q.Metric]
	if unit == "" {
		unit = "vCPU"
	}
	limit := int64(q.Limit)
	return plan.QuotaUse{
		Scope: strings.Join([]string{"gcp", project, region, q.Metric}, "/"),
		Name:  fmt.Sprintf("quota %s of region %s", q.Metric, region),
		Unit:  unit, Needed: int64(added) * per, Free: limit - int64(q.Usage), Limit: limit, PerNode: per,
	}
}

// launchTemplate is the template the added instances launch from (the
// one --instance-template names, else the groups' current one: a copy
// for --image differs in its image only), and the zones of the groups
// they may launch in, for machineTypes.get, which is zonal.
func launchTemplate(ctx context.Context, api *Client, migs []MIG, template string) (*compute.InstanceTemplate, []string, error) {
	var it *compute.InstanceTemplate
	var zones []string
	for _, m := range migs {
		igm, err := api.getMIG(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		if igm == nil {
			return nil, nil, missingMIG(m)
		}
		if it == nil {
			if it, err = templateNamed(ctx, api, template, igm); err != nil {
				return nil, nil, err
			}
		}
		zones = append(zones, migZones(m, igm)...)
	}
	if len(zones) == 0 {
		return nil, nil, fmt.Errorf("managed instance group %q names no zone", migs[0].String())
	}
	return it, zones, nil
}

// templateNamed is instance template name, else the group's current one.
func templateNamed(ctx context.Context, api *Client, name string, igm *compute.InstanceGroupManager) (*compute.InstanceTemplate, error) {
	name = lastSegment(name)
	if name == "" {
		name = lastSegment(igm.InstanceTemplate)
	}
	it, err := api.getTemplate(ctx, name)
	if err != nil {
		return nil, err
	}
	if it == nil || it.Properties == nil || it.Properties.MachineType == "" {
		return nil, fmt.Errorf("instance template %q names no machine type", name)
	}
	return it, nil
}

// migZones are the zones a group launches in: its distribution policy's
// for a regional group, its own for a zonal one.
func migZones(m MIG, igm *compute.InstanceGroupManager) []string {
	if igm.DistributionPolicy != nil && len(igm.DistributionPolicy.Zones) > 0 {
		var zones []string
		for _, z := range igm.DistributionPolicy.Zones {
			zones = append(zones, lastSegment(z.Zone))
		}
		return zones
	}
	if m.Zone != "" {
		return []string{m.Zone}
	}
	return nil
}

// accessConfigs counts the external addresses an instance of the
// template holds: one per network interface with an access config.
func accessConfigs(p *compute.InstanceProperties) int64 {
	var n int64
	for _, ni := range p.NetworkInterfaces {
		if len(ni.AccessConfigs) > 0 {
			n++
		}
	}
	return n
}

// quotaOf is the region's quota of metric, nil when it reports none.
func quotaOf(r *compute.Region, metric string) *compute.Quota {
	for _, q := range r.Quotas {
		if q != nil && q.Metric == metric {
			return q
		}
	}
	return nil
}
