package gcefake

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// startWith starts a server of opts with template tmpl-old, an image, and
// a zonal group "ng" of 2, made through the test hooks; it returns the
// real client pointed at it.
func startWith(t *testing.T, opts Options) (*Server, *compute.Service) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.LaunchDelay, opts.DeleteDelay = 10*time.Millisecond, 10*time.Millisecond
	srv, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.RegisterImage(project, "img-old", "node")
	if err := srv.CreateTemplate(TemplateSpec{Project: project, Name: "tmpl-old", ImageProject: project, Image: "img-old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateGroup(GroupSpec{Project: project, Name: "ng", Zone: zones[0], Template: "tmpl-old", Size: 2}); err != nil {
		t.Fatal(err)
	}
	svc, err := compute.NewService(ctx, option.WithEndpoint(srv.Endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return srv, svc
}

// TestFaultsRefuseBeforeActing: at a fault rate of 1 every API call is
// refused with one of Google's answers under load and nothing changes;
// the test hooks are not API calls and keep working.
func TestFaultsRefuseBeforeActing(t *testing.T) {
	srv, svc := startWith(t, Options{Faults: 1, FaultSeed: 3})
	transient := map[int]bool{403: true, 429: true, 500: true, 502: true, 503: true, 504: true}
	for range 20 {
		_, err := svc.InstanceGroupManagers.Resize(project, zones[0], "ng", 5).Do()
		var ge *googleapi.Error
		if !errors.As(err, &ge) || !transient[ge.Code] || len(ge.Errors) != 1 {
			t.Fatalf("resize = %v, want an injected fault", err)
		}
		if ge.Code == http.StatusForbidden && ge.Errors[0].Reason != "rateLimitExceeded" && ge.Errors[0].Reason != "userRateLimitExceeded" {
			t.Errorf("403 of reason %q, want Compute's rate limit", ge.Errors[0].Reason)
		}
	}
	if g, _ := srv.Group(GroupKey(project, zones[0], "", "ng")); g.TargetSize != 2 {
		t.Errorf("target size %d after refused resizes, want 2", g.TargetSize)
	}
	if n := srv.Faults(); n != 20 {
		t.Errorf("Faults() = %d, want 20", n)
	}
	if len(srv.Calls()) != 0 {
		t.Errorf("refused calls were answered: %v", srv.Calls())
	}
}

// TestSlowOperationsRunBeforeDone: a template insert's global operation
// is RUNNING when first read, DONE after, and the template exists at once.
func TestSlowOperationsRunBeforeDone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slow  bool
		first string
	}{
		{name: "default", first: "DONE"},
		{name: "slow", slow: true, first: "RUNNING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, svc := startWith(t, Options{SlowOperations: tc.slow})
			src, err := svc.InstanceTemplates.Get(project, "tmpl-old").Do()
			if err != nil {
				t.Fatal(err)
			}
			src.Name, src.SelfLink, src.Id, src.CreationTimestamp = "tmpl-"+tc.name, "", 0, ""
			op, err := svc.InstanceTemplates.Insert(project, src).Do()
			if err != nil || op.Status != tc.first {
				t.Fatalf("insert: %+v %v, want status %s", op, err, tc.first)
			}
			for i, want := range []string{tc.first, "DONE"} {
				got, err := svc.GlobalOperations.Get(project, op.Name).Do()
				if err != nil || got.Status != want {
					t.Errorf("read %d: %+v %v, want %s", i+1, got, err, want)
				}
			}
			if _, err := svc.InstanceTemplates.Get(project, src.Name).Do(); err != nil {
				t.Errorf("the template: %v", err)
			}
		})
	}
}

// TestRequestIDsAreDoneOnce: a call sent again with its requestId gets
// the first answer and does nothing more; a requestId that is no UUID is
// refused.
func TestRequestIDsAreDoneOnce(t *testing.T) {
	srv, svc := startWith(t, Options{})
	key := GroupKey(project, zones[0], "", "ng")
	const id = "6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	first, err := svc.InstanceGroupManagers.Resize(project, zones[0], "ng", 5).RequestId(id).Do()
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.InstanceGroupManagers.Resize(project, zones[0], "ng", 7).RequestId(id).Do()
	if err != nil || again.Name != first.Name {
		t.Errorf("the call again: %+v %v, want operation %s", again, err, first.Name)
	}
	if g, _ := srv.Group(key); g.TargetSize != 5 {
		t.Errorf("target size %d, want 5: the call was done twice", g.TargetSize)
	}
	for _, bad := range []string{"x", "00000000-0000-0000-0000-000000000000"} {
		_, err := svc.InstanceGroupManagers.Resize(project, zones[0], "ng", 3).RequestId(bad).Do()
		if code(err) != http.StatusBadRequest {
			t.Errorf("requestId %q: %v, want 400", bad, err)
		}
	}
}

// TestLateFaultsAreDone: a late fault answers 504 DEADLINE_EXCEEDED for a
// call it did; the call sent again with its requestId is not done twice.
func TestLateFaultsAreDone(t *testing.T) {
	srv, svc := startWith(t, Options{LateFaults: 1})
	key := GroupKey(project, zones[0], "", "ng")
	const id = "6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5c"
	for range 2 {
		_, err := svc.InstanceGroupManagers.DeleteInstances(project, zones[0], "ng", &compute.InstanceGroupManagersDeleteInstancesRequest{
			Instances: []string{instanceURL(mustGroup(t, srv, key).Instances[0])},
		}).RequestId(id).Do()
		if code(err) != http.StatusGatewayTimeout {
			t.Fatalf("deleteInstances: %v, want a late 504", err)
		}
	}
	if g := mustGroup(t, srv, key); g.TargetSize != 1 {
		t.Errorf("target size %d, want 1: deleted once", g.TargetSize)
	}
	if _, err := svc.InstanceGroupManagers.Get(project, zones[0], "ng").Do(); err != nil || srv.Faults() != 2 {
		t.Errorf("a read: %v, faults %d; want it answered, and the 2 late faults counted", err, srv.Faults())
	}
}

func mustGroup(t *testing.T, srv *Server, key string) Group {
	t.Helper()
	g, ok := srv.Group(key)
	if !ok {
		t.Fatalf("no group %s", key)
	}
	return g
}
