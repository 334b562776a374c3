package gce

import (
	"context"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
)

// TestUpdatePolicyHoldAndRestore: the type is recorded, held at
// OPPORTUNISTIC, and put back unless instances of another template than
// the group's are left (PROACTIVE would replace them undrained).
func TestUpdatePolicyHoldAndRestore(t *testing.T) {
	proactive := &compute.InstanceGroupManagerUpdatePolicy{Type: "PROACTIVE"}
	patch := "PATCH " + ngPath
	for _, tc := range []struct {
		name      string
		instances []*compute.ManagedInstance
		wantPatch bool
		wantNote  string
	}{
		{"every instance on the group's template", []*compute.ManagedInstance{managedInstance("ng-a", "NONE", "RUNNING")}, true, ""},
		{"an old instance left", []*compute.ManagedInstance{{Name: "ng-b", Version: &compute.ManagedInstanceVersion{InstanceTemplate: "projects/p/global/instanceTemplates/t-v1"}}}, false, `stays OPPORTUNISTIC (it was PROACTIVE): 1 of its instances`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ng := regionalNG(3, proactive)
			a, p := newAPI(t, map[string]any{"GET " + ngPath: ng, patch: done,
				listNG: &compute.RegionInstanceGroupManagersListInstancesResponse{ManagedInstances: tc.instances}})
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
			ctx := context.Background()
			was, err := n.SelfUpdates(ctx)
			if err != nil || was != "ng=PROACTIVE" {
				t.Fatalf("recorded %q (%v), want ng=PROACTIVE", was, err)
			}
			if err := n.HoldUpdates(ctx); err != nil || !strings.Contains(a.body(patch), `"type":"OPPORTUNISTIC"`) {
				t.Fatalf("hold: %v, sent %s", err, a.body(patch))
			}
			ng.UpdatePolicy = &compute.InstanceGroupManagerUpdatePolicy{Type: "OPPORTUNISTIC"}
			ng.InstanceTemplate = "projects/p/global/instanceTemplates/t-v2"
			a.bodies[patch] = ""
			note, err := n.RestoreUpdates(ctx, was)
			if err != nil || !strings.Contains(note, tc.wantNote) || (a.body(patch) != "") != tc.wantPatch {
				t.Fatalf("restore: note %q (%v), patched %q; want %q, a patch %v", note, err, a.body(patch), tc.wantNote, tc.wantPatch)
			}
			if tc.wantPatch && !strings.Contains(a.body(patch), `"type":"PROACTIVE"`) {
				t.Errorf("restore sent %s", a.body(patch))
			}
		})
	}
}
