package gce

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestProveCapacity: the added instances' need of the region's quotas
// their machine series, one instance and an external address count
// against, and what is not proven.
func TestProveCapacity(t *testing.T) {
	region := func(qs ...*compute.Quota) *compute.Region { return &compute.Region{Name: "us-central1", Quotas: qs} }
	quota := func(metric string, limit, usage float64) *compute.Quota {
		return &compute.Quota{Metric: metric, Limit: limit, Usage: usage}
	}
	use := func(metric, unit string, needed, free, limit, per int64) plan.QuotaUse {
		return plan.QuotaUse{Scope: "gcp/p/us-central1/" + metric, Name: "quota " + metric + " of region us-central1",
			Unit: unit, Needed: needed, Free: free, Limit: limit, PerNode: per}
	}
	for _, tc := range []struct {
		name        string
		machine     string
		external    bool
		scheduling  *compute.Scheduling
		region      any
		machineType any
		zoneB       any // machineTypes.get in us-central1-b, a second zone of the group where set
		want        plan.CapacityPlan
	}{
		{
			name: "e2 counts against CPUS", machine: "e2-standard-4",
			region: region(quota("CPUS", 24, 8), quota("INSTANCES", 100, 2), quota("N2_CPUS", 4, 4)),
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Quotas: []plan.QuotaUse{
				use("CPUS", "vCPU", 8, 16, 24, 4), use("INSTANCES", "instance", 2, 98, 100, 1)}},
		},
		{
			name: "n2 counts against its series' quota", machine: "n2-standard-4",
			region: region(quota("CPUS", 24, 0), quota("INSTANCES", 100, 2), quota("N2_CPUS", 10, 6)),
			want: plan.CapacityPlan{InstanceType: "n2-standard-4", Quotas: []plan.QuotaUse{
				use("N2_CPUS", "vCPU", 8, 4, 10, 4), use("INSTANCES", "instance", 2, 98, 100, 1)}},
		},
		{
			name: "an external address counts against IN_USE_ADDRESSES", machine: "e2-standard-4", external: true,
			region: region(quota("CPUS", 24, 8), quota("INSTANCES", 100, 2), quota("IN_USE_ADDRESSES", 8, 7)),
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Quotas: []plan.QuotaUse{
				use("CPUS", "vCPU", 8, 16, 24, 4), use("INSTANCES", "instance", 2, 98, 100, 1), use("IN_USE_ADDRESSES", "IP", 2, 1, 8, 1)}},
		},
		{
			name: "spot counts against PREEMPTIBLE_CPUS where granted", machine: "e2-standard-4", scheduling: &compute.Scheduling{ProvisioningModel: "SPOT"},
			region: region(quota("CPUS", 24, 8), quota("INSTANCES", 100, 2), quota("PREEMPTIBLE_CPUS", 16, 0)),
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Quotas: []plan.QuotaUse{
				use("PREEMPTIBLE_CPUS", "vCPU", 8, 16, 16, 4), use("INSTANCES", "instance", 2, 98, 100, 1)}},
		},
		{
			name: "preemptible without PREEMPTIBLE_CPUS counts against CPUS", machine: "e2-standard-4", scheduling: &compute.Scheduling{Preemptible: true},
			region: region(quota("CPUS", 24, 8), quota("INSTANCES", 100, 2), quota("PREEMPTIBLE_CPUS", 0, 0)),
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Quotas: []plan.QuotaUse{
				use("CPUS", "vCPU", 8, 16, 24, 4), use("INSTANCES", "instance", 2, 98, 100, 1)}},
		},
		{
			name: "a series without a known quota is not guessed", machine: "z3-highmem-8",
			region: region(quota("CPUS", 24, 8), quota("INSTANCES", 100, 2)),
			want: plan.CapacityPlan{InstanceType: "z3-highmem-8", Unprovable: []string{`machine type "z3-highmem-8" is of a series without a known vCPU quota`},
				Quotas: []plan.QuotaUse{use("INSTANCES", "instance", 2, 98, 100, 1)}},
		},
		{
			name: "a quota the region does not report", machine: "e2-standard-4",
			region: region(quota("CPUS", 24, 8)),
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Unprovable: []string{`region "us-central1" reports no quota INSTANCES`},
				Quotas: []plan.QuotaUse{use("CPUS", "vCPU", 8, 16, 24, 4)}},
		},
		{
			name: "a zone that does not offer the type is a limit with none free", machine: "e2-standard-4",
			zoneB:  &apiErr{http.StatusNotFound, "notFound"},
			region: region(quota("CPUS", 24, 8), quota("INSTANCES", 100, 2)),
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Quotas: []plan.QuotaUse{
				{Scope: "gcp/p/us-central1-b/e2-standard-4", Name: "e2-standard-4 in zone us-central1-b, where Compute does not offer it (take the zone out of the group's zones or launch another machine type)", Unit: "instance", Needed: 2},
				use("CPUS", "vCPU", 8, 16, 24, 4), use("INSTANCES", "instance", 2, 98, 100, 1)}},
		},
		{
			name: "a second zone that offers the type adds nothing", machine: "e2-standard-4",
			zoneB:  &compute.MachineType{Name: "e2-standard-4", GuestCpus: 4},
			region: region(quota("CPUS", 24, 8), quota("INSTANCES", 100, 2)),
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Quotas: []plan.QuotaUse{
				use("CPUS", "vCPU", 8, 16, 24, 4), use("INSTANCES", "instance", 2, 98, 100, 1)}},
		},
		{
			name: "machineTypes.get refused", machine: "e2-standard-4", machineType: &apiErr{http.StatusForbidden, "forbidden"},
			region: region(quota("CPUS", 24, 8)),
			want:   plan.CapacityPlan{InstanceType: "e2-standard-4", Unprovable: []string{`cannot get machine type "e2-standard-4" in zone "us-central1-a"`}},
		},
		{
			name: "regions.get refused", machine: "e2-standard-4", region: &apiErr{http.StatusForbidden, "forbidden"},
			want: plan.CapacityPlan{InstanceType: "e2-standard-4", Unprovable: []string{`cannot get the quotas of region "us-central1"`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := &compute.InstanceProperties{MachineType: tc.machine, Scheduling: tc.scheduling,
				NetworkInterfaces: []*compute.NetworkInterface{{Network: "global/networks/default"}}}
			if tc.external {
				props.NetworkInterfaces[0].AccessConfigs = []*compute.AccessConfig{{Type: "ONE_TO_ONE_NAT"}}
			}
			if tc.machineType == nil {
				cpus, _ := map[string]int64{"e2-standard-4": 4, "n2-standard-4": 4, "z3-highmem-8": 8}[tc.machine]
				tc.machineType = &compute.MachineType{Name: tc.machine, GuestCpus: cpus}
			}
			zones := []*compute.DistributionPolicyZoneConfiguration{{Zone: computeURL + "projects/p/zones/us-central1-a"}}
			routes := map[string]any{
				"GET projects/p/global/instanceTemplates/t-v1":                  &compute.InstanceTemplate{Name: "t-v1", Properties: props},
				"GET projects/p/zones/us-central1-a/machineTypes/" + tc.machine: tc.machineType,
				"GET projects/p/regions/us-central1":                            tc.region,
			}
			if tc.zoneB != nil {
				zones = append(zones, &compute.DistributionPolicyZoneConfiguration{Zone: computeURL + "projects/p/zones/us-central1-b"})
				routes["GET projects/p/zones/us-central1-b/machineTypes/"+tc.machine] = tc.zoneB
			}
			routes["GET projects/p/regions/us-central1/instanceGroupManagers/ng"] = &compute.InstanceGroupManager{
				Name: "ng", InstanceTemplate: computeURL + "projects/p/global/instanceTemplates/t-v1",
				DistributionPolicy: &compute.DistributionPolicy{Zones: zones},
			}
			_, p := newAPI(t, routes)
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
			got, err := n.ProveCapacity(context.Background(), 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Unprovable) != len(tc.want.Unprovable) {
				t.Fatalf("unprovable %q, want %q", got.Unprovable, tc.want.Unprovable)
			}
			for i, u := range tc.want.Unprovable {
				if !strings.HasPrefix(got.Unprovable[i], u) {
					t.Errorf("unprovable %q, want it to start %q", got.Unprovable[i], u)
				}
			}
			got.Unprovable, tc.want.Unprovable = nil, nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}
