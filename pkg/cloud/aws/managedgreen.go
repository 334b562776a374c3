package aws

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// maxNodegroupName is EKS's limit on a node group's name (API Reference,
// CreateNodegroup: nodegroupName, up to 63 letters, digits, hyphens and
// underscores, starting with a letter or digit).
const maxNodegroupName = 63

// ManagedBlueGreen is blue/green on an EKS managed node group, which EKS
// has not: green is a second managed node group that CreateNodegroup
// makes from blue's configuration with the target, and blue goes by
// DeleteNodegroup once the run has drained every node of it, so EKS's
// delete finds nothing left to force out. Sizes are set through
// UpdateNodegroupConfig, never on the Auto Scaling groups behind EKS's
// back: it is a cloud.Pool, never a cloud.Scaler.
type ManagedBlueGreen struct {
	// blue is the group with the target resolved as for EKS's own update.
	blue  *ManagedNodeGroup
	green string // UseGreen
}

var _ cloud.BlueGreen = (*ManagedBlueGreen)(nil)

// Name implements cloud.Provider.
func (b *ManagedBlueGreen) Name() string { return Name }

// Describe implements cloud.Provider.
func (b *ManagedBlueGreen) Describe() string {
	return fmt.Sprintf("EKS deletes managed node group %q once the run drained its nodes", b.blue.group.Name)
}

// GroupName implements cloud.Pool: the node group's name, which the
// record keeps and a re-run gives back as --asg (see Open).
func (b *ManagedBlueGreen) GroupName() string { return b.blue.group.Name }

func (b *ManagedBlueGreen) cluster() string { return b.blue.group.Cluster }

// Sizes implements cloud.Pool: blue's scaling as EKS describes it.
func (b *ManagedBlueGreen) Sizes(ctx context.Context) (plan.Sizes, error) {
	return b.GroupSizes(ctx, b.blue.group.Name)
}

// GroupSizes implements cloud.BlueGreen.
func (b *ManagedBlueGreen) GroupSizes(ctx context.Context, group string) (plan.Sizes, error) {
	return b.blue.groupSizes(ctx, group)
}

// SetGroupSizes implements cloud.BlueGreen: UpdateNodegroupConfig's
// scalingConfig, waited until the group is ACTIVE again.
func (b *ManagedBlueGreen) SetGroupSizes(ctx context.Context, group string, s plan.Sizes) error {
	_, err := b.blue.eks.UpdateConfig(ctx, b.cluster(), group, ConfigChange{Min: &s.Min, Desired: &s.Desired, Max: &s.Max})
	return err
}

// Machines implements cloud.Pool: the instances of blue's Auto Scaling
// group, and of green's once UseGreen named it.
func (b *ManagedBlueGreen) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	g, err := b.blue.api.Group(ctx, b.blue.asg.Name)
	if err != nil {
		return nil, nil, err
	}
	if b.green != "" {
		green, err := b.blue.eks.DescribeNodegroup(ctx, b.cluster(), b.green)
		if err != nil && !notFound(err) {
			return nil, nil, err
		}
		if green != nil && len(green.AutoScalingGroups) > 0 {
			ga, err := b.blue.api.Group(ctx, green.AutoScalingGroups[0])
			if err != nil {
				return nil, nil, err
			}
			both := *g
			both.Instances = append(append([]Instance{}, g.Instances...), ga.Instances...)
			g = &both
		}
	}
	byNode, pending := MapNodes(g, nodes)
	return byNode, pending, nil
}

// Current implements cloud.Pool.
func (b *ManagedBlueGreen) Current(m plan.Machine, version string) bool {
	return b.blue.Current(m, version)
}

// PrepareTarget implements cloud.BlueGreen: the target as green is made
// with it, "<Kubernetes version>/<release>" or a version of blue's launch
// template; with --ami that version is made first (or found, after an
// interrupted run).
func (b *ManagedBlueGreen) PrepareTarget(ctx context.Context) (string, error) {
	m := b.blue
	switch {
	case m.image != "":
		return m.imageVersion(ctx)
	case m.target.LaunchTemplate != nil:
		return m.target.LaunchTemplate.Version, nil
	case m.group.CustomAMI():
		return m.group.LaunchTemplate.Version, nil
	}
	return cmp.Or(m.target.Version, m.group.Version) + "/" + m.target.ReleaseVersion, nil
}

// CheckQuota implements cloud.BlueGreen. EKS's quota of managed node
// groups per cluster can be raised and is read only through Service
// Quotas: CreateNodegroup's refusal (ResourceLimitExceededException)
// says it instead, before green exists.
func (b *ManagedBlueGreen) CheckQuota(context.Context) error { return nil }

// GreenName implements cloud.BlueGreen: blue's name with the target,
// as EKS takes names (see greenName).
func (b *ManagedBlueGreen) GreenName(version string) string {
	return greenName(b.base(), b.targetKey(version))
}

// base is the name greens are named after: blue's own, or, where blue is
// the green of an earlier run, the name that run's blue had, so the
// names do not grow run after run.
func (b *ManagedBlueGreen) base() string {
	if from := b.blue.group.Tags[TagBlue]; from != "" {
		return from
	}
	return b.blue.group.Name
}

// targetKey is what tells the greens of two targets apart: the image of
// --ami, else the launch template version, else the release.
func (b *ManagedBlueGreen) targetKey(version string) string {
	if b.blue.image != "" {
		return b.blue.image
	}
	k8s, release, ok := strings.Cut(version, "/")
	if !ok {
		return "lt" + version
	}
	if strings.HasPrefix(release, k8s+".") {
		return release // AL2 and AL2023 releases carry their version
	}
	return k8s + "-" + release
}

// greenName joins base and key as a node group's name: characters EKS
// does not take become hyphens, and base is shortened so the key, which
// tells targets apart, is kept whole.
func greenName(base, key string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r < utf8.RuneSelf && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return r
			}
			return '-'
		}, s)
	}
	base, key = clean(base), clean(key)
	if keep := maxNodegroupName - len(key) - 1; len(base) > keep {
		base = strings.TrimRight(base[:max(keep, 1)], "-_")
	}
	return base + "-" + key
}

// CreateGreen implements cloud.BlueGreen: CreateNodegroup from blue's
// configuration as it is now, with the target of version and the given
// sizes, tagged as blue's green; then the wait until EKS reports it
// ACTIVE (its nodes joined). A group of that name an interrupted run
// made is waited for, not made again; any other is refused.
func (b *ManagedBlueGreen) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	e := b.blue.eks
	blue, err := e.DescribeNodegroup(ctx, b.cluster(), b.blue.group.Name)
	if err != nil {
		return err
	}
	spec := GreenSpec{Name: name, Min: sizes.Min, Desired: sizes.Desired, Max: sizes.Max, Tags: b.marks()}
	if k8s, release, ok := strings.Cut(version, "/"); ok {
		spec.Version, spec.ReleaseVersion = k8s, release
	} else {
		spec.TemplateVersion = version
	}
	g, err := e.CreateGreen(ctx, blue, spec)
	if err != nil {
		return err
	}
	if err := b.ownGreen(g); err != nil {
		return err
	}
	_, err = e.WaitActive(ctx, b.cluster(), name)
	return err
}

// marks are the tags that mark green as blue's.
func (b *ManagedBlueGreen) marks() map[string]string {
	return map[string]string{TagBlue: b.base(), TagRole: RoleGreen}
}

// ownGreen refuses a node group that is not a green of blue's.
func (b *ManagedBlueGreen) ownGreen(g *EKSNodegroup) error {
	if g.Tags[TagBlue] != b.base() || g.Tags[TagRole] != RoleGreen {
		return inputErrorf("managed node group %q already exists and is not a green group of %q; delete it, or run with another target", g.Name, b.blue.group.Name)
	}
	if g.Status == string(ekstypes.NodegroupStatusDeleting) {
		return inputErrorf("green managed node group %q is being deleted; run again once it is gone", g.Name)
	}
	return nil
}

// notFound reports whether err says a node group does not exist.
func notFound(err error) bool { return isCode(err, "ResourceNotFoundException") }

// UseGreen implements cloud.BlueGreen.
func (b *ManagedBlueGreen) UseGreen(name string) { b.green = name }

// DeleteGroup implements cloud.BlueGreen: DeleteNodegroup, unless EKS
// deletes the group already, and the wait until it is gone. The engine
// calls it once the group's nodes are drained: EKS's own drain of a
// deleted group gives up after a few minutes and terminates regardless.
func (b *ManagedBlueGreen) DeleteGroup(ctx context.Context, group string) error {
	e := b.blue.eks
	g, err := e.DescribeNodegroup(ctx, b.cluster(), group)
	if notFound(err) {
		return nil // gone
	}
	if err != nil {
		return err
	}
	if g.Status != string(ekstypes.NodegroupStatusDeleting) {
		if err := e.DeleteNodegroup(ctx, b.cluster(), group); err != nil {
			return err
		}
	}
	return e.WaitDeleted(ctx, b.cluster(), group)
}

// openManagedBlueGreen opens a managed node group for a blue/green run:
// the target as CreateNodegroup takes it for green, refused before
// anything changes where EKS would refuse it, and green's name, free or
// taken by the green an interrupted run made.
func openManagedBlueGreen(ctx context.Context, m *ManagedNodeGroup, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	if err := refuseGreenTarget(m, t); err != nil {
		return nil, nil, err
	}
	m.green = true
	if err := m.resolveTarget(ctx, t); err != nil {
		return nil, nil, err
	}
	b := &ManagedBlueGreen{blue: m}
	if err := checkGreenTags(m.group, b.marks()); err != nil {
		return nil, nil, err
	}
	cg := m.cloudGroup(m.api, nodes)
	cg.Managed, cg.TargetText = nil, m.targetText()
	cg.Green, cg.GreenLabel = b.GreenName(cg.TargetVersion), NodegroupLabel
	if cg.TargetVersion != plan.NewVersion && !strings.Contains(cg.TargetVersion, "/") {
		cg.TemplateKind = "launch template " + m.group.LaunchTemplate.ID
	} else if !m.group.CustomAMI() && m.image == "" {
		cg.TemplateKind = "Kubernetes/AMI release"
	}
	green, err := m.eks.DescribeNodegroup(ctx, m.group.Cluster, cg.Green)
	switch {
	case notFound(err):
	case err != nil:
		return nil, nil, err
	default:
		// Made by an interrupted run, which this one finishes; or not ours.
		if err := b.ownGreen(green); err != nil {
			return nil, nil, err
		}
	}
	return cg, b, nil
}

// refuseGreenTarget refuses the targets green cannot be created with:
// CreateNodegroup takes only the control plane's Kubernetes version (API
// Reference, CreateNodegroup: version, "this is the only accepted
// specified value"), and EKS's own update settings serve no green.
func refuseGreenTarget(m *ManagedNodeGroup, t plan.CloudTarget) error {
	g := m.group
	switch version := t.Options[optKubernetesVersion]; {
	case t.Options[optUpdateStrategy] != "":
		return inputErrorf("--update-strategy sets how EKS updates a group in place, which --strategy %s does not ask for; drop it", t.Strategy)
	case g.CustomAMI() && t.Image == "" && t.Version == "":
		return inputErrorf("managed node group %q runs a custom AMI from its launch template: give green's with --ami or --launch-template-version", g.Name)
	case g.CustomAMI():
		return nil
	case version != "" && version != m.clusterVersion:
		return inputErrorf("--strategy %s creates green with CreateNodegroup, which takes only the control plane's Kubernetes version %q of cluster %q, not %q; change --kubernetes-version, or use --strategy eks", t.Strategy, m.clusterVersion, g.Cluster, version)
	case version == "" && g.Version != m.clusterVersion:
		return inputErrorf("managed node group %q runs Kubernetes %s and the control plane %s: --strategy %s creates green with CreateNodegroup at the control plane's version only; add --kubernetes-version %s, or use --strategy eks", g.Name, g.Version, m.clusterVersion, t.Strategy, m.clusterVersion)
	}
	return nil
}
