package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestEKSSettings: the run's settings as UpdateNodegroupConfig takes
// them, and what EKS would refuse refused before it is called.
func TestEKSSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      plan.UpdateSettings
		want    UpdateSettings
		wantErr string
	}{
		{name: "a number of nodes", in: plan.UpdateSettings{MaxUnavailable: "2"}, want: UpdateSettings{MaxUnavailable: 2, Strategy: "DEFAULT"}},
		{name: "a percentage", in: plan.UpdateSettings{MaxUnavailable: "25%", Strategy: "MINIMAL"}, want: UpdateSettings{MaxUnavailablePercentage: 25, Strategy: "MINIMAL"}},
		{name: "the most EKS takes", in: plan.UpdateSettings{MaxUnavailable: "100"}, want: UpdateSettings{MaxUnavailable: 100, Strategy: "DEFAULT"}},
		{name: "zero", in: plan.UpdateSettings{MaxUnavailable: "0"}, wantErr: `invalid --max-unavailable "0"`},
		{name: "above 100", in: plan.UpdateSettings{MaxUnavailable: "101"}, wantErr: `invalid --max-unavailable "101"`},
		{name: "above 100%", in: plan.UpdateSettings{MaxUnavailable: "150%"}, wantErr: `invalid --max-unavailable "150%"`},
		{name: "not a number", in: plan.UpdateSettings{MaxUnavailable: "some"}, wantErr: `invalid --max-unavailable "some"`},
		{name: "a strategy EKS does not have", in: plan.UpdateSettings{MaxUnavailable: "1", Strategy: "FAST"}, wantErr: `invalid --update-strategy "FAST"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eksSettings(tc.in)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isInput(err) {
					t.Errorf("want an input error with %q, got %v", tc.wantErr, err)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func isInput(err error) bool {
	var in interface{ Input() bool }
	return errors.As(err, &in) && in.Input()
}

// TestPlanSettingsReadBack: what the group has reads back as the settings
// the run puts back, unchanged through eksSettings.
func TestPlanSettingsReadBack(t *testing.T) {
	for _, u := range []UpdateSettings{
		{MaxUnavailable: 1, Strategy: "DEFAULT"},
		{MaxUnavailable: 3, Strategy: "MINIMAL"},
		{MaxUnavailablePercentage: 33, Strategy: "DEFAULT"},
	} {
		back, err := eksSettings(planSettings(u))
		if err != nil || back != u {
			t.Errorf("%+v read back as %+v (%v)", u, back, err)
		}
	}
	if got := planSettings(UpdateSettings{}); got.MaxUnavailable != "1" || got.Strategy != "DEFAULT" {
		t.Errorf("an unset update config reads %+v, want EKS's defaults 1 and DEFAULT", got)
	}
}

// TestUpdateState maps DescribeUpdate's statuses.
func TestUpdateState(t *testing.T) {
	for status, want := range map[string]cloud.UpdateState{
		"InProgress": cloud.UpdateInProgress, "Successful": cloud.UpdateSucceeded,
		"Failed": cloud.UpdateFailed, "Cancelled": cloud.UpdateCancelled,
	} {
		if got := updateState(status); got != want {
			t.Errorf("%s: got %s, want %s", status, got, want)
		}
	}
}

// TestManagedScaleUp: EKS's scale-up is the larger of twice the zones and
// maxUnavailable; MINIMAL adds none.
func TestManagedScaleUp(t *testing.T) {
	for _, tc := range []struct {
		name           string
		maxUnavailable string
		strategy       string
		nodes, zones   int
		groupZones     []string
		want           int32
	}{
		{"zones decide", "1", "", 6, 3, nil, 6},
		{"maxUnavailable decides", "20", "", 30, 3, nil, 20},
		{"a percentage of the group", "50%", "", 30, 2, nil, 15},
		{"MINIMAL adds none", "2", "MINIMAL", 6, 3, nil, 0},
		{"the group's zones, not the nodes'", "1", "", 2, 1, []string{"a", "b", "c", "d"}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &ManagedNodeGroup{group: &EKSNodegroup{Name: "ng", Cluster: "c", Version: "1.30", Update: UpdateSettings{MaxUnavailable: 1, Strategy: "DEFAULT"}},
				asg: &AutoScalingGroup{Zones: tc.groupZones}, updateStrategy: tc.strategy}
			mp, err := m.Plan(plan.Input{MaxUnavailable: tc.maxUnavailable}, tc.nodes, tc.zones)
			if err != nil {
				t.Fatal(err)
			}
			if mp.ScaleUp != tc.want || mp.MaxScaleUp != tc.want {
				t.Errorf("scale-up %d, max raised by %d, want both %d", mp.ScaleUp, mp.MaxScaleUp, tc.want)
			}
			if mp.Before.MaxUnavailable != "1" || mp.During.MaxUnavailable != tc.maxUnavailable {
				t.Errorf("settings %s -> %s, want maxUnavailable 1 -> %s", mp.Before, mp.During, tc.maxUnavailable)
			}
		})
	}
}

// TestResolveTarget: the targets EKS refuses (API Reference,
// UpdateNodegroupVersion) are refused as input errors before anything
// changes, and no target flag means the group's own version, sent.
func TestResolveTarget(t *testing.T) {
	latest := reply{200, `{"Parameter":{"Name":"x","Type":"String","Value":"1.31.2-20250201","Version":3}}`}
	for _, tc := range []struct {
		name    string
		opts    map[string]string
		green   bool
		want    ManagedTarget
		wantErr string
	}{
		{name: "no flags: the group's version, its latest release", want: ManagedTarget{Version: "1.31", ReleaseVersion: "1.31.2-20250201"}},
		{name: "a newer release", opts: map[string]string{optReleaseVersion: "1.31.2-20250115"}, want: ManagedTarget{Version: "1.31", ReleaseVersion: "1.31.2-20250115"}},
		{name: "the group's own release", opts: map[string]string{optReleaseVersion: "1.31.1-20250101"}, want: ManagedTarget{Version: "1.31", ReleaseVersion: "1.31.1-20250101"}},
		{name: "an earlier Kubernetes version", opts: map[string]string{optKubernetesVersion: "1.30"}, wantErr: "cannot roll a node group back to an earlier version"},
		{name: "an earlier release", opts: map[string]string{optReleaseVersion: "1.31.0-20241201"}, wantErr: "cannot roll a node group back to an earlier AMI version"},
		{name: "an earlier release for green", green: true, opts: map[string]string{optReleaseVersion: "1.31.0-20241201"}, want: ManagedTarget{Version: "1.31", ReleaseVersion: "1.31.0-20241201"}},
		{name: "a release that does not exist", opts: map[string]string{optReleaseVersion: "1.31.9-20990101"}, wantErr: `--release-version "1.31.9-20990101" does not exist`},
		{name: "a release of another version", opts: map[string]string{optKubernetesVersion: "1.31", optReleaseVersion: "1.32.0-20250101"}, wantErr: "is not a release of Kubernetes 1.31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newTestEKS(t, map[string][]reply{"ssm:GetParameter": {latest}})
			m := &ManagedNodeGroup{eks: e, clusterVersion: "1.32", green: tc.green,
				group: &EKSNodegroup{Name: "ng1", Cluster: "c1", Version: "1.31", ReleaseVersion: "1.31.1-20250101", AMIType: "AL2023_x86_64_STANDARD"}}
			err := m.resolveTarget(context.Background(), plan.CloudTarget{Options: tc.opts})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isInput(err) {
					t.Fatalf("err = %v, want an input error with %q", err, tc.wantErr)
				}
				if n := len(f.calls) - f.called("ssm:GetParameter"); n != 0 {
					t.Errorf("%d calls besides SSM reads: %v", n, f.calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.target.Version != tc.want.Version || m.target.ReleaseVersion != tc.want.ReleaseVersion {
				t.Errorf("target %+v, want %+v", m.target, tc.want)
			}
		})
	}
}

// TestNewerRelease orders EKS AMI releases by version, then date.
func TestNewerRelease(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1.31.2-20250201", "1.31.2-20250101", true},
		{"1.31.2-20250101", "1.31.2-20250201", false},
		{"1.31.10-20250101", "1.31.9-20250201", true},
		{"1.32.0-20250101", "1.31.9-20250201", true},
		{"1.31.2-20250101", "1.31.2-20250101", false},
		{"1.20.3-5d9ac849", "1.20.2-aaaaaaaa", true},
		{"1.20.3-5d9ac849", "1.20.3-0aaaaaaa", false},
	} {
		t.Run(tc.a+" vs "+tc.b, func(t *testing.T) {
			if got := newerRelease(tc.a, tc.b); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestManagedNodeGroupCalls drives the cloud.ManagedUpdater side through
// EKS's API: the settings read, set and followed, the update started
// with the target as sent, its progress with EKS's errors.
func TestManagedNodeGroupCalls(t *testing.T) {
	failed := `{"errorCode":"PodEvictionFailure","errorMessage":"Reached max retries","resourceIds":["ip-1"]}`
	applied := strings.Replace(ngJSON("ACTIVE").body, `"maxUnavailable":1,"updateStrategy":"DEFAULT"`, `"maxUnavailable":2,"updateStrategy":"DEFAULT"`, 1)
	e, f := newTestEKS(t, map[string][]reply{
		"eks:DescribeNodegroup":      {ngJSON("ACTIVE"), ngJSON("ACTIVE"), {200, applied}},
		"eks:UpdateNodegroupConfig":  {updateJSON("c1", "ConfigUpdate", "InProgress", "")},
		"eks:ListUpdates":            {{200, `{"updateIds":[]}`}},
		"eks:UpdateNodegroupVersion": {updateJSON("u2", "VersionUpdate", "InProgress", "")},
		"eks:DescribeUpdate": {updateJSON("c1", "ConfigUpdate", "Successful", ""), updateJSON("u2", "VersionUpdate", "InProgress", ""),
			updateJSON("u2", "VersionUpdate", "Failed", failed)},
	})
	ctx := context.Background()
	m := &ManagedNodeGroup{eks: e, group: &EKSNodegroup{Name: "ng1", Cluster: "c1", Version: "1.30", ReleaseVersion: "1.30.0-20240101"},
		target: ManagedTarget{Version: "1.30", ReleaseVersion: "1.30.1-20240201"}}
	s, err := m.Settings(ctx)
	if err != nil || s.String() != "strategy DEFAULT, maxUnavailable 1" {
		t.Fatalf("settings %q, %v", s, err)
	}
	if err := m.Configure(ctx, plan.UpdateSettings{MaxUnavailable: "2", Strategy: "DEFAULT"}); err != nil {
		t.Fatal(err)
	}
	id, err := m.StartUpdate(ctx, true)
	if err != nil || id != "u2" {
		t.Fatalf("started %q, %v", id, err)
	}
	p, err := m.Progress(ctx, id)
	if err != nil || p.State != cloud.UpdateFailed || len(p.Errors) != 1 || p.Errors[0].Code != "PodEvictionFailure" || p.Errors[0].Nodes[0] != "ip-1" {
		t.Fatalf("progress %+v, %v", p, err)
	}
	if f.called("eks:UpdateNodegroupConfig") != 1 || f.called("eks:UpdateNodegroupVersion") != 1 {
		t.Errorf("calls %v", f.calls)
	}
	if got := m.targetText(); got != "Kubernetes 1.30, release 1.30.1-20240201" {
		t.Errorf("target %q", got)
	}
}

// TestRunningUpdate: the group's version update in progress is found
// (the latest first), a config update or an ended one is not, and
// nothing is started.
func TestRunningUpdate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies map[string][]reply
		want    string
	}{
		{"a version update under way", map[string][]reply{
			"eks:ListUpdates":    {{200, `{"updateIds":["u1","u2"]}`}},
			"eks:DescribeUpdate": {updateJSON("u2", "VersionUpdate", "InProgress", "")},
		}, "u2"},
		{"only ended ones and a config update", map[string][]reply{
			"eks:ListUpdates":    {{200, `{"updateIds":["u1","c1"]}`}},
			"eks:DescribeUpdate": {updateJSON("c1", "ConfigUpdate", "InProgress", ""), updateJSON("u1", "VersionUpdate", "Successful", "")},
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newTestEKS(t, tc.replies)
			m := &ManagedNodeGroup{eks: e, group: &EKSNodegroup{Name: "ng1", Cluster: "c1"}}
			id, err := m.RunningUpdate(context.Background())
			if err != nil || id != tc.want || f.called("eks:UpdateNodegroupVersion") != 0 {
				t.Errorf("RunningUpdate = %q, %v after calls %v; want %q and none started", id, err, f.calls, tc.want)
			}
		})
	}
}

// TestManagedPlanText: the group as EKS describes it, the target in EKS's
// words, and EKS's phases, with the settings put back where they change.
func TestManagedPlanText(t *testing.T) {
	m := &ManagedNodeGroup{clusterVersion: "1.31", asg: &AutoScalingGroup{Zones: []string{"a", "b"}},
		group: &EKSNodegroup{Name: "ng1", Cluster: "c1", Version: "1.30", ReleaseVersion: "1.30.0-1", Status: "DEGRADED", AMIType: "CUSTOM", CapacityType: "SPOT",
			Health: []HealthIssue{{Code: "AsgInstanceLaunchFailures", Message: "no capacity", ResourceIDs: []string{"asg"}}},
			Min:    1, Desired: 3, Max: 5, Update: UpdateSettings{MaxUnavailablePercentage: 20, Strategy: "DEFAULT"},
			LaunchTemplate: &TemplateRef{ID: "lt-1", Version: "2"}},
		target: ManagedTarget{LaunchTemplate: &TemplateRef{ID: "lt-1", Version: "3"}}}
	mp, err := m.Plan(plan.Input{MaxUnavailable: "2"}, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprint(mp.Details)
	for _, want := range []string{"DEGRADED; AsgInstanceLaunchFailures: no capacity [asg]", "min 1, desired 3, max 5", "lt-1 version 2", "maxUnavailable 20%"} {
		if !strings.Contains(text, want) {
			t.Errorf("details %s lack %q", text, want)
		}
	}
	if mp.Target != "launch template lt-1 version 3" || mp.ScaleUp != 4 {
		t.Errorf("target %q, scale-up %d", mp.Target, mp.ScaleUp)
	}
	var phases []string
	for _, s := range mp.Steps {
		phases = append(phases, s.Phase)
	}
	if strings.Join(phases, " ") != "Configure Setup ScaleUp Upgrade ScaleDown RestoreSettings" {
		t.Errorf("phases %v", phases)
	}
	m.image = "ami-0abc"
	if got := m.targetText(); !strings.Contains(got, "image ami-0abc") {
		t.Errorf("target %q", got)
	}
}
