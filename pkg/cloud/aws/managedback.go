package aws

import (
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// goesBack fills in what a rollback after the run can do with the group
// (plan.Launches' Previous and BackBy). UpdateNodegroupVersion takes any
// version of the group's own launch template, an earlier one included,
// but refuses an earlier Kubernetes version or AMI release (API
// Reference, UpdateNodegroupVersion: "You cannot roll back a node group
// to an earlier Kubernetes version or AMI version"; docs/providers/
// eks-managed.md, "Rolling back a finished update"). So a run towards a
// launch template version is undone in place, with the version the group
// names now; one towards a release only on a new group, which
// CreateNodegroup makes at the cluster's Kubernetes version alone ("this
// is the only accepted specified value").
func (m *ManagedNodeGroup) goesBack(l *plan.Launches, byTemplate bool) {
	g := m.group
	switch {
	case byTemplate && g.LaunchTemplate != nil && g.LaunchTemplate.Version != "":
		l.Previous, l.PreviousTemplate = g.LaunchTemplate.Version, g.LaunchTemplate.ID
	case g.Version == m.clusterVersion:
		l.BackBy = fmt.Sprintf("EKS does not roll managed node group %q back to an earlier AMI release (API Reference, UpdateNodegroupVersion); go back to release %s on a new group: \"kubectl nodeupgrade run %s --strategy blue-green --release-version %s\"", g.Name, g.ReleaseVersion, g.Name, g.ReleaseVersion)
	default:
		l.BackBy = fmt.Sprintf("EKS does not roll managed node group %q back to an earlier Kubernetes version (API Reference, UpdateNodegroupVersion), and makes a new group at the cluster's Kubernetes version %s alone (CreateNodegroup), so nothing takes it back to Kubernetes %s (release %s): a newer release mends what the update broke (\"kubectl nodeupgrade run %s --release-version ...\")", g.Name, m.clusterVersion, g.Version, g.ReleaseVersion, g.Name)
	}
}

// noStop is what the plan says can be done instead of stopping the
// update: following it, and what goes back once it finished (goesBack).
func (m *ManagedNodeGroup) noStop() string {
	const stop = "EKS cannot stop an in-place update once it started (CancelUpdate serves Auto Mode only): Ctrl-C stops following it, not the update"
	if lt := m.group.LaunchTemplate; lt != nil && lt.Version != "" && (m.target.LaunchTemplate != nil || m.image != "") {
		return fmt.Sprintf("%s; once it finished, \"kubectl nodeupgrade rollback %s\" has EKS take the group back to launch template version %s", stop, m.group.Name, lt.Version)
	}
	return stop + "; EKS cannot roll a node group back to an earlier version either: a newer release, or --strategy blue-green, mends what the update broke"
}
