package gce

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestGreenGroups: green's sizes are read and set, its machines join
// blue's once used, and deleting it is done when it is gone already.
func TestGreenGroups(t *testing.T) {
	s := regional()
	blue := MIG{Project: "p", Region: "us-central1", Name: "ng"}
	green := greenName("ng", "t-v2")
	g := blue
	g.Name = green
	s.group("regions/us-central1", green, "us-central1-c")
	r := &sizesSent{sent: map[string]string{}}
	r.route(s, g)
	s.routes["DELETE "+g.String()] = inTurn(done, &apiErr{http.StatusNotFound, "notFound"}, &apiErr{http.StatusInternalServerError, "backendError"})
	a, n := s.nodeGroup(t, blue)
	ctx := context.Background()
	if sizes, err := n.GroupSizes(ctx, green); err != nil || sizes.Desired != 1 {
		t.Errorf("GroupSizes = %+v, %v; want green's 1", sizes, err)
	}
	if sizes, err := n.GroupSizes(ctx, "ng"); err != nil || sizes.Desired != 2 {
		t.Errorf("GroupSizes = %+v, %v; want blue's 2", sizes, err)
	}
	if err := n.SetGroupSizes(ctx, green, plan.Sizes{Desired: 3}); err != nil || r.sent[green] != "3" {
		t.Errorf("SetGroupSizes: %v, sent %v", err, r.sent)
	}
	if _, pending, _ := n.Machines(ctx, nil); len(pending) != 2 {
		t.Errorf("before UseGreen: %d machines, want blue's 2", len(pending))
	}
	n.UseGreen(green)
	if _, pending, _ := n.Machines(ctx, nil); len(pending) != 3 {
		t.Errorf("after UseGreen: %d machines, want blue's and green's 3", len(pending))
	}
	for i, want := range []string{"", "", "cannot delete managed instance group"} {
		if err := n.DeleteGroup(ctx, green); want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("delete %d: %v, want %q", i+1, err, want)
		}
	}
	if !a.called("DELETE " + g.String()) {
		t.Error("green was not deleted")
	}
}

// TestCreateGreenAdoptsItsOwn: green's name taken, by the green an
// earlier run made, is green; by another group, or a green of another
// template, is refused.
func TestCreateGreenAdoptsItsOwn(t *testing.T) {
	green := greenName("ng", "t-v2")
	path := "projects/p/regions/us-central1/instanceGroupManagers/" + green
	mine := &compute.InstanceGroupManager{Name: green, Description: greenMark + ngPath, InstanceTemplate: "projects/p/global/instanceTemplates/t-v2"}
	for _, tc := range []struct {
		name    string
		found   any
		wantErr string
	}{
		{name: "its own", found: mine},
		{name: "another group", found: &compute.InstanceGroupManager{Name: green, Description: "a group of someone's"}, wantErr: "already exists and is not a green group of \"ng\""},
		{name: "another template", found: &compute.InstanceGroupManager{Name: green, Description: mine.Description, InstanceTemplate: "projects/p/global/instanceTemplates/t-v3"}, wantErr: `launches instance template "t-v3", not "t-v2"`},
		{name: "gone again", found: &apiErr{http.StatusNotFound, "notFound"}, wantErr: "already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := newAPI(t, map[string]any{
				"GET " + ngPath: regionalNG(2, nil), "GET " + path: tc.found,
				"POST projects/p/regions/us-central1/instanceGroupManagers": &apiErr{http.StatusConflict, "alreadyExists"},
			})
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
			err := n.CreateGreen(context.Background(), green, "t-v2", plan.Sizes{Desired: 2})
			var e *Error
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &e) || !e.Input()) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestCheckQuota: blue/green needs a group per blue group within the
// region's INSTANCE_GROUP_MANAGERS quota.
func TestCheckQuota(t *testing.T) {
	for _, tc := range []struct {
		name    string
		usage   float64
		wantErr string
	}{
		{name: "room for green", usage: 9},
		{name: "no room", usage: 10, wantErr: `region "us-central1" has 10 managed instance groups, the project's quota of 10, and blue/green needs 1 more`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := newAPI(t, map[string]any{"GET projects/p/regions/us-central1": &compute.Region{Quotas: []*compute.Quota{
				{Metric: "CPUS", Usage: 100, Limit: 1}, {Metric: "INSTANCE_GROUP_MANAGERS", Usage: tc.usage, Limit: 10},
			}}})
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
			err := n.CheckQuota(context.Background())
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestRebalance: a regional group's redistribution is read, held (NONE)
// and released (PROACTIVE), over the zones of its distribution policy.
func TestRebalance(t *testing.T) {
	s := regional()
	s.igm(ngPath).DistributionPolicy = &compute.DistributionPolicy{Zones: []*compute.DistributionPolicyZoneConfiguration{
		{Zone: computeURL + "projects/p/zones/us-central1-a"}, {Zone: "zones/us-central1-b"},
	}}
	s.routes["PATCH "+ngPath] = done
	a, n := s.nodeGroup(t, ngMIG)
	r := RegionalNodeGroup{n}
	ctx := context.Background()
	if held, err := r.RebalanceHeld(ctx); err != nil || held || r.RebalanceName() != Redistribution {
		t.Errorf("held %v (%v), want not", held, err)
	}
	if zones, err := r.RebalanceZones(ctx); err != nil || strings.Join(zones, ",") != "us-central1-a,us-central1-b" {
		t.Errorf("zones %v (%v)", zones, err)
	}
	for _, tc := range []struct {
		do   func(context.Context) error
		want string
	}{{r.HoldRebalance, `"instanceRedistributionType":"NONE"`}, {r.ReleaseRebalance, `"instanceRedistributionType":"PROACTIVE"`}} {
		if err := tc.do(ctx); err != nil || !strings.Contains(a.body("PATCH "+ngPath), tc.want) || strings.Contains(a.body("PATCH "+ngPath), `"type"`) {
			t.Errorf("patched %s (%v), want %s alone", a.body("PATCH "+ngPath), err, tc.want)
		}
	}
	s.igm(ngPath).UpdatePolicy.InstanceRedistributionType = "NONE"
	if held, err := r.RebalanceHeld(ctx); err != nil || !held {
		t.Errorf("held %v (%v), want held", held, err)
	}
}

// TestProbePermissions: the probe asks Resource Manager for the role's
// permissions (--image's only with --image) and names those missing.
func TestProbePermissions(t *testing.T) {
	for _, tc := range []struct {
		name, image string
		asked       string // in the request, or not
		askedToo    bool
	}{
		{name: "a template run", asked: "compute.instanceTemplates.create", askedToo: false},
		{name: "an image run", image: "img-2", asked: "compute.instanceTemplates.create", askedToo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, p := newAPI(t, map[string]any{"POST /v1/projects/p:testIamPermissions": map[string]any{"permissions": []string{"compute.instances.get"}}})
			t.Setenv(EndpointEnv, a.url+"/compute/v1/")
			p.probeOpts = []option.ClientOption{option.WithoutAuthentication()}
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}, Image: tc.image}
			perms, err := n.ProbePermissions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			asked := a.body("POST /v1/projects/p:testIamPermissions")
			if strings.Contains(asked, tc.asked) != tc.askedToo || !strings.Contains(asked, "compute.instanceGroupManagers.update") {
				t.Errorf("asked %s", asked)
			}
			for _, m := range perms.Missing {
				if m.Permission == "compute.instances.get" {
					t.Errorf("a granted permission is missing: %+v", m)
				}
			}
			if len(perms.Missing) == 0 || perms.Policy != Policy {
				t.Errorf("missing %+v, policy %q", perms.Missing, perms.Policy)
			}
		})
	}
}

// TestClientOptions: a local endpoint takes no credentials; Google's
// needs them, and none found is bad input saying how to give them.
func TestClientOptions(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/missing.json")
	t.Setenv(EndpointEnv, "http://127.0.0.1:1/compute/v1/")
	t.Setenv(NoAuthEnv, "true")
	p, err := New(context.Background(), "p")
	if err != nil || p.Project() != "p" {
		t.Fatalf("New with a local endpoint: %v", err)
	}
	t.Setenv(EndpointEnv, "")
	_, err = New(context.Background(), "p")
	var e *Error
	if err == nil || !strings.Contains(err.Error(), "no Google Cloud credentials found") || !errors.As(err, &e) || !e.Input() {
		t.Errorf("New without credentials: %v", err)
	}
}
