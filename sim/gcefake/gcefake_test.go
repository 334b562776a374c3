package gcefake

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

const project = "sim-project"

var zones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// newScene starts a server with image img-old, template tmpl-old and a
// regional group "ng" of size over three zones; it returns the real
// client pointed at it.
func newScene(t *testing.T, size int64, policy string) (*Server, *compute.Service, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := Start(ctx, Options{LaunchDelay: 20 * time.Millisecond, DeleteDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.RegisterImage(project, "img-old", "node")
	srv.RegisterImage(project, "img-new", "node")
	if err := srv.CreateTemplate(TemplateSpec{Project: project, Name: "tmpl-old", ImageProject: project, Image: "img-old", KubeLabels: map[string]string{"kops.k8s.io/instancegroup": "ng"}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateTemplate(TemplateSpec{Project: project, Name: "tmpl-new", ImageProject: project, Image: "img-new"}); err != nil {
		t.Fatal(err)
	}
	key, err := srv.CreateGroup(GroupSpec{Project: project, Name: "ng", Region: "us-central1", Zones: zones, Template: "tmpl-old", Size: size, UpdateType: policy})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := compute.NewService(ctx, option.WithEndpoint(srv.Endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	waitStable(t, srv, key)
	return srv, svc, key
}

func waitStable(t *testing.T, srv *Server, key string) Group {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitStable(ctx, key); err != nil {
		t.Fatal(err)
	}
	g, _ := srv.Group(key)
	return g
}

func perZone(g Group) map[string]int {
	out := map[string]int{}
	for _, in := range g.Instances {
		out[in.Zone]++
	}
	return out
}

func instanceURL(in Instance) string {
	return "zones/" + in.Zone + "/instances/" + in.Name
}

func TestRegionalGroupThroughTheClient(t *testing.T) {
	srv, svc, key := newScene(t, 6, Opportunistic)
	ctx := context.Background()
	g, _ := srv.Group(key)
	if got := perZone(g); got[zones[0]] != 2 || got[zones[1]] != 2 || got[zones[2]] != 2 {
		t.Fatalf("instances per zone %v, want 2 in each (EVEN)", got)
	}
	igm, err := svc.RegionInstanceGroupManagers.Get(project, "us-central1", "ng").Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	if igm.TargetSize != 6 || igm.UpdatePolicy.Type != Opportunistic || igm.UpdatePolicy.InstanceRedistributionType != Proactive || !igm.Status.IsStable {
		t.Errorf("group %+v %+v, want size 6, OPPORTUNISTIC, redistribution PROACTIVE, stable", igm, igm.UpdatePolicy)
	}
	c := &clientScene{srv: srv, svc: svc, key: key, g: g}
	t.Run("instances name their group in created-by", c.createdBy)
	t.Run("setInstanceTemplate changes no instance while OPPORTUNISTIC", c.setTemplateOpportunistic)
	t.Run("recreate keeps the name, not the VM", c.recreateKeepsTheName)
	t.Run("deleteInstances lowers the target size at once", c.deleteInstancesLowersTheSize)
	t.Run("an instance of another group is refused", c.anotherGroupsInstance)
}

func code(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// managed finds one instance in listManagedInstances, read a page of one
// at a time so the client's paging is exercised.
func managed(t *testing.T, svc *compute.Service, name string) *compute.ManagedInstance {
	t.Helper()
	var found *compute.ManagedInstance
	err := svc.RegionInstanceGroupManagers.ListManagedInstances(project, "us-central1", "ng").MaxResults(1).Pages(context.Background(),
		func(r *compute.RegionInstanceGroupManagersListInstancesResponse) error {
			for _, mi := range r.ManagedInstances {
				if mi.Name == name {
					found = mi
				}
			}
			return nil
		})
	if err != nil || found == nil {
		t.Fatalf("managed instance %s: %v", name, err)
	}
	return found
}

func TestProactiveUpdateAndRedistribution(t *testing.T) {
	srv, svc, key := newScene(t, 3, Proactive)
	ctx := context.Background()
	c := &clientScene{srv: srv, svc: svc, key: key}
	t.Run("PROACTIVE replaces every instance on its own", c.proactiveReplaces)
	t.Run("patch holds redistribution off", c.patchHoldsRedistribution)
	before := len(srv.Removals())
	// Held off, a group of 2/2/2 whose zone a loses both stays 0/2/2.
	if _, err := svc.RegionInstanceGroupManagers.Resize(project, "us-central1", "ng", 6).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	g := waitStable(t, srv, key)
	var inA []string
	for _, in := range g.Instances {
		if in.Zone == zones[0] {
			inA = append(inA, instanceURL(in))
		}
	}
	if _, err := svc.RegionInstanceGroupManagers.DeleteInstances(project, "us-central1", "ng",
		&compute.RegionInstanceGroupManagersDeleteInstancesRequest{Instances: inA}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	waitStable(t, srv, key)
	time.Sleep(100 * time.Millisecond)
	if got := perZone(waitStable(t, srv, key)); got[zones[0]] != 0 || len(srv.Removals()) != before {
		t.Fatalf("held: per zone %v, removals %v", got, srv.Removals()[before:])
	}
	c.before = before
	t.Run("PROACTIVE redistribution evens the zones out on its own", c.proactiveRedistributes)
}

func TestTemplatesImagesAndAutoscaler(t *testing.T) {
	srv, svc, key := newScene(t, 2, Opportunistic)
	c := &clientScene{srv: srv, svc: svc, key: key}
	t.Run("templates are immutable: a second insert conflicts", c.templatesAreImmutable)
	t.Run("a template of an unknown image is refused", c.unknownImageRefused)
	t.Run("images by name and family", c.imagesByNameAndFamily)
	t.Run("the autoscaler grows the group within its bounds", c.autoscalerGrows)
	t.Run("a group delete takes its instances", c.deleteTakesInstances)
}

func TestZonalGroup(t *testing.T) {
	srv, svc, _ := newScene(t, 0, Opportunistic)
	ctx := context.Background()
	op, err := svc.InstanceGroupManagers.Insert(project, "us-central1-b", &compute.InstanceGroupManager{
		Name: "zonal", BaseInstanceName: "zonal", TargetSize: 2, InstanceTemplate: "global/instanceTemplates/tmpl-old",
	}).Context(ctx).Do()
	if err != nil || op.Status != "DONE" || op.Zone == "" {
		t.Fatalf("op %+v, err %v", op, err)
	}
	key := GroupKey(project, "us-central1-b", "", "zonal")
	g := waitStable(t, srv, key)
	if len(g.Instances) != 2 || g.UpdateType != Proactive || g.Redistribution != "" {
		t.Errorf("group %+v, want 2 instances, PROACTIVE, no redistribution", g)
	}
	list, err := svc.InstanceGroupManagers.List(project, "us-central1-b").Context(ctx).Do()
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
	if _, err := svc.InstanceGroupManagers.Resize(project, "us-central1-b", "zonal", 1).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	if g := waitStable(t, srv, key); len(g.Instances) != 1 {
		t.Errorf("%d instances after resize to 1", len(g.Instances))
	}
	if _, err := svc.ZoneOperations.Get(project, "us-central1-b", op.Name).Context(ctx).Do(); err != nil {
		t.Errorf("zone operation: %v", err)
	}
}

// clientScene is what the steps of a test through the client share: the
// server, the client, the group's key and the group as made.
type clientScene struct {
	srv *Server
	svc *compute.Service
	key string
	g   Group
	// before is how many removals there were before a step.
	before int
}

func (c *clientScene) createdBy(t *testing.T) {
	ctx := context.Background()
	in := c.g.Instances[0]
	got, err := c.svc.Instances.Get(project, in.Zone, in.Name).Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	var createdBy string
	for _, it := range got.Metadata.Items {
		if it.Key == "created-by" {
			createdBy = *it.Value
		}
	}
	if createdBy != "projects/123456789012/regions/us-central1/instanceGroupManagers/ng" {
		t.Errorf("created-by %q", createdBy)
	}
}

func (c *clientScene) setTemplateOpportunistic(t *testing.T) {
	ctx := context.Background()
	op, err := c.svc.RegionInstanceGroupManagers.SetInstanceTemplate(project, "us-central1", "ng",
		&compute.RegionInstanceGroupManagersSetTemplateRequest{InstanceTemplate: "global/instanceTemplates/tmpl-new"}).Context(ctx).Do()
	if err != nil || op.Status != "DONE" {
		t.Fatalf("op %+v, err %v", op, err)
	}
	time.Sleep(100 * time.Millisecond)
	for _, in := range waitStable(t, c.srv, c.key).Instances {
		if in.Template != "tmpl-old" {
			t.Errorf("instance %s runs %s", in.Name, in.Template)
		}
	}
}

func (c *clientScene) recreateKeepsTheName(t *testing.T) {
	ctx := context.Background()
	in := c.g.Instances[0]
	op, err := c.svc.RegionInstanceGroupManagers.RecreateInstances(project, "us-central1", "ng",
		&compute.RegionInstanceGroupManagersRecreateRequest{Instances: []string{instanceURL(in)}}).Context(ctx).Do()
	if err != nil || op.Status != "DONE" {
		t.Fatalf("op %+v, err %v", op, err)
	}
	mi := managed(t, c.svc, in.Name)
	if mi.CurrentAction != ActionRecreating || !strings.HasSuffix(mi.Version.InstanceTemplate, "/tmpl-new") {
		t.Errorf("just after the DONE operation: %s %s, want RECREATING to tmpl-new", mi.CurrentAction, mi.Version.InstanceTemplate)
	}
	after := waitStable(t, c.srv, c.key)
	i := slices.IndexFunc(after.Instances, func(x Instance) bool { return x.Name == in.Name })
	if i < 0 || after.Instances[i].ID == in.ID || after.Instances[i].Template != "tmpl-new" || after.Instances[i].Image != imageLink(project, "img-new") {
		t.Errorf("recreated %+v (was id %d)", after.Instances[i], in.ID)
	}
}

func (c *clientScene) deleteInstancesLowersTheSize(t *testing.T) {
	ctx := context.Background()
	in := c.g.Instances[1]
	op, err := c.svc.RegionInstanceGroupManagers.DeleteInstances(project, "us-central1", "ng",
		&compute.RegionInstanceGroupManagersDeleteInstancesRequest{Instances: []string{instanceURL(in)}}).Context(ctx).Do()
	if err != nil || op.Status != "DONE" {
		t.Fatalf("op %+v, err %v", op, err)
	}
	if mi := managed(t, c.svc, in.Name); mi.CurrentAction != ActionDeleting {
		t.Errorf("just after the DONE operation: %s, want DELETING", mi.CurrentAction)
	}
	igm, _ := c.svc.RegionInstanceGroupManagers.Get(project, "us-central1", "ng").Context(ctx).Do()
	if igm.TargetSize != 5 {
		t.Errorf("target size %d, want 5", igm.TargetSize)
	}
	// Zones are now 1/2/2: uneven by one, which redistribution leaves.
	if after := waitStable(t, c.srv, c.key); len(after.Instances) != 5 || len(c.srv.Removals()) != 0 {
		t.Errorf("%d instances, removals %v", len(after.Instances), c.srv.Removals())
	}
}

func (c *clientScene) anotherGroupsInstance(t *testing.T) {
	ctx := context.Background()
	_, err := c.svc.RegionInstanceGroupManagers.DeleteInstances(project, "us-central1", "ng",
		&compute.RegionInstanceGroupManagersDeleteInstancesRequest{Instances: []string{"zones/us-central1-a/instances/nope"}}).Context(ctx).Do()
	if code(err) != http.StatusBadRequest {
		t.Errorf("err %v, want 400", err)
	}
}

func (c *clientScene) proactiveReplaces(t *testing.T) {
	ctx := context.Background()
	if _, err := c.svc.RegionInstanceGroupManagers.SetInstanceTemplate(project, "us-central1", "ng",
		&compute.RegionInstanceGroupManagersSetTemplateRequest{InstanceTemplate: "global/instanceTemplates/tmpl-new"}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.srv.WaitFor(wctx, c.key, func(g Group) bool {
		return g.Stable() && !slices.ContainsFunc(g.Instances, func(in Instance) bool { return in.Template != "tmpl-new" })
	})
	if err != nil || len(c.srv.Removals()) != 3 {
		t.Errorf("err %v, removals %v, want 3", err, c.srv.Removals())
	}
}

func (c *clientScene) patchHoldsRedistribution(t *testing.T) {
	ctx := context.Background()
	if _, err := c.svc.RegionInstanceGroupManagers.Patch(project, "us-central1", "ng", &compute.InstanceGroupManager{
		UpdatePolicy: &compute.InstanceGroupManagerUpdatePolicy{Type: Opportunistic, InstanceRedistributionType: NoRedistrib},
	}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	g := waitStable(t, c.srv, c.key)
	if g.UpdateType != Opportunistic || g.Redistribution != NoRedistrib {
		t.Fatalf("policy %s/%s", g.UpdateType, g.Redistribution)
	}
}

func (c *clientScene) proactiveRedistributes(t *testing.T) {
	ctx := context.Background()
	if _, err := c.svc.RegionInstanceGroupManagers.Patch(project, "us-central1", "ng", &compute.InstanceGroupManager{
		UpdatePolicy: &compute.InstanceGroupManagerUpdatePolicy{InstanceRedistributionType: Proactive},
	}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.srv.WaitFor(wctx, c.key, func(g Group) bool {
		n := perZone(g)
		return g.Stable() && n[zones[0]] == 1 && n[zones[1]]+n[zones[2]] == 3
	})
	rs := c.srv.Removals()[c.before:]
	if err != nil || len(rs) != 1 || rs[0].Why != "instance redistribution" {
		t.Errorf("err %v, removals %v, want one by redistribution", err, rs)
	}
}

func (c *clientScene) templatesAreImmutable(t *testing.T) {
	ctx := context.Background()
	it, err := c.svc.InstanceTemplates.Get(project, "tmpl-old").Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.svc.InstanceTemplates.Insert(project, &compute.InstanceTemplate{Name: "tmpl-copy", Properties: it.Properties}).Context(ctx).Do()
	if err != nil || op.Status != "DONE" {
		t.Fatalf("op %+v, err %v", op, err)
	}
	_, err = c.svc.InstanceTemplates.Insert(project, &compute.InstanceTemplate{Name: "tmpl-copy", Properties: it.Properties}).Context(ctx).Do()
	if code(err) != http.StatusConflict {
		t.Errorf("err %v, want 409", err)
	}
	if got := c.srv.Templates(project); !slices.Equal(got, []string{"tmpl-copy", "tmpl-new", "tmpl-old"}) {
		t.Errorf("templates %v", got)
	}
}

func (c *clientScene) unknownImageRefused(t *testing.T) {
	ctx := context.Background()
	_, err := c.svc.InstanceTemplates.Insert(project, &compute.InstanceTemplate{Name: "bad", Properties: &compute.InstanceProperties{
		Disks: []*compute.AttachedDisk{{Boot: true, InitializeParams: &compute.AttachedDiskInitializeParams{SourceImage: "projects/sim-project/global/images/nope"}}},
	}}).Context(ctx).Do()
	if code(err) != http.StatusBadRequest {
		t.Errorf("err %v, want 400", err)
	}
}

func (c *clientScene) imagesByNameAndFamily(t *testing.T) {
	ctx := context.Background()
	if _, err := c.svc.Images.Get(project, "img-new").Context(ctx).Do(); err != nil {
		t.Error(err)
	}
	im, err := c.svc.Images.GetFromFamily(project, "node").Context(ctx).Do()
	if err != nil || im.Name != "img-new" {
		t.Errorf("family: %v %v, want img-new, the newest", im, err)
	}
	if _, err := c.svc.Images.Get(project, "nope").Context(ctx).Do(); code(err) != http.StatusNotFound {
		t.Errorf("err %v, want 404", err)
	}
}

func (c *clientScene) autoscalerGrows(t *testing.T) {
	ctx := context.Background()
	if err := c.srv.AddAutoscaler(c.key, 1, 4); err != nil {
		t.Fatal(err)
	}
	as, err := c.svc.RegionAutoscalers.List(project, "us-central1").Context(ctx).Do()
	if err != nil || len(as.Items) != 1 {
		t.Fatalf("autoscalers %v %v", as, err)
	}
	if n, err := c.srv.Autoscale(c.key, 9); err != nil || n != 4 {
		t.Fatalf("autoscale %d %v, want 4", n, err)
	}
	if g := waitStable(t, c.srv, c.key); len(g.Instances) != 4 {
		t.Errorf("%d instances, want 4", len(g.Instances))
	}
}

func (c *clientScene) deleteTakesInstances(t *testing.T) {
	ctx := context.Background()
	if _, err := c.svc.RegionInstanceGroupManagers.Delete(project, "us-central1", "ng").Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for wctx.Err() == nil {
		if _, ok := c.srv.Group(c.key); !ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.svc.RegionInstanceGroupManagers.Get(project, "us-central1", "ng").Context(ctx).Do(); code(err) != http.StatusNotFound {
		t.Errorf("err %v, want 404", err)
	}
}
