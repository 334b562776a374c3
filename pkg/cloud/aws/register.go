package aws

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

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

// Owns reports whether a provider ID names an EC2 instance.
func (awsCloud) Owns(providerID string) bool {
	_, _, ok := InstanceIDFromProviderID(providerID)
	return ok
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
func (awsCloud) Open(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.BlueGreen, error) {
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
	provider, err := New(ctx, Options{Region: t.Region, Profile: t.Profile, ASGName: t.Group, FallbackRegion: fallbackRegion, Exclude: t.Exclude})
	if err != nil {
		return nil, nil, err
	}
	if err := refuseOtherRegion(provider.Region(), t.Region != "", nodes); err != nil {
		return nil, nil, err
	}
	g, err := provider.FindGroup(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	if err := refuseManaged(g); err != nil {
		return nil, nil, err
	}
	target, err := provider.ResolveTarget(ctx, g, t.Image, t.Version)
	if err != nil {
		return nil, nil, err
	}
	if err := refuseMovingDefault(g, target, t.KeepDefault); err != nil {
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
		Provider:       Name,
		Can:            plan.CapNewGroups,
		Region:         provider.Region(),
		Name:           g.Name,
		GroupKind:      "Auto Scaling group",
		Template:       g.LaunchTemplateID,
		TemplateKind:   "launch template",
		MachineKind:    "instance",
		CurrentVersion: g.LaunchTemplateVersion,
		TargetVersion:  target.Version,
		TargetImage:    target.Image,
		TargetLike:     target.SourceVersion,
		Sizes:          plan.Sizes{Min: g.Min, Desired: g.Desired, Max: g.Max},
		Nodes:          byNode,
		Unjoined:       unjoined,
		Rebalance:      AZRebalance,
		RebalanceHeld:  slices.Contains(g.Suspended, AZRebalance),
		LoadBalancers:  lbs,
	}
	if target.Create {
		cg.TargetVersion = plan.NewVersion
	}
	if err := provider.openLifecycle(ctx, g, cg); err != nil {
		return nil, nil, err
	}
	cg.LaunchesAfter = launchesAfter(g, target)
	return cg, &NodeGroup{Provider: provider, Client: client, ASG: g.Name, AMI: t.Image, Version: t.Version}, nil
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
func refuseMovingDefault(g *Group, target Target, keep bool) error {
	if !keep || g.spec != specDefault || g.mixed || !target.Create && target.Version == g.LaunchTemplateVersion {
		return nil
	}
	what := "version " + target.Version
	if target.Create {
		what = "a new version with image " + target.Image
	}
	return inputErrorf("--keep-default-version: auto scaling group %q launches $Default (version %s), so the target, %s, would have to become the default; make it the default where the template is managed (then run with no target), or leave out --keep-default-version", g.Name, g.LaunchTemplateVersion, what)
}

// EKSNodegroupTag marks the Auto Scaling group of an EKS managed node
// group, whose value is the node group's name.
const EKSNodegroupTag = "eks:nodegroup-name"

// refuseManaged refuses the group of an EKS managed node group: EKS owns
// its launch template, and a version pointed at it behind EKS's back makes
// the node group degraded (Ec2LaunchTemplateVersionMismatch).
func refuseManaged(g *Group) error {
	t, ok := g.Tags[EKSNodegroupTag]
	if !ok {
		return nil
	}
	msg := fmt.Sprintf("auto scaling group %q belongs to EKS managed node group %q, which EKS upgrades itself: use \"aws eks update-nodegroup-version --cluster-name CLUSTER --nodegroup-name %s\"", g.Name, t.Value, t.Value)
	return &Error{msg: msg, err: cloud.ErrManaged, input: true}
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
