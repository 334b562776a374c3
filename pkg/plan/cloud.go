package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Labels EKS puts on the nodes of a managed node group; where nodes carry
// them, they must match the target too.
const (
	EKSImageLabel           = "eks.amazonaws.com/nodegroup-image"
	EKSLaunchTemplateLabel  = "eks.amazonaws.com/sourceLaunchTemplateId"
	EKSTemplateVersionLabel = "eks.amazonaws.com/sourceLaunchTemplateVersion"
)

// Keys of the outdated reasons that are not labels.
const (
	DiffLaunchTemplate  = "launch-template"
	DiffTemplateVersion = "launch-template-version"
	// DiffBlue marks a node of blue/green's blue group, drained whatever
	// it runs.
	DiffBlue = "blue-group"
)

// NewVersion stands for the launch template version a run will create.
const NewVersion = "new"

// Sizes are the sizes of a cloud group.
type Sizes struct {
	Min     int32 `json:"min"`
	Desired int32 `json:"desired"`
	Max     int32 `json:"max"`
}

func (s Sizes) String() string {
	return fmt.Sprintf("min %d, desired %d, max %d", s.Min, s.Desired, s.Max)
}

// Machine is a cloud machine (an EC2 instance) of the group.
type Machine struct {
	ID        string `json:"id"`
	Zone      string `json:"zone,omitempty"`
	Template  string `json:"launchTemplateID,omitempty"`
	Version   string `json:"launchTemplateVersion,omitempty"`
	Image     string `json:"imageID,omitempty"`
	Lifecycle string `json:"lifecycle,omitempty"`
}

// Leaving reports whether the machine is already on its way out.
func (m Machine) Leaving() bool { return strings.HasPrefix(m.Lifecycle, "Terminat") }

// CloudGroup is the provider's view of the node group, read (never changed)
// before planning.
type CloudGroup struct {
	Provider string
	Region   string
	// Name is the Auto Scaling group.
	Name     string
	Template string
	// CurrentVersion is the version the group launches now; TargetVersion
	// the one nodes must run after the upgrade, NewVersion when the run
	// creates it (--ami); TargetImage its image where known.
	CurrentVersion string
	TargetVersion  string
	TargetImage    string
	Sizes          Sizes
	// Recorded are the sizes an interrupted run recorded before it scaled
	// the group up; nil when no run is in progress.
	Recorded *Sizes
	// Nodes maps the group's nodes to their machines; a node missing here
	// is not a member of the group.
	Nodes map[string]Machine
}

// CloudPlan is the cloud side of a plan.
type CloudPlan struct {
	Provider         string `json:"provider"`
	Region           string `json:"region,omitempty"`
	AutoScalingGroup string `json:"autoScalingGroup"`
	LaunchTemplateID string `json:"launchTemplateID"`
	CurrentVersion   string `json:"currentVersion"`
	TargetVersion    string `json:"targetVersion"`
	TargetImage      string `json:"targetImage,omitempty"`
	// Before are the sizes the group goes back to at the end; During the
	// sizes while the upgrade runs, ScaleUp nodes more.
	Before  Sizes `json:"before"`
	During  Sizes `json:"during"`
	ScaleUp int32 `json:"scaleUp"`
	// Resumed says the sizes come from an interrupted run's record.
	Resumed bool `json:"resumed,omitempty"`
}

// ScaleUpCount is how many nodes the EKS update adds before draining: the
// larger of twice the zones in use and maxUnavailable.
func ScaleUpCount(zones, maxUnavailable int) int32 {
	return int32(max(2*zones, maxUnavailable))
}

// machineOutdated says why a node's machine does not run the target
// configuration. skip is set for nodes the plan leaves alone: not members
// of the group, or already terminating.
func machineOutdated(node *corev1.Node, cg *CloudGroup) (diffs []LabelDiff, machine Machine, notMember bool) {
	m, ok := cg.Nodes[node.Name]
	switch {
	case !ok:
		return nil, m, true
	case m.Leaving():
		return nil, m, false
	}
	switch {
	case m.Template != cg.Template:
		diffs = append(diffs, LabelDiff{Key: DiffLaunchTemplate, Current: m.Template, Target: cg.Template})
	case m.Version != cg.TargetVersion:
		diffs = append(diffs, LabelDiff{Key: DiffTemplateVersion, Current: m.Version, Target: cg.TargetVersion})
	}
	// EKS's own labels, where the nodes carry them, must agree too: a node
	// whose labels say otherwise would be replaced by EKS itself.
	if v, ok := node.Labels[EKSTemplateVersionLabel]; ok && cg.TargetVersion != NewVersion && v != cg.TargetVersion {
		diffs = append(diffs, LabelDiff{Key: EKSTemplateVersionLabel, Current: v, Target: cg.TargetVersion})
	}
	if v, ok := node.Labels[EKSImageLabel]; ok && cg.TargetImage != "" && v != cg.TargetImage {
		diffs = append(diffs, LabelDiff{Key: EKSImageLabel, Current: v, Target: cg.TargetImage})
	}
	return diffs, m, false
}

// notMemberNote says which nodes of the group are left alone because their
// instances are in no or another Auto Scaling group (e.g. blue/green's
// green one), naming a few.
func notMemberNote(names []string, group string) string {
	shown := names
	if len(shown) > 3 {
		shown = shown[:3]
	}
	q := make([]string, len(shown))
	for i, n := range shown {
		q[i] = fmt.Sprintf("%q", n)
	}
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	if len(names) == 1 {
		return fmt.Sprintf("node %s is not an instance of Auto Scaling group %q; it is left alone", q[0], group)
	}
	return fmt.Sprintf("%d nodes (%s%s) are not instances of Auto Scaling group %q; they are left alone", len(names), strings.Join(q, ", "), more, group)
}

// cloudPlan sizes the scale-up: zones are those of the group's nodes.
func cloudPlan(cg *CloudGroup, zones []string, maxUnavailable, outdated int) *CloudPlan {
	cp := &CloudPlan{
		Provider:         cg.Provider,
		Region:           cg.Region,
		AutoScalingGroup: cg.Name,
		LaunchTemplateID: cg.Template,
		CurrentVersion:   cg.CurrentVersion,
		TargetVersion:    cg.TargetVersion,
		TargetImage:      cg.TargetImage,
		Before:           cg.Sizes,
		During:           cg.Sizes,
	}
	if cg.Recorded != nil {
		// An interrupted run scaled up already: the sizes now are the
		// inflated ones, and the recorded ones are what the end restores.
		cp.Before, cp.Resumed = *cg.Recorded, true
		return cp
	}
	if outdated > 0 {
		cp.ScaleUp = ScaleUpCount(len(zones), maxUnavailable)
		cp.During.Desired += cp.ScaleUp
		cp.During.Max += cp.ScaleUp
	}
	return cp
}

// MachineZones returns the zones of the group's machines that are not
// leaving, sorted.
func MachineZones(nodes map[string]Machine) []string {
	var zones []string
	for _, m := range nodes {
		if !m.Leaving() && m.Zone != "" && !slices.Contains(zones, m.Zone) {
			zones = append(zones, m.Zone)
		}
	}
	sort.Strings(zones)
	return zones
}
