package gce

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
)

// inZone is a managed instance of ng in zone, of template.
func inZone(name, zone, action, template string, codes ...string) *compute.ManagedInstance {
	mi := managedInstance(name, action, "", codes...)
	mi.Instance = strings.Replace(mi.Instance, "us-central1-a", zone, 1)
	mi.Version.InstanceTemplate = "projects/p/global/instanceTemplates/" + template
	if action == "NONE" {
		mi.InstanceStatus = "RUNNING"
	}
	return mi
}

// TestLaunchRefused: a managed instance being created whose lastAttempt
// failed for quota or capacity refuses its zone, naming Compute's code
// and words; the target's other instances name the zones with capacity;
// an old instance, a template error or a rate limit refuses nothing.
func TestLaunchRefused(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		mis                     []*compute.ManagedInstance
		wantCode                string
		wantZones, wantLaunched []string
		wantFix                 string
	}{
		{name: "zone out of capacity, the others launched", mis: []*compute.ManagedInstance{
			inZone("ng-a", "us-central1-a", "CREATING", "t-v2", "ZONE_RESOURCE_POOL_EXHAUSTED"),
			inZone("ng-b", "us-central1-b", "NONE", "t-v2"),
			inZone("ng-c", "us-central1-c", "CREATING", "t-v2"),
			inZone("ng-old", "us-central1-f", "NONE", "t-v1"),
		}, wantCode: "ZONE_RESOURCE_POOL_EXHAUSTED", wantZones: []string{"us-central1-a"}, wantLaunched: []string{"us-central1-b", "us-central1-c"}, wantFix: "wait for the zone's capacity"},
		{name: "quota in every zone", mis: []*compute.ManagedInstance{
			inZone("ng-a", "us-central1-a", "CREATING", "t-v2", "QUOTA_EXCEEDED"),
			inZone("ng-b", "us-central1-b", "RECREATING", "t-v2", "QUOTA_EXCEEDED"),
			inZone("ng-old", "us-central1-b", "NONE", "t-v1"),
		}, wantCode: "QUOTA_EXCEEDED", wantZones: []string{"us-central1-a", "us-central1-b"}, wantFix: "raise the quota"},
		{name: "a template error is not a refusal", mis: []*compute.ManagedInstance{inZone("ng-a", "us-central1-a", "CREATING", "t-v2", "RESOURCE_NOT_FOUND")}},
		{name: "a rate limit is waited out", mis: []*compute.ManagedInstance{inZone("ng-a", "us-central1-a", "CREATING", "t-v2", "RESOURCE_OPERATION_RATE_EXCEEDED")}},
		{name: "a running instance's old error", mis: []*compute.ManagedInstance{inZone("ng-a", "us-central1-a", "NONE", "t-v2", "QUOTA_EXCEEDED")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := newAPI(t, map[string]any{
				listNG:          &compute.RegionInstanceGroupManagersListInstancesResponse{ManagedInstances: tc.mis},
				"GET " + ngPath: &compute.InstanceGroupManager{Name: "ng", InstanceTemplate: "https://compute.googleapis.com/compute/v1/projects/p/global/instanceTemplates/t-v2"},
			})
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
			lf, err := n.LaunchRefused(context.Background(), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantCode == "" {
				if lf != nil {
					t.Fatalf("refused %+v, want no refusal", lf)
				}
				return
			}
			if lf == nil || lf.Code != tc.wantCode || !slices.Equal(lf.Zones, tc.wantZones) || !slices.Equal(lf.Launched, tc.wantLaunched) ||
				!strings.HasPrefix(lf.Fix, tc.wantFix) || !strings.Contains(lf.Message, "Quota 'CPUS' exceeded") {
				t.Fatalf("refused %+v, want %s in %v, launched in %v, fix %q", lf, tc.wantCode, tc.wantZones, tc.wantLaunched, tc.wantFix)
			}
		})
	}
}
