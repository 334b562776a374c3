package aws

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The options of a managed node group's target, by flag name (see
// BindFlags).
const (
	optKubernetesVersion = "kubernetes-version"
	optReleaseVersion    = "release-version"
	optUpdateStrategy    = "update-strategy"
)

// evictionLimit is how long EKS tries to evict a node's pods before the
// update fails with PodEvictionFailure (User Guide,
// managed-node-update-behavior: upgrade phase).
const evictionLimit = 15 * time.Minute

// ManagedNodeGroup is an EKS managed node group, whose updates EKS runs:
// the run configures, starts and follows UpdateNodegroupVersion and never
// changes the group's Auto Scaling group or launch template behind EKS's
// back.
type ManagedNodeGroup struct {
	eks            *EKS
	api            *Client
	kube           kubernetes.Interface
	group          *EKSNodegroup
	asg            *AutoScalingGroup
	clusterVersion string
	target         ManagedTarget
	// image is --ami: a new version of the group's launch template with
	// only the image changed, made when the update starts.
	image string
	// updateStrategy is --update-strategy, "" to keep the group's.
	updateStrategy string
	// green says the target is a green group's, which CreateNodegroup
	// makes at any release: going back is what blue/green is for.
	green bool
}

var (
	_ cloud.ManagedUpdater = (*ManagedNodeGroup)(nil)
	_ cloud.ServicePlanner = (*ManagedNodeGroup)(nil)
)

// Name implements cloud.Provider.
func (m *ManagedNodeGroup) Name() string { return Name }

// Describe implements cloud.Provider.
func (m *ManagedNodeGroup) Describe() string {
	return fmt.Sprintf("EKS replaces the nodes of managed node group %q", m.group.Name)
}

// GroupName implements cloud.ManagedUpdater.
func (m *ManagedNodeGroup) GroupName() string { return m.group.Name }

// Runs implements cloud.ServicePlanner: EKS runs its own update, the eks
// strategy, in place.
func (m *ManagedNodeGroup) Runs(strategy plan.StrategyName) bool {
	return strategy == plan.StrategyEKS
}

// Settings implements cloud.ManagedUpdater.
func (m *ManagedNodeGroup) Settings(ctx context.Context) (plan.UpdateSettings, error) {
	g, err := m.eks.DescribeNodegroup(ctx, m.group.Cluster, m.group.Name)
	if err != nil {
		return plan.UpdateSettings{}, err
	}
	return planSettings(g.Update), nil
}

// Configure implements cloud.ManagedUpdater: UpdateNodegroupConfig, and
// the wait until the group is ACTIVE again.
func (m *ManagedNodeGroup) Configure(ctx context.Context, s plan.UpdateSettings) error {
	u, err := eksSettings(s)
	if err != nil {
		return err
	}
	_, err = m.eks.UpdateConfig(ctx, m.group.Cluster, m.group.Name, ConfigChange{Update: &u})
	return err
}

// StartUpdate implements cloud.ManagedUpdater: UpdateNodegroupVersion, or
// the version update in progress.
func (m *ManagedNodeGroup) StartUpdate(ctx context.Context, force bool) (string, error) {
	t := m.target
	t.Force = force
	if m.image != "" {
		version, err := m.imageVersion(ctx)
		if err != nil {
			return "", err
		}
		t.LaunchTemplate = &TemplateRef{ID: m.group.LaunchTemplate.ID, Version: version}
	}
	u, _, err := m.eks.StartVersionUpdate(ctx, m.group.Cluster, m.group.Name, t)
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// imageVersion makes (or finds, after an interrupted run) the version of
// the group's launch template with only the image changed: the user's
// template the group names, not the copy EKS launches from (User Guide,
// launch-templates), which EKS makes again for each version it is given.
func (m *ManagedNodeGroup) imageVersion(ctx context.Context) (string, error) {
	lt := m.group.LaunchTemplate
	own := &AutoScalingGroup{Name: m.asg.Name, LaunchTemplateID: lt.ID, LaunchTemplateVersion: lt.Version}
	t, err := m.api.ResolveTarget(ctx, own, m.image, "")
	if err != nil || !t.Create {
		return t.Version, err
	}
	return m.api.createVersion(ctx, own, t, m.image)
}

var _ cloud.UpdateFinder = (*ManagedNodeGroup)(nil)

// RunningUpdate implements cloud.UpdateFinder: the group's version update
// in progress (ListUpdates, DescribeUpdate), as StartUpdate finds it.
func (m *ManagedNodeGroup) RunningUpdate(ctx context.Context) (string, error) {
	u, err := m.eks.InProgressUpdate(ctx, m.group.Cluster, m.group.Name)
	if err != nil || u == nil {
		return "", err
	}
	return u.ID, nil
}

// Progress implements cloud.ManagedUpdater: DescribeUpdate, and the nodes
// of the group already replaced, counted from the Auto Scaling group.
func (m *ManagedNodeGroup) Progress(ctx context.Context, id string) (cloud.UpdateProgress, error) {
	u, err := m.eks.DescribeUpdate(ctx, m.group.Cluster, m.group.Name, id)
	if err != nil {
		return cloud.UpdateProgress{}, err
	}
	p := cloud.UpdateProgress{ID: u.ID, State: updateState(u.Status), Phase: u.Status}
	for _, e := range u.Errors {
		p.Errors = append(p.Errors, cloud.UpdateError{Code: e.Code, Message: e.Message, Nodes: e.ResourceIDs})
	}
	return p, nil
}

// updateState maps DescribeUpdate's status (API Reference, Update:
// InProgress, Failed, Cancelled, Successful).
func updateState(status string) cloud.UpdateState {
	switch status {
	case "Successful":
		return cloud.UpdateSucceeded
	case "Failed":
		return cloud.UpdateFailed
	case "Cancelled":
		return cloud.UpdateCancelled
	}
	return cloud.UpdateInProgress
}

// Plan implements cloud.ServicePlanner: the settings EKS takes for the
// run, the nodes its scale-up adds, and its phases.
func (m *ManagedNodeGroup) Plan(in plan.Input, nodes, zones int) (*plan.ManagedPlan, error) {
	before := planSettings(m.group.Update)
	during := before
	during.MaxUnavailable = in.MaxUnavailable
	if m.updateStrategy != "" {
		during.Strategy = m.updateStrategy
	}
	if _, err := eksSettings(during); err != nil {
		return nil, err
	}
	// EKS raises desired and max by the larger of twice the zones the
	// group is deployed in, its Auto Scaling group's (those of its
	// subnets), and maxUnavailable (User Guide,
	// managed-node-update-behavior, Scale up phase); the nodes' zones
	// only where the group's are not known.
	if m.asg != nil && len(m.asg.Zones) > 0 {
		zones = len(m.asg.Zones)
	}
	scaleUp := int32(0)
	if during.Strategy != "MINIMAL" {
		scaleUp = int32(max(2*zones, resolveUnavailable(during.MaxUnavailable, nodes)))
	}
	mp := &plan.ManagedPlan{
		Service:       "EKS managed node group",
		Details:       m.details(),
		Before:        before,
		During:        during,
		ScaleUp:       scaleUp,
		MaxScaleUp:    scaleUp,
		Target:        m.targetText(),
		Force:         in.Force,
		Controls:      []string{},
		NoStop:        m.noStop(),
		EvictionLimit: plan.Duration(evictionLimit),
	}
	mp.Steps = managedSteps(in, mp, nodes)
	return mp, nil
}

// resolveUnavailable is maxUnavailable in nodes of a group of n.
func resolveUnavailable(s string, n int) int {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, _ := strconv.Atoi(p)
		return max(1, n*pct/100)
	}
	v, _ := strconv.Atoi(s)
	return max(1, v)
}

// details are the group as DescribeNodegroup shows it.
func (m *ManagedNodeGroup) details() []plan.Detail {
	g := m.group
	d := []plan.Detail{
		{Name: "node group", Value: fmt.Sprintf("%s (cluster %s, Kubernetes %s)", g.Name, g.Cluster, m.clusterVersion)},
		{Name: "status", Value: g.Status + issues(g.Health)},
		{Name: "version", Value: fmt.Sprintf("Kubernetes %s, release %s", g.Version, orNone(g.ReleaseVersion))},
		{Name: "AMI type", Value: g.AMIType + ", capacity " + g.CapacityType},
		{Name: "scaling", Value: fmt.Sprintf("min %d, desired %d, max %d", g.Min, g.Desired, g.Max)},
		{Name: "update config", Value: planSettings(g.Update).String()},
	}
	if lt := g.LaunchTemplate; lt != nil {
		d = append(d, plan.Detail{Name: "launch template", Value: fmt.Sprintf("%s version %s", lt.ID+lt.Name, lt.Version)})
	}
	return d
}

// targetText says what the update moves to, in EKS's terms.
func (m *ManagedNodeGroup) targetText() string {
	t := m.target
	switch {
	case m.image != "":
		return fmt.Sprintf("image %s (a new version of launch template %s)", m.image, m.group.LaunchTemplate.ID)
	case t.LaunchTemplate != nil:
		return fmt.Sprintf("launch template %s version %s", m.group.LaunchTemplate.ID, t.LaunchTemplate.Version)
	}
	version := cmp.Or(t.Version, m.group.Version)
	return fmt.Sprintf("Kubernetes %s, release %s", version, cmp.Or(t.ReleaseVersion, "the latest"))
}

// managedSteps are EKS's phases (User Guide, managed-node-update-behavior)
// with rough estimates: a node about 5 minutes to join and each batch's
// drain a minute, unless the group's pace was measured (in.JoinTime,
// in.DrainTime); each batch then the 60 s EKS waits after the cordon; the
// settings' updates in.SettingsTime() each, and the Setup phase, EKS's
// API work alone, eksAPIStep.
func managedSteps(in plan.Input, mp *plan.ManagedPlan, nodes int) []plan.Step {
	join, drain := 5*time.Minute, in.DrainTime()
	if in.Pace != nil && in.Pace.Join > 0 {
		join = in.JoinTime()
	}
	batch := max(1, resolveUnavailable(mp.During.MaxUnavailable, nodes))
	batches := (nodes + batch - 1) / batch
	steps := []plan.Step{}
	if !mp.Before.Equal(mp.During) {
		steps = append(steps, plan.Step{Phase: "Configure", Detail: "UpdateNodegroupConfig: " + mp.During.String(), Estimate: plan.Duration(in.SettingsTime())})
	}
	steps = append(steps,
		plan.Step{Phase: "Setup", Detail: "UpdateNodegroupVersion: EKS makes a launch template version and points the Auto Scaling group at it", Estimate: plan.Duration(eksAPIStep)},
		plan.Step{Phase: "ScaleUp", Detail: fmt.Sprintf("EKS adds %d nodes, waits for them Ready, taints the old ones", mp.ScaleUp), Estimate: plan.Duration(join)},
		plan.Step{Phase: "Upgrade", Detail: fmt.Sprintf("EKS drains %d node(s) at a time (%s at most each, then PodEvictionFailure), cordons, waits 60s, terminates: %d rounds", batch, evictionLimit, batches), Estimate: plan.Duration(time.Duration(batches) * (drain + eksCordonWait))},
		plan.Step{Phase: "ScaleDown", Detail: "EKS lowers the sizes back one node at a time", Estimate: plan.Duration(time.Minute)},
	)
	if !mp.Before.Equal(mp.During) {
		steps = append(steps, plan.Step{Phase: "RestoreSettings", Detail: "UpdateNodegroupConfig: " + mp.Before.String(), Estimate: plan.Duration(in.SettingsTime())})
	}
	return steps
}

// eksCordonWait is how long EKS waits after cordoning a drained node
// before it terminates it (User Guide, managed-node-update-behavior,
// Upgrade phase step 3).
const eksCordonWait = 60 * time.Second

// eksAPIStep is the Setup phase (a launch template version, the Auto
// Scaling group pointed at it): API work alone, like a settings update.
const eksAPIStep = plan.SettingsUpdateEstimate

// planSettings are EKS's update config in the plan's terms.
func planSettings(u UpdateSettings) plan.UpdateSettings {
	s := plan.UpdateSettings{Strategy: cmp.Or(u.Strategy, "DEFAULT"), MaxUnavailable: strconv.Itoa(int(max(u.MaxUnavailable, 1)))}
	if u.MaxUnavailablePercentage > 0 {
		s.MaxUnavailable = strconv.Itoa(int(u.MaxUnavailablePercentage)) + "%"
	}
	return s
}

// eksSettings are the plan's settings as UpdateNodegroupConfig takes them
// (API Reference, NodegroupUpdateConfig: maxUnavailable 1 to 100,
// maxUnavailablePercentage 1 to 100, updateStrategy DEFAULT or MINIMAL).
func eksSettings(s plan.UpdateSettings) (UpdateSettings, error) {
	var u UpdateSettings
	switch s.Strategy {
	case "", "DEFAULT", "MINIMAL":
		u.Strategy = cmp.Or(s.Strategy, "DEFAULT")
	default:
		return u, inputErrorf("invalid --update-strategy %q: EKS takes DEFAULT or MINIMAL", s.Strategy)
	}
	p, isPct := strings.CutSuffix(s.MaxUnavailable, "%")
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 100 {
		return u, inputErrorf("invalid --max-unavailable %q: EKS takes 1 to 100 nodes, or 1%% to 100%%", s.MaxUnavailable)
	}
	if isPct {
		u.MaxUnavailablePercentage = int32(n)
	} else {
		u.MaxUnavailable = int32(n)
	}
	return u, nil
}

func orNone(s string) string { return cmp.Or(s, "<none>") }

// openManaged opens an EKS managed node group: the target as EKS takes
// it, checked as EKS would check it.
func openManaged(ctx context.Context, p *Client, kube kubernetes.Interface, g *AutoScalingGroup, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	cluster, name, ok := ManagedGroupOf(g)
	if !ok {
		msg := fmt.Sprintf("auto scaling group %q belongs to EKS managed node group %q but carries no %s tag, so its cluster is unknown; EKS upgrades the group itself: tag the group or use \"aws eks update-nodegroup-version\"", g.Name, name, TagClusterName)
		return nil, nil, &Error{msg: msg, err: cloud.ErrManaged, input: true}
	}
	e := p.EKS()
	mg, err := e.DescribeNodegroup(ctx, cluster, name)
	if err != nil {
		return nil, nil, err
	}
	cv, err := e.ClusterVersion(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	m := &ManagedNodeGroup{eks: e, api: p, kube: kube, group: mg, asg: g, clusterVersion: cv, image: t.Image, updateStrategy: t.Options[optUpdateStrategy]}
	if t.Strategy != "" && !m.Runs(t.Strategy) {
		// EKS has no blue/green: the run makes green itself.
		return openManagedBlueGreen(ctx, m, nodes, t)
	}
	if err := m.resolveTarget(ctx, t); err != nil {
		return nil, nil, err
	}
	return m.cloudGroup(p, nodes), m, nil
}

// resolveTarget reads the flags as UpdateNodegroupVersion takes them.
func (m *ManagedNodeGroup) resolveTarget(ctx context.Context, t plan.CloudTarget) error {
	g := m.group
	m.target = ManagedTarget{Version: t.Options[optKubernetesVersion], ReleaseVersion: t.Options[optReleaseVersion]}
	if t.Version != "" {
		lt := &TemplateRef{Version: t.Version}
		if g.LaunchTemplate != nil {
			lt.ID = g.LaunchTemplate.ID
		}
		m.target.LaunchTemplate = lt
	}
	if t.Image != "" && (g.LaunchTemplate == nil || !g.CustomAMI()) {
		return inputErrorf("--ami needs a managed node group whose launch template names its own AMI; managed node group %q runs AMI type %s: use --kubernetes-version or --release-version", g.Name, g.AMIType)
	}
	if err := ValidateTarget(g, m.clusterVersion, m.target); err != nil {
		return err
	}
	if g.CustomAMI() || m.target.LaunchTemplate != nil {
		return nil
	}
	// The version is always sent: UpdateNodegroupVersion's reference reads
	// no version both as the cluster's (version) and as the group's own
	// (releaseVersion); the plugin's reading, the group's own, is then the
	// only one EKS can take (see eks-managed.md, Targets).
	m.target.Version = cmp.Or(m.target.Version, g.Version)
	return m.checkRelease(ctx)
}

// checkRelease refuses, before anything changes, the releases EKS refuses
// (API Reference, UpdateNodegroupVersion): "You cannot roll back a node
// group to an earlier Kubernetes version or AMI version"; a release of
// another Kubernetes version than the target's; one newer than the latest
// AWS publishes, which does not exist. With no --release-version the
// target is the latest release of the target version: the plan says which.
func (m *ManagedNodeGroup) checkRelease(ctx context.Context) error {
	g, t := m.group, &m.target
	if !m.green && newerMinor(g.Version, t.Version) {
		return inputErrorf("--kubernetes-version %q is below managed node group %q's Kubernetes %s: EKS cannot roll a node group back to an earlier version; use a version from %s up", t.Version, g.Name, g.Version, g.Version)
	}
	if _, published := ReleaseParameter(t.Version, g.AMIType); !published && t.ReleaseVersion != "" {
		return nil // Windows: no published catalogue to check against
	}
	latest, err := m.eks.LatestRelease(ctx, t.Version, g.AMIType)
	if err != nil {
		return err
	}
	release := cmp.Or(t.ReleaseVersion, latest)
	if strings.HasPrefix(amiFamilies[ekstypes.AMITypes(g.AMIType)], "eks:") && !strings.HasPrefix(release, t.Version+".") {
		return inputErrorf("--release-version %q is not a release of Kubernetes %s, the target's version: EKS refuses it; give a release %s.*, or --kubernetes-version of that release", release, t.Version, t.Version)
	}
	if newerRelease(release, latest) {
		return inputErrorf("--release-version %q does not exist: the latest EKS AMI release of Kubernetes %s for %s is %q; check --release-version", release, t.Version, g.AMIType, latest)
	}
	if !m.green && t.Version == g.Version && newerRelease(g.ReleaseVersion, release) {
		return inputErrorf("--release-version %q is older than managed node group %q's release %q: EKS cannot roll a node group back to an earlier AMI version; give a newer release, or drop --release-version for the latest", release, g.Name, g.ReleaseVersion)
	}
	t.ReleaseVersion = release
	return nil
}

// newerRelease reports whether EKS AMI release a ("1.31.2-20250201", or
// Bottlerocket's "1.20.3-5d9ac849") is newer than b: by the dotted
// version, then, where both carry a date, by it. Releases it cannot order
// are not newer.
func newerRelease(a, b string) bool {
	av, ad, _ := strings.Cut(a, "-")
	bv, bd, _ := strings.Cut(b, "-")
	if c := compareDotted(av, bv); c != 0 {
		return c > 0
	}
	an, aerr := strconv.Atoi(ad)
	bn, berr := strconv.Atoi(bd)
	return aerr == nil && berr == nil && an > bn
}

// compareDotted compares dotted numbers ("1.31.2") field by field; a
// field that is not a number compares equal.
func compareDotted(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range min(len(as), len(bs)) {
		x, xerr := strconv.Atoi(as[i])
		y, yerr := strconv.Atoi(bs[i])
		if xerr != nil || yerr != nil {
			return 0
		}
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(as), len(bs))
}

// cloudGroup is the plan's view of the managed group. EKS's update
// replaces every node of the group that does not run the target (User
// Guide, managed-node-update-behavior), so the nodes are outdated
// together: by release where EKS picks the image, by launch template
// version where the group's template does.
func (m *ManagedNodeGroup) cloudGroup(p *Client, nodes []corev1.Node) *plan.CloudGroup {
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	byNode, unjoined := MapNodes(m.asg, ptrs)
	g, t := m.group, m.target
	current := g.Version + "/" + g.ReleaseVersion
	target := cmp.Or(t.Version, g.Version) + "/" + cmp.Or(t.ReleaseVersion, g.ReleaseVersion)
	if g.CustomAMI() || t.LaunchTemplate != nil || m.image != "" {
		current, target = m.asg.LaunchTemplateVersion, plan.NewVersion
		if t.LaunchTemplate != nil {
			target = t.LaunchTemplate.Version
		}
	}
	for id, mc := range byNode {
		if !g.CustomAMI() && t.LaunchTemplate == nil && m.image == "" {
			mc.Version = current // EKS's own template: the group's release
		}
		byNode[id] = mc
	}
	versionKey := "launch-template-version"
	if !g.CustomAMI() && t.LaunchTemplate == nil && m.image == "" {
		versionKey = "kubernetes-version/release"
	}
	launches := plan.Launches{
		CurrentVersion: current,
		TargetVersion:  target,
		VersionLabel:   TemplateVersionLabel,
		ImageLabel:     ImageLabel,
	}
	m.goesBack(&launches, versionKey == "launch-template-version")
	return &plan.CloudGroup{
		GroupID: plan.GroupID{
			Provider:     Name,
			Region:       p.Region(),
			Group:        g.Name,
			GroupKind:    "EKS managed node group",
			Template:     m.asg.LaunchTemplateID,
			TemplateKind: "launch template",
			MachineKind:  "instance",
		},
		Launches: launches,

		TemplateKey: "launch-template", VersionKey: versionKey,
		Sizes: plan.Sizes{Min: g.Min, Desired: g.Desired, Max: g.Max},
		Nodes: byNode, Unjoined: unjoined, Managed: cloud.ServiceOf(m), Findings: degraded(g),
	}
}

// degraded holds a run on a DEGRADED group before anything changes: EKS
// sets it for issues its owner must mend (API Reference, NodegroupHealth:
// a security group, subnet, role or launch template gone or changed,
// instances failing to launch), and the first thing a run does, set the
// update configuration (or pin blue's size), ends waiting for an ACTIVE
// group that does not come (see WaitActive).
func degraded(g *EKSNodegroup) []check.Finding {
	if g.Status != string(ekstypes.NodegroupStatusDegraded) {
		return nil
	}
	return []check.Finding{{
		Check: check.CheckGroupDegraded, Severity: check.Blocker, Kind: "NodeGroup", Name: g.Name,
		Message: fmt.Sprintf("EKS reports managed node group %q DEGRADED%s: the run's first change would wait for it to be ACTIVE again, which no wait brings", g.Name, issues(g.Health)),
		Fix:     "mend what EKS names (\"aws eks describe-nodegroup\" shows the group's health) and plan again, or use --ignore-check group-degraded",
	}}
}
