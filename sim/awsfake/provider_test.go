package awsfake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

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
	if _, err := p.FindGroup(ctx, []string{"i-0000000000000dead"}); err == nil || !strings.Contains(err.Error(), "--asg") {
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

// TestProviderSetTargetAfterAKill: a run killed after CreateLaunchTemplateVersion
// answered and before the group was pointed at the new version left the
// version behind; the re-run's SetTarget points the group at it and makes
// no other. Versions that are not a copy of the group's version with only
// the image changed are not taken for it.
func TestProviderSetTargetAfterAKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		// left are the images of the versions made from version 1 before
		// the re-run; instanceType, when set, is changed in them too.
		left         []string
		instanceType string
		want         string
		wantVersions int
	}{
		{name: "never interrupted", want: "2", wantVersions: 2},
		{name: "killed after creating the version, before pointing the group", left: []string{"ami-new"}, want: "2", wantVersions: 2},
		{name: "killed twice after creating a version", left: []string{"ami-new", "ami-new"}, want: "2", wantVersions: 3},
		{name: "a version with another image is left", left: []string{"ami-other"}, want: "3", wantVersions: 3},
		{name: "a version with the image and another instance type is left", left: []string{"ami-new"}, instanceType: "m5.xlarge", want: "3", wantVersions: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, 3)
			f.s.RegisterImage("ami-new", "node-v2")
			for _, image := range tc.left {
				data := &ec2types.RequestLaunchTemplateData{ImageId: aws.String(image)}
				if tc.instanceType != "" {
					data.InstanceType = ec2types.InstanceType(tc.instanceType)
				}
				if _, err := f.ec2.CreateLaunchTemplateVersion(f.ctx, &ec2.CreateLaunchTemplateVersionInput{
					LaunchTemplateId: aws.String(f.ltID), SourceVersion: aws.String("1"), LaunchTemplateData: data,
				}); err != nil {
					t.Fatal(err)
				}
			}
			p := awsprov.NewFromConfig(sdkConfig(f.s), awsprov.Options{})
			g, err := p.Group(f.ctx, "ng1")
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.SetTarget(f.ctx, g, "ami-new", "")
			if err != nil || got != tc.want {
				t.Fatalf("SetTarget = %q, %v; want %q", got, err, tc.want)
			}
			fg, _ := f.s.Group("ng1")
			lt, _ := f.s.LaunchTemplate(f.ltID)
			if fg.LaunchTemplateVersion != tc.want || len(lt.Versions) != tc.wantVersions {
				t.Errorf("group launches version %q of a template with %d versions, want %q of %d", fg.LaunchTemplateVersion, len(lt.Versions), tc.want, tc.wantVersions)
			}
		})
	}
}
