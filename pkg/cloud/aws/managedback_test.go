package aws

import (
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestManagedGoesBack: what a rollback after a finished update of a
// managed node group can do, as UpdateNodegroupVersion and
// CreateNodegroup allow: a launch template version run is undone in
// place with the version the group names now; a release run on a new
// group at that release, when it is of the cluster's Kubernetes version;
// an earlier Kubernetes version not at all.
func TestManagedGoesBack(t *testing.T) {
	lt := &TemplateRef{ID: "lt-0abc", Version: "3"}
	for _, tc := range []struct {
		name                     string
		group                    EKSNodegroup
		byTemplate               bool
		previous, template, back string
	}{
		{"launch template version", EKSNodegroup{Name: "ng", Version: "1.31", LaunchTemplate: lt, AMIType: "CUSTOM"}, true, "3", "lt-0abc", ""},
		{"release of the cluster's version", EKSNodegroup{Name: "ng", Version: "1.31", ReleaseVersion: "1.31.1-20250101"}, false, "", "",
			`go back to release 1.31.1-20250101 on a new group: "kubectl nodeupgrade run ng --strategy blue-green --release-version 1.31.1-20250101"`},
		{"release with a template that names no AMI", EKSNodegroup{Name: "ng", Version: "1.31", ReleaseVersion: "1.31.1-20250101", LaunchTemplate: lt}, false, "", "",
			"--strategy blue-green --release-version 1.31.1-20250101"},
		{"an earlier Kubernetes version", EKSNodegroup{Name: "ng", Version: "1.30", ReleaseVersion: "1.30.9-20250101"}, false, "", "",
			"nothing takes it back to Kubernetes 1.30 (release 1.30.9-20250101)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &ManagedNodeGroup{group: &tc.group, clusterVersion: "1.31"}
			if tc.byTemplate {
				m.target.LaunchTemplate = &TemplateRef{ID: "lt-0abc", Version: "4"}
			}
			var l plan.Launches
			m.goesBack(&l, tc.byTemplate)
			if l.Previous != tc.previous || l.PreviousTemplate != tc.template || (tc.back == "") != (l.BackBy == "") || !strings.Contains(l.BackBy, tc.back) {
				t.Errorf("previous %q of %q, back by %q; want %q of %q, back by %q", l.Previous, l.PreviousTemplate, l.BackBy, tc.previous, tc.template, tc.back)
			}
			// The plan's note says the same.
			if inPlace := strings.Contains(m.noStop(), `"kubectl nodeupgrade rollback ng" has EKS take the group back to launch template version 3`); inPlace != (tc.previous != "") {
				t.Errorf("the plan's note %q says the group goes back in place: %v, want %v", m.noStop(), inPlace, tc.previous != "")
			}
		})
	}
}
