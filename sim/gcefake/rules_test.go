package gcefake

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
)

// wantCode fails unless err is the API's answer with code.
func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != code {
		t.Fatalf("got %v, want HTTP %d", err, code)
	}
}

// TestInsertNames: the name and baseInstanceName rules of compute-api.json.
func TestInsertNames(t *testing.T) {
	_, svc, _ := newScene(t, 0, Opportunistic)
	for _, tc := range []struct {
		name, groupName, base string
		code                  int // 0: accepted
	}{
		{"58-character base", strings.Repeat("a", 58), "", 0},
		{"59-character name as base", strings.Repeat("b", 59), "", http.StatusBadRequest},
		{"63-character name, short base", strings.Repeat("c", 63), "c", 0},
		{"64-character name", strings.Repeat("d", 64), "d", http.StatusBadRequest},
		{"upper case", "Nodes", "", http.StatusBadRequest},
		{"sequential base", "seq", "seq-###", 0},
		{"base ending in a hyphen", "hy", "hy-", 0},
		{"base with an underscore", "us", "u_s", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.InstanceGroupManagers.Insert(project, "us-central1-a", &compute.InstanceGroupManager{
				Name: tc.groupName, BaseInstanceName: tc.base, TargetSize: 0, ForceSendFields: []string{"TargetSize"},
				InstanceTemplate: "global/instanceTemplates/tmpl-old",
			}).Context(context.Background()).Do()
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tc.code)
		})
	}
}

// TestUpdatePolicyPercent: a percentage needs 10 or more instances, and
// one of maxSurge and maxUnavailable must be above 0 (compute-api.json).
func TestUpdatePolicyPercent(t *testing.T) {
	_, svc, _ := newScene(t, 0, Opportunistic)
	pct := func(n int64) *compute.FixedOrPercent { return &compute.FixedOrPercent{Percent: n} }
	fixed := func(n int64) *compute.FixedOrPercent {
		return &compute.FixedOrPercent{Fixed: n, ForceSendFields: []string{"Fixed"}}
	}
	for i, tc := range []struct {
		name           string
		size           int64
		surge, unavail *compute.FixedOrPercent
		ok             bool
	}{
		{"percent at 10", 10, pct(20), nil, true},
		{"percent at 9", 9, pct(20), nil, false},
		{"percent at 0 (autoscaled green)", 0, nil, pct(10), false},
		{"fixed at 0", 0, fixed(3), fixed(0), true},
		{"both 0", 3, fixed(0), fixed(0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.InstanceGroupManagers.Insert(project, "us-central1-a", &compute.InstanceGroupManager{
				Name: "p" + string(rune('a'+i)), TargetSize: tc.size, ForceSendFields: []string{"TargetSize"},
				InstanceTemplate: "global/instanceTemplates/tmpl-old",
				UpdatePolicy:     &compute.InstanceGroupManagerUpdatePolicy{MaxSurge: tc.surge, MaxUnavailable: tc.unavail},
			}).Context(context.Background()).Do()
			if tc.ok != (err == nil) {
				t.Fatalf("got %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				wantCode(t, err, http.StatusBadRequest)
			}
		})
	}
	t.Run("patch", func(t *testing.T) {
		_, err := svc.RegionInstanceGroupManagers.Patch(project, "us-central1", "ng", &compute.InstanceGroupManager{
			UpdatePolicy: &compute.InstanceGroupManagerUpdatePolicy{MaxSurge: pct(50)},
		}).Context(context.Background()).Do()
		wantCode(t, err, http.StatusBadRequest)
	})
}

// TestRegionalPolicyRules: the MIG update docs' prose rules (see
// zoneRules), on insert and on patch: a regional group's fixed values 0
// or at least its zones, maxSurge 0 with RECREATE.
func TestRegionalPolicyRules(t *testing.T) {
	_, svc, _ := newScene(t, 0, Opportunistic)
	fixed := func(n int64) *compute.FixedOrPercent {
		return &compute.FixedOrPercent{Fixed: n, ForceSendFields: []string{"Fixed"}}
	}
	var dist []*compute.DistributionPolicyZoneConfiguration
	for _, z := range zones {
		dist = append(dist, &compute.DistributionPolicyZoneConfiguration{Zone: "zones/" + z})
	}
	for i, tc := range []struct {
		name           string
		regional       bool
		method         string
		surge, unavail *compute.FixedOrPercent
		want           string // "": accepted
	}{
		{"regional, maxUnavailable under the zones", true, "", fixed(0), fixed(1), "Fixed updatePolicy.maxUnavailable for regional managed instance group has to be either 0 or at least equal to the number of zones"},
		{"regional, maxSurge under the zones", true, "", fixed(2), fixed(0), "Fixed updatePolicy.maxSurge for regional"},
		{"regional, at the zones", true, "", fixed(3), fixed(0), ""},
		{"zonal, 1", false, "", fixed(1), fixed(0), ""},
		{"RECREATE with a surge", false, "RECREATE", fixed(1), fixed(1), "maxSurge must be equal to 0 when replacement method is set to RECREATE"},
		{"RECREATE with the default surge", true, "RECREATE", nil, fixed(3), "maxSurge must be equal to 0"},
		{"RECREATE with maxSurge 0", true, "RECREATE", fixed(0), fixed(3), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			igm := &compute.InstanceGroupManager{
				Name: "r" + string(rune('a'+i)), InstanceTemplate: "global/instanceTemplates/tmpl-old", ForceSendFields: []string{"TargetSize"},
				UpdatePolicy: &compute.InstanceGroupManagerUpdatePolicy{ReplacementMethod: tc.method, MaxSurge: tc.surge, MaxUnavailable: tc.unavail},
			}
			var err error
			if tc.regional {
				igm.DistributionPolicy = &compute.DistributionPolicy{Zones: dist}
				_, err = svc.RegionInstanceGroupManagers.Insert(project, "us-central1", igm).Context(context.Background()).Do()
			} else {
				_, err = svc.InstanceGroupManagers.Insert(project, "us-central1-a", igm).Context(context.Background()).Do()
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, http.StatusBadRequest)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("patch", func(t *testing.T) {
		_, err := svc.RegionInstanceGroupManagers.Patch(project, "us-central1", "ng", &compute.InstanceGroupManager{
			UpdatePolicy: &compute.InstanceGroupManagerUpdatePolicy{MaxUnavailable: fixed(2)},
		}).Context(context.Background()).Do()
		wantCode(t, err, http.StatusBadRequest)
		_, err = svc.RegionInstanceGroupManagers.Patch(project, "us-central1", "ng", &compute.InstanceGroupManager{
			UpdatePolicy: &compute.InstanceGroupManagerUpdatePolicy{ReplacementMethod: "RECREATE"},
		}).Context(context.Background()).Do()
		wantCode(t, err, http.StatusBadRequest)
	})
}

// TestBackendServiceHoldsItsGroup: a group a backend service uses is not
// deleted, and the services list with the group's instance group.
func TestBackendServiceHoldsItsGroup(t *testing.T) {
	srv, svc, key := newScene(t, 1, Opportunistic)
	ctx := context.Background()
	if err := srv.AddBackendService(project, "us-central1", "web", key); err != nil {
		t.Fatal(err)
	}
	igm, err := svc.RegionInstanceGroupManagers.Get(project, "us-central1", "ng").Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	list, err := svc.RegionBackendServices.List(project, "us-central1").Context(ctx).Do()
	if err != nil || len(list.Items) != 1 || list.Items[0].Backends[0].Group != igm.InstanceGroup {
		t.Fatalf("backend services %+v (%v), want web with %q", list, err, igm.InstanceGroup)
	}
	if global, err := svc.BackendServices.List(project).Context(ctx).Do(); err != nil || len(global.Items) != 0 {
		t.Errorf("global backend services %+v (%v), want none", global, err)
	}
	_, err = svc.RegionInstanceGroupManagers.Delete(project, "us-central1", "ng").Context(ctx).Do()
	wantCode(t, err, http.StatusBadRequest)
	if g, ok := srv.Group(key); !ok || g.Deleting {
		t.Errorf("group %+v deleted while a backend service uses it", g)
	}
}

// TestFailCreations: a creation that fails (quota, a resource not found,
// a permission) stays CREATING with the error in lastAttempt, and
// succeeds once the cause is gone.
func TestFailCreations(t *testing.T) {
	for _, code := range []string{QuotaExceeded, ResourceNotFound, PermissionDenied} {
		t.Run(code, func(t *testing.T) { failCreations(t, code) })
	}
}

func failCreations(t *testing.T, code string) {
	srv, svc, key := newScene(t, 0, Opportunistic)
	ctx := context.Background()
	srv.FailCreations("", code)
	if _, err := svc.RegionInstanceGroupManagers.Resize(project, "us-central1", "ng", 1).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var mi *compute.ManagedInstance
	for mi == nil || mi.LastAttempt == nil {
		if wctx.Err() != nil {
			t.Fatalf("no failed attempt reported: %+v", mi)
		}
		l, err := svc.RegionInstanceGroupManagers.ListManagedInstances(project, "us-central1", "ng").Context(ctx).Do()
		if err != nil || len(l.ManagedInstances) != 1 {
			t.Fatalf("%+v %v", l, err)
		}
		mi = l.ManagedInstances[0]
		time.Sleep(10 * time.Millisecond)
	}
	if e := mi.LastAttempt.Errors.Errors[0]; mi.CurrentAction != ActionCreating || e.Code != code || e.Message == "" || strings.HasPrefix(e.Message, "creation failed") {
		t.Fatalf("managed instance %+v, last attempt %+v", mi, e)
	}
	srv.FailCreations("", "")
	if g := waitStable(t, srv, key); len(g.Instances) != 1 {
		t.Fatalf("group %+v", g)
	}
	l, err := svc.RegionInstanceGroupManagers.ListManagedInstances(project, "us-central1", "ng").Context(ctx).Do()
	if err != nil || l.ManagedInstances[0].LastAttempt != nil {
		t.Errorf("after success: %+v %v, want no last attempt error", l.ManagedInstances[0], err)
	}
}

// TestListManagedInstancesPagesOnlyWhenPaginated: listManagedInstances
// ignores maxResults unless the group's listManagedInstancesResults is
// PAGINATED (compute-api.json).
func TestListManagedInstancesPagesOnlyWhenPaginated(t *testing.T) {
	srv, svc, _ := newScene(t, 3, Opportunistic)
	ctx := context.Background()
	key, err := srv.CreateGroup(GroupSpec{Project: project, Name: "paged", Region: "us-central1", Zones: zones, Template: "tmpl-old", Size: 3, ListResults: "PAGINATED"})
	if err != nil {
		t.Fatal(err)
	}
	waitStable(t, srv, key)
	for _, tc := range []struct {
		group    string
		wantSize int
		wantNext bool
	}{{"ng", 3, false}, {"paged", 1, true}} {
		t.Run(tc.group, func(t *testing.T) {
			l, err := svc.RegionInstanceGroupManagers.ListManagedInstances(project, "us-central1", tc.group).MaxResults(1).Context(ctx).Do()
			if err != nil || len(l.ManagedInstances) != tc.wantSize || (l.NextPageToken != "") != tc.wantNext {
				t.Fatalf("%d instances, next page %q (%v); want %d, a next page %v", len(l.ManagedInstances), l.NextPageToken, err, tc.wantSize, tc.wantNext)
			}
		})
	}
	_, err = svc.InstanceGroupManagers.Insert(project, "us-central1-a", &compute.InstanceGroupManager{
		Name: "bad", TargetSize: 0, InstanceTemplate: "global/instanceTemplates/tmpl-old", ListManagedInstancesResults: "SOMETIMES",
	}).Context(ctx).Do()
	wantCode(t, err, http.StatusBadRequest)
}
