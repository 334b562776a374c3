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
