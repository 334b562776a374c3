package aws

import (
	"errors"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestManagedGreenName: green's name comes from blue's (the first blue's,
// for a green of a green) and the target alone, as EKS takes names, so an
// interrupted run finds the green it made and two targets never share one.
func TestManagedGreenName(t *testing.T) {
	long := strings.Repeat("b", 70)
	for _, tc := range []struct {
		name, version, image string
		tags                 map[string]string
		want                 string
	}{
		{name: "an AL2023 release", version: "1.31/1.31.2-20250201", want: "web-1-31-2-20250201"},
		{name: "a release that does not carry its version", version: "1.31/1.32.0-abc123", want: "web-1-31-1-32-0-abc123"},
		{name: "a launch template version", version: "7", want: "web-lt7"},
		{name: "an image, whatever version it made", version: "9", image: "ami-0abc1234", want: "web-ami-0abc1234"},
		{name: "a green of an earlier run", version: "1.31/1.31.3-20250301", tags: map[string]string{TagBlue: "web"}, want: "web-1-31-3-20250301"},
		{name: "a long blue, shortened to keep the target", version: "3", want: strings.Repeat("b", 59) + "-lt3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blue := "web"
			if strings.HasPrefix(tc.want, "bbb") {
				blue = long
			}
			b := &ManagedBlueGreen{blue: &ManagedNodeGroup{group: &ManagedGroup{Name: blue, Tags: tc.tags}, image: tc.image}}
			got := b.GreenName(tc.version)
			if got != tc.want || len(got) > maxNodegroupName {
				t.Errorf("GreenName(%q) = %q, want %q (at most %d characters)", tc.version, got, tc.want, maxNodegroupName)
			}
		})
	}
}

// TestRefuseGreenTarget: what CreateNodegroup would refuse for green is
// an input error before anything is called.
func TestRefuseGreenTarget(t *testing.T) {
	at := func(version, ami string) *ManagedNodeGroup {
		return &ManagedNodeGroup{group: &ManagedGroup{Name: "web", Cluster: "c1", Version: version, AMIType: ami}, clusterVersion: "1.31"}
	}
	opts := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		m       *ManagedNodeGroup
		t       plan.CloudTarget
		wantErr string
	}{
		{name: "the control plane's version", m: at("1.30", "AL2023_x86_64_STANDARD"), t: plan.CloudTarget{Options: opts(optKubernetesVersion, "1.31")}},
		{name: "blue at the control plane's version already", m: at("1.31", "AL2023_x86_64_STANDARD")},
		{name: "another version", m: at("1.30", "AL2023_x86_64_STANDARD"), t: plan.CloudTarget{Options: opts(optKubernetesVersion, "1.30")}, wantErr: `takes only the control plane's Kubernetes version "1.31"`},
		{name: "blue below the control plane, no version", m: at("1.30", "AL2023_x86_64_STANDARD"), wantErr: "add --kubernetes-version 1.31"},
		{name: "EKS's update strategy", m: at("1.31", "AL2023_x86_64_STANDARD"), t: plan.CloudTarget{Options: opts(optUpdateStrategy, "MINIMAL")}, wantErr: "--update-strategy"},
		{name: "a custom AMI without a target", m: at("1.30", "CUSTOM"), wantErr: "give green's with --ami or --launch-template-version"},
		{name: "a custom AMI with its image", m: at("1.30", "CUSTOM"), t: plan.CloudTarget{Image: "ami-0abc1234"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.t.Strategy = "blue-green"
			err := refuseGreenTarget(tc.m, tc.t)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ae *Error
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ae) || !ae.Input() {
				t.Errorf("error %v, want an input error with %q", err, tc.wantErr)
			}
		})
	}
}
