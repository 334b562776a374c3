package gce

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

const listNG = "POST " + ngPath + "/listManagedInstances"

// managedInstance is a managed instance of ng in us-central1-a.
func managedInstance(name, action, status string, codes ...string) *compute.ManagedInstance {
	mi := &compute.ManagedInstance{
		Name: name, CurrentAction: action, InstanceStatus: status, Id: 7,
		Instance: "https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instances/" + name,
		Version:  &compute.ManagedInstanceVersion{InstanceTemplate: "projects/p/global/instanceTemplates/t-v2"},
	}
	if len(codes) > 0 {
		mi.LastAttempt = &compute.ManagedInstanceLastAttempt{Errors: &compute.ManagedInstanceLastAttemptErrors{}}
		for _, c := range codes {
			mi.LastAttempt.Errors.Errors = append(mi.LastAttempt.Errors.Errors, &compute.ManagedInstanceLastAttemptErrorsErrors{Code: c, Message: "Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1."})
		}
	}
	return mi
}

// TestMachinesStopsAtACreationFailure: an error of the managed instance's
// lastAttempt that no wait outlasts (quota, capacity, a resource not
// found, a permission) ends the wait for it at once; a rate limit or a
// transient failure does not.
func TestMachinesStopsAtACreationFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mi      *compute.ManagedInstance
		wantErr string
	}{
		{"quota", managedInstance("ng-a", "CREATING", "", "QUOTA_EXCEEDED"), `NodeCreationFailure: instance "ng-a" of managed instance group "` + ngMIG.String() + `" cannot be created in zone "us-central1-a": QUOTA_EXCEEDED: Quota 'CPUS' exceeded`},
		{"capacity on a recreate", managedInstance("ng-b", "RECREATING", "", "ZONE_RESOURCE_POOL_EXHAUSTED"), "ZONE_RESOURCE_POOL_EXHAUSTED"},
		{"an image not found", managedInstance("ng-f", "CREATING", "", "RESOURCE_NOT_FOUND"), `"ng-f" of managed instance group "` + ngMIG.String() + `" cannot be created in zone "us-central1-a": RESOURCE_NOT_FOUND`},
		{"a permission denied", managedInstance("ng-g", "CREATING", "", "PERMISSIONS_ERROR"), "PERMISSIONS_ERROR"},
		{"a rate limit: the group tries again", managedInstance("ng-c", "CREATING", "", "RESOURCE_OPERATION_RATE_EXCEEDED"), ""},
		{"a transient failure: the group tries again", managedInstance("ng-h", "CREATING", "", "SERVICE_UNAVAILABLE"), ""},
		{"a running instance's old error", managedInstance("ng-d", "NONE", "RUNNING", "QUOTA_EXCEEDED"), ""},
		{"no error", managedInstance("ng-e", "CREATING", ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := newAPI(t, map[string]any{listNG: &compute.RegionInstanceGroupManagersListInstancesResponse{ManagedInstances: []*compute.ManagedInstance{tc.mi}}})
			n := &NodeGroup{API: p, MIGs: []MIG{ngMIG}}
			_, pending, err := n.Machines(context.Background(), nil)
			if tc.wantErr == "" {
				if err != nil || len(pending) != 1 {
					t.Fatalf("pending %v, err %v; want the machine pending", pending, err)
				}
				return
			}
			var ue cloud.UpdateError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ue) || ue.Code != "NodeCreationFailure" {
				t.Fatalf("got %v, want %q behind a NodeCreationFailure", err, tc.wantErr)
			}
		})
	}
}

// TestManagedInstancesReadsEveryPage: a PAGINATED group answers in pages,
// a PAGELESS one in one; both are read whole.
func TestManagedInstancesReadsEveryPage(t *testing.T) {
	pages := func(q url.Values) any {
		if q.Get("pageToken") == "" {
			return &compute.RegionInstanceGroupManagersListInstancesResponse{ManagedInstances: []*compute.ManagedInstance{managedInstance("ng-a", "NONE", "RUNNING")}, NextPageToken: "2"}
		}
		return &compute.RegionInstanceGroupManagersListInstancesResponse{ManagedInstances: []*compute.ManagedInstance{managedInstance("ng-b", "NONE", "RUNNING")}}
	}
	one := &compute.RegionInstanceGroupManagersListInstancesResponse{ManagedInstances: []*compute.ManagedInstance{managedInstance("ng-a", "NONE", "RUNNING"), managedInstance("ng-b", "NONE", "RUNNING")}}
	for name, answer := range map[string]any{"PAGINATED": pages, "PAGELESS": one} {
		t.Run(name, func(t *testing.T) {
			_, p := newAPI(t, map[string]any{listNG: answer})
			mis, err := p.managedInstances(context.Background(), ngMIG)
			if err != nil || len(mis) != 2 || mis[0].Name != "ng-a" || mis[1].Name != "ng-b" {
				t.Fatalf("got %d instances (%v), want ng-a and ng-b", len(mis), err)
			}
		})
	}
}
