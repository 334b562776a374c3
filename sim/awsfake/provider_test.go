package awsfake

import (
	"context"
	"strings"
	"testing"
	"time"

	awsprov "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
)

// TestProviderEndToEnd runs the plugin's provider, through New and the
// SDK's AWS_ENDPOINT_URL, against the fake: the EKS update's AWS side.
func TestProviderEndToEnd(t *testing.T) {
	f := start(t, 3)
	ctx := f.ctx
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFAKE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", f.s.URL)

	p, err := awsprov.New(ctx, awsprov.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.s.RegisterImage("ami-new", "node-v2") // SetTarget checks the image exists
	fg, _ := f.s.Group("ng1")
	var ids []string
	for _, in := range fg.Instances {
		ids = append(ids, in.ID)
	}
	g, err := p.FindGroup(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "ng1" || g.Desired != 3 || g.LaunchTemplateVersion != "1" || len(g.Instances) != 3 || len(g.Zones) != 3 {
		t.Fatalf("group: %+v", g)
	}
	if _, err := p.FindGroup(ctx, []string{"i-0000000000000dead"}); err == nil || !strings.Contains(err.Error(), "use --asg") {
		t.Fatalf("unknown instance: %v", err)
	}
	if _, err := p.SetTarget(ctx, g, "", "5"); err == nil || !strings.Contains(err.Error(), "--launch-template-version") {
		t.Fatalf("missing version: %v", err)
	}
	if lt, _ := f.s.LaunchTemplate(f.ltID); len(lt.Versions) != 1 {
		t.Fatalf("a bad version made %d versions", len(lt.Versions))
	}

	target, err := p.SetTarget(ctx, g, "ami-new", "")
	if err != nil {
		t.Fatal(err)
	}
	if target != "2" {
		t.Fatalf("target %q", target)
	}
	if again, err := p.SetTarget(ctx, g, "ami-new", ""); err != nil || again != "2" {
		t.Fatalf("re-run made %q, %v", again, err)
	}
	if lt, _ := f.s.LaunchTemplate(f.ltID); len(lt.Versions) != 2 {
		t.Fatalf("%d versions after a repeated SetTarget", len(lt.Versions))
	}
	if len(awsprov.Outdated(g, target)) != 3 {
		t.Fatalf("outdated: %+v", awsprov.Outdated(g, target))
	}

	// Scale up by the zone count, replace every old instance, scale down.
	if err := p.SetSize(ctx, "ng1", 6, 6); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitStable(ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	g, err = p.Group(ctx, "ng1")
	if err != nil {
		t.Fatal(err)
	}
	old := awsprov.Outdated(g, target)
	if len(old) != 3 || len(g.Instances) != 6 {
		t.Fatalf("after scale-up: %d instances, %d outdated", len(g.Instances), len(old))
	}
	for _, in := range old {
		if err := p.Terminate(ctx, in.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Terminate(ctx, old[0].ID); err != nil {
		t.Fatalf("repeated terminate: %v", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := f.s.WaitStable(waitCtx, "ng1"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetSize(ctx, "ng1", 3, 3); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitStable(waitCtx, "ng1"); err != nil {
		t.Fatal(err)
	}
	g, err = p.Group(ctx, "ng1")
	if err != nil {
		t.Fatal(err)
	}
	if out := awsprov.Outdated(g, target); len(out) != 0 || g.Desired != 3 || g.Max != 3 || len(g.Instances) != 3 {
		t.Fatalf("after update: %+v, outdated %+v", g, out)
	}
	zones := map[string]bool{}
	for _, in := range g.Instances {
		zones[in.Zone] = true
		if in.ImageID != "ami-new" || in.LaunchTemplateVersion != "2" {
			t.Fatalf("instance %+v", in)
		}
	}
	if len(zones) != 3 {
		t.Fatalf("zones after update: %v", zones)
	}
}
