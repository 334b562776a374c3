package aws

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Name is what --provider takes for EC2 Auto Scaling groups.
const Name = "aws"

func init() { cloud.Register(awsCloud{}) }

// awsCloud is the provider "aws" as planning and running see it.
type awsCloud struct{}

func (awsCloud) Name() string { return Name }

// NodeGroupLabels implements cloud.NodeGroupLabeler: EKS's managed node
// groups' label and eksctl's.
func (awsCloud) NodeGroupLabels() []string {
	return []string{NodegroupLabel, "alpha.eksctl.io/nodegroup-name"}
}

// Owns reports whether a provider ID names an EC2 instance.
func (awsCloud) Owns(providerID string) bool {
	_, _, ok := InstanceIDFromProviderID(providerID)
	return ok
}

// Help is the --provider help of aws.
func (awsCloud) Help() string {
	return "terminate the instance; its Auto Scaling group launches the replacement"
}

// BindFlags binds the flags of the aws provider to the neutral target.
func (awsCloud) BindFlags(f *cloud.Flags) {
	t := f.Target()
	f.Option(optRegion, "AWS region (default: the SDK's configuration, AWS_REGION or the profile's, else the region of the nodes' zones)")
	f.Option(optProfile, "AWS shared configuration profile (default: AWS_PROFILE or the default profile)")
	f.String(&t.Group, "asg", "Auto Scaling group of the node group (default: found from the nodes' instance IDs)")
	f.String(&t.Image, "ami", "Upgrade to this AMI: run creates a launch template version from the group's current one with only the image changed")
	f.String(&t.Version, "launch-template-version", "Upgrade to this existing launch template version (a number, $Latest or $Default)")
	f.GreenGroup("green-asg", "With --strategy blue-green: use this existing Auto Scaling group as green instead of creating one")
	f.BoolOption(optReserveSurge, "Before each scale-up, reserve its instances with an On-Demand Capacity Reservation per zone (open, ending after 6 hours), released once the new nodes are Ready and by abort: a zone without the capacity refuses the run before it changes anything")
	f.BoolOption(optKeepDefault, "Never change the launch template's default version ($Default): a group that launches $Default is refused unless the target is its default already (infrastructure as code makes and sets the versions)")
	f.TargetOption(optKubernetesVersion, "EKS managed node groups: upgrade to this Kubernetes version (at most the control plane's; default: the group's)")
	f.TargetOption(optReleaseVersion, "EKS managed node groups: upgrade to this EKS AMI release version (default: the latest for the Kubernetes version)")
	f.Option(optUpdateStrategy, "EKS managed node groups: the update strategy for the run, DEFAULT (scale up first) or MINIMAL (no extra nodes); put back afterwards")
}

// FlagValues completes --launch-template-version's symbolic versions.
func (awsCloud) FlagValues(flag string) []string {
	if flag == "launch-template-version" {
		return []string{"$Default", "$Latest"}
	}
	return nil
}

// Validate checks --ami and --launch-template-version without calling AWS.
func (awsCloud) Validate(t plan.CloudTarget) error {
	switch v := t.Version; {
	case t.Image != "" && v != "":
		return inputErrorf("--ami and --launch-template-version cannot be used together")
	case t.Image != "" && !ValidImageID(t.Image):
		return inputErrorf("invalid --ami %q: want ami- followed by letters and digits, such as ami-0abc1234", t.Image)
	case v != "" && v != "$Latest" && v != "$Default" && (!isNumber(v) || strings.HasPrefix(v, "0")):
		return inputErrorf("invalid --launch-template-version %q: want a version number, $Latest or $Default", v)
	}
	return nil
}

// Open finds the nodes' Auto Scaling group and the target launch template
// version. It only reads.
func (awsCloud) Open(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	var ids []string
	fallbackRegion := ""
	for i := range nodes {
		if zone, id, ok := InstanceIDFromProviderID(nodes[i].Spec.ProviderID); ok {
			ids = append(ids, id)
			if fallbackRegion == "" {
				fallbackRegion = RegionFromZone(zone)
			}
		}
	}
	provider, err := New(ctx, Options{Region: t.Options[optRegion], Profile: t.Options[optProfile], ASGName: t.Group, FallbackRegion: fallbackRegion, Exclude: t.Exclude})
	if err != nil {
		return nil, nil, err
	}
	if err := refuseOtherRegion(provider.Region(), t.Options[optRegion] != "", nodes); err != nil {
		return nil, nil, err
	}
	g, err := provider.FindGroup(ctx, ids)
	if errors.Is(err, cloud.ErrGroupNotFound) && t.Group != "" {
		g, err = provider.managedNamed(ctx, ids, t.Group, err)
	}
	if err != nil {
		return nil, nil, err
	}
	open := openSelfManaged
	if g.Tags[TagNodegroupName].Value != "" {
		open = openManaged
	}
	if err := refuseReserve(t, g.Name, g.Tags[TagNodegroupName].Value != ""); err != nil {
		return nil, nil, err
	}
	cg, p, err := open(ctx, provider, client, g, nodes, t)
	if err != nil {
		return nil, nil, err
	}
	// The region found (the SDK's, or the nodes') goes into the plan, so
	// that run --plan-file elsewhere opens the same group.
	cg.Options = map[string]string{optRegion: provider.Region()}
	return cg, p, nil
}

// Settings of the aws provider kept in the target's Options, beside
// the managed node groups' (managed.go).
const (
	optRegion      = "region"
	optProfile     = "profile"
	optKeepDefault = "keep-default-version"
)

// managedOnly are the options that serve EKS managed node groups alone.
var managedOnly = []string{optKubernetesVersion, optReleaseVersion, optUpdateStrategy}

// managedNamed finds, among the Auto Scaling groups of the nodes'
// instances, the one that backs the managed node group name: a managed
// node group goes by its own name (a blue/green run records it), not its
// Auto Scaling group's. After blue's delete the nodes span blue's group,
// still leaving, and green's: the one named is picked. Otherwise notFound
// stands.
func (p *Client) managedNamed(ctx context.Context, ids []string, name string, notFound error) (*AutoScalingGroup, error) {
	groups := map[string]bool{}
	err := p.describeASGInstances(ctx, ids, "find the Auto Scaling group of", func(in astypes.AutoScalingInstanceDetails) {
		groups[sdkaws.ToString(in.AutoScalingGroupName)] = true
	})
	if err != nil {
		return nil, err
	}
	for _, group := range slices.Sorted(maps.Keys(groups)) {
		g, err := p.describeGroup(ctx, group)
		if err != nil {
			return nil, err
		}
		if g != nil && groupSettings(g).Tags[TagNodegroupName].Value == name {
			return p.groupFrom(ctx, g)
		}
	}
	return nil, notFound
}

// openSelfManaged opens an Auto Scaling group the run drives itself: the
// target launch template version, the group's load balancers and
// lifecycle hooks.
func openSelfManaged(ctx context.Context, provider *Client, client kubernetes.Interface, g *AutoScalingGroup, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	if slices.ContainsFunc(managedOnly, func(o string) bool { return t.Options[o] != "" }) {
		return nil, nil, inputErrorf("auto scaling group %q is no EKS managed node group: --kubernetes-version, --release-version and --update-strategy serve managed node groups only; use --ami or --launch-template-version", g.Name)
	}
	target, err := provider.ResolveTarget(ctx, g, t.Image, t.Version)
	if err != nil {
		return nil, nil, err
	}
	if err := refuseMovingDefault(g, target, t.Options[optKeepDefault] == "true"); err != nil {
		return nil, nil, err
	}
	lbs, err := provider.LoadBalancers(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	byNode, unjoined := MapNodes(g, ptrs)
	cg := &plan.CloudGroup{
		GroupID: plan.GroupID{
			Provider:     Name,
			Region:       provider.Region(),
			Group:        g.Name,
			GroupKind:    "Auto Scaling group",
			Template:     g.LaunchTemplateID,
			TemplateKind: "launch template",
			MachineKind:  "instance",
		},
		Launches: plan.Launches{
			CurrentVersion: g.LaunchTemplateVersion,
			TargetVersion:  target.Version,
			TargetImage:    target.Image,
			VersionLabel:   TemplateVersionLabel,
			ImageLabel:     ImageLabel,
		},
		TargetLike:  target.SourceVersion,
		TemplateKey: "launch-template",
		VersionKey:  "launch-template-version",
		Sizes:       plan.Sizes{Min: g.Min, Desired: g.Desired, Max: g.Max},
		Nodes:       byNode,
		Unjoined:    unjoined,
		Removal: plan.Removal{
			Rebalance:     AZRebalance,
			RebalanceHeld: slices.Contains(g.Suspended, AZRebalance),
			LoadBalancers: lbs,
		},
	}
	if target.Create {
		cg.TargetVersion = plan.NewVersion
	}
	if err := provider.openLifecycle(ctx, g, cg); err != nil {
		return nil, nil, err
	}
	cg.LaunchesAfter = launchesAfter(g, target)
	return cg, &NodeGroup{API: provider, Client: client, ASG: g.Name, AMI: t.Image, Version: t.Version, ClonedFrom: clonedFrom(g), Surge: t.Options[optReserveSurge] == "true"}, nil
}

// refuseOtherRegion refuses a region the nodes' zones (in their provider
// IDs) are not in: their instances would be found in no group there, as
// if no group kept them. given says --region named it.
func refuseOtherRegion(region string, given bool, nodes []corev1.Node) error {
	for i := range nodes {
		zone, _, ok := InstanceIDFromProviderID(nodes[i].Spec.ProviderID)
		rest, in := strings.CutPrefix(zone, region)
		// us-east-1a, and Local Zones such as us-west-2-lax-1a
		if !ok || zone == "" || in && (len(rest) == 1 || strings.HasPrefix(rest, "-")) {
			continue
		}
		from := "the AWS configuration (AWS_REGION or the profile's)"
		if given {
			from = "--region"
		}
		return inputErrorf("region %q from %s does not hold node %q, whose provider ID names zone %q; use --region %s", region, from, nodes[i].Name, zone, cmp.Or(RegionFromZone(zone), "of that zone"))
	}
	return nil
}

// refuseMovingDefault refuses, with --keep-default-version, a target the
// run could only reach by making it the template's default: the group
// launches $Default, and the target is another version.
func refuseMovingDefault(g *AutoScalingGroup, target Target, keep bool) error {
	if !keep || g.spec != specDefault || g.mixed || !target.Create && target.Version == g.LaunchTemplateVersion {
		return nil
	}
	what := "version " + target.Version
	if target.Create {
		what = "a new version with image " + target.Image
	}
	return inputErrorf("--keep-default-version: auto scaling group %q launches $Default (version %s), so the target, %s, would have to become the default; make it the default where the template is managed (then run with no target), or leave out --keep-default-version", g.Name, g.LaunchTemplateVersion, what)
}

// machineState maps Auto Scaling's lifecycle states to the neutral ones:
// every Terminating* state is on its way out, every Pending* one not yet
// in service.
func machineState(lifecycle string) plan.MachineState {
	switch {
	case strings.HasPrefix(lifecycle, "Terminat"):
		return plan.MachineLeaving
	case strings.HasPrefix(lifecycle, "Pending"):
		return plan.MachinePending
	}
	return plan.MachineInService
}
