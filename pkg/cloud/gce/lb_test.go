package gce

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

const (
	ngPath = "projects/p/regions/us-central1/instanceGroupManagers/ng"
	igURL  = "https://compute.googleapis.com/compute/v1/projects/p/regions/us-central1/instanceGroups/ng"
)

// regionalNG is a regional group "ng" of size instances with policy up.
func regionalNG(size int64, up *compute.InstanceGroupManagerUpdatePolicy) *compute.InstanceGroupManager {
	return &compute.InstanceGroupManager{
		Name: "ng", TargetSize: size, InstanceGroup: igURL, UpdatePolicy: up,
		InstanceTemplate: "projects/p/global/instanceTemplates/t-v1",
		SelfLink:         "https://compute.googleapis.com/compute/v1/" + ngPath,
	}
}

var ngMIG = MIG{Project: "p", Region: "us-central1", Name: "ng"}

func TestGreenPolicy(t *testing.T) {
	fixed := func(n int64) *compute.FixedOrPercent { return &compute.FixedOrPercent{Fixed: n} }
	for _, tc := range []struct {
		name                string
		zones               int64
		method              string
		surge, unavail      *compute.FixedOrPercent
		wantSurge, wantUnav *compute.FixedOrPercent // Fixed compared; nil: the default
	}{
		{"fixed values stay", 1, "", fixed(3), fixed(0), fixed(3), fixed(0)},
		{"a percent becomes what it came to", 1, "", &compute.FixedOrPercent{Percent: 20, Calculated: 4}, fixed(0), fixed(4), fixed(0)},
		{"a percent that came to 0 is the default", 1, "", fixed(0), &compute.FixedOrPercent{Percent: 5}, fixed(0), nil},
		{"both 0 after that: both the default", 1, "", &compute.FixedOrPercent{Percent: 1}, fixed(0), nil, fixed(0)},
		{"unset stays unset", 1, "", nil, nil, nil, nil},
		{"regional: a percent under the zones is raised to them", 3, "", fixed(0), &compute.FixedOrPercent{Percent: 10, Calculated: 1}, fixed(0), fixed(3)},
		{"regional: a fixed value under the zones is raised to them", 3, "", fixed(2), fixed(0), fixed(3), fixed(0)},
		{"regional: 0 and values over the zones stay", 3, "", fixed(0), fixed(5), fixed(0), fixed(5)},
		{"RECREATE: maxSurge 0, however blue's reads", 3, "RECREATE", &compute.FixedOrPercent{Percent: 10}, fixed(4), fixed(0), fixed(4)},
		{"RECREATE with maxUnavailable 0: its default", 3, "RECREATE", fixed(0), &compute.FixedOrPercent{Percent: 5}, fixed(0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := greenPolicy(&compute.InstanceGroupManagerUpdatePolicy{Type: "PROACTIVE", ReplacementMethod: tc.method, MaxSurge: tc.surge, MaxUnavailable: tc.unavail}, tc.zones)
			for _, c := range []struct{ got, want *compute.FixedOrPercent }{{got.MaxSurge, tc.wantSurge}, {got.MaxUnavailable, tc.wantUnav}} {
				if (c.got == nil) != (c.want == nil) || c.got != nil && (c.got.Fixed != c.want.Fixed || c.got.Percent != 0) {
					t.Errorf("got %+v, want fixed %+v", c.got, c.want)
				}
			}
			if got.Type != "PROACTIVE" {
				t.Errorf("type %q, want blue's", got.Type)
			}
		})
	}
	if greenPolicy(nil, 3) != nil {
		t.Error("no policy became one")
	}
}

// TestCreateGreenSendsAFixedPolicy: green at size 0 gets no percentage,
// which Compute refuses for fewer than 10 instances.
func TestCreateGreenSendsAFixedPolicy(t *testing.T) {
	up := &compute.InstanceGroupManagerUpdatePolicy{Type: "PROACTIVE", MaxSurge: &compute.FixedOrPercent{Percent: 25, Calculated: 3}}
	insert := "POST projects/p/regions/us-central1/instanceGroupManagers"
	a, p := newAPI(t, map[string]any{"GET " + ngPath: regionalNG(12, up), insert: done})
	n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
	green := n.GreenName("t-v2")
	if err := n.CreateGreen(context.Background(), green, "t-v2", plan.Sizes{}); err != nil {
		t.Fatal(err)
	}
	var sent compute.InstanceGroupManager
	if err := json.Unmarshal([]byte(a.body(insert)), &sent); err != nil {
		t.Fatal(err)
	}
	if s := sent.UpdatePolicy.MaxSurge; s == nil || s.Percent != 0 || s.Fixed != 3 {
		t.Errorf("green's maxSurge %+v, want fixed 3", s)
	}
	if sent.Name != green || sent.BaseInstanceName != green || sent.TargetSize != 0 || !strings.Contains(sent.Description, ngPath) {
		t.Errorf("green %+v", sent)
	}
}

func TestBlueGreenRefusedForABackendService(t *testing.T) {
	used := &compute.BackendServiceList{Items: []*compute.BackendService{{
		Name: "web", SelfLink: "https://compute.googleapis.com/compute/v1/projects/p/regions/us-central1/backendServices/web",
		Backends: []*compute.Backend{{Group: igURL}},
	}}}
	none := &compute.BackendServiceList{}
	for _, tc := range []struct {
		name, strategy string
		regional       *compute.BackendServiceList
		wantErr        string
	}{
		{"blue-green", "blue-green", used, `backend service "projects/p/regions/us-central1/backendServices/web"`},
		{"autoscaled blue-green", "autoscaled-blue-green", used, "backendServices/web"},
		{"surge keeps the group", "surge", used, ""},
		{"no backend service", "blue-green", none, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := newAPI(t, map[string]any{
				"GET projects/p/global/backendServices":              none,
				"GET projects/p/regions/us-central1/backendServices": tc.regional,
			})
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
			err := n.checkBackendServices(context.Background(), []*compute.InstanceGroupManager{regionalNG(3, nil)}, plan.StrategyName(tc.strategy))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			if e := (*Error)(nil); err != nil && (!errors.As(err, &e) || !e.Input()) {
				t.Errorf("%v is not an input error (exit 2)", err)
			}
		})
	}
}
