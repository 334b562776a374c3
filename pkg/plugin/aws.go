package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The values of --provider.
const (
	providerNone = "none"
	providerAWS  = "aws"
)

// validateAWS checks the AWS flags without calling AWS.
func (o *PlanOptions) validateAWS() error {
	awsFlags := map[string]string{"--region": o.Region, "--profile": o.Profile, "--asg": o.ASG, "--ami": o.AMI, "--launch-template-version": o.TemplateVersion}
	if o.Provider == providerNone {
		for _, name := range []string{"--ami", "--launch-template-version", "--asg", "--region", "--profile"} {
			if awsFlags[name] != "" {
				return usageErrorf("%s needs --provider aws, not --provider none", name)
			}
		}
	}
	if o.AMI != "" && o.TemplateVersion != "" {
		return usageErrorf("--ami and --launch-template-version cannot be used together")
	}
	if o.AMI != "" && !aws.ValidImageID(o.AMI) {
		return usageErrorf("invalid --ami %q: want ami- followed by letters and digits, such as ami-0abc1234", o.AMI)
	}
	if v := o.TemplateVersion; v != "" && v != "$Latest" && v != "$Default" && !isPositiveNumber(v) {
		return usageErrorf("invalid --launch-template-version %q: want a version number, $Latest or $Default", v)
	}
	return nil
}

func isPositiveNumber(s string) bool {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' || n > 1e9 {
			return false
		}
		n = n*10 + int(r-'0')
	}
	return n > 0
}

// resolveProvider picks aws when asked, or when the flags name an AWS
// target, or when every node of the group is an EC2 instance.
func (o *PlanOptions) resolveProvider(nodes []corev1.Node) string {
	if o.Provider != "" {
		return o.Provider
	}
	if o.AMI != "" || o.TemplateVersion != "" || o.ASG != "" {
		return providerAWS
	}
	for i := range nodes {
		if _, _, ok := aws.InstanceIDFromProviderID(nodes[i].Spec.ProviderID); !ok {
			return providerNone
		}
	}
	if len(nodes) == 0 {
		return providerNone
	}
	return providerAWS
}

// awsGroup reads the node group's Auto Scaling group and the target, and
// prepares the provider the run uses. It only reads.
func (o *PlanOptions) awsGroup(ctx context.Context, nodes []corev1.Node) (*plan.CloudGroup, error) {
	var ids []string
	fallbackRegion := ""
	for i := range nodes {
		if zone, id, ok := aws.InstanceIDFromProviderID(nodes[i].Spec.ProviderID); ok {
			ids = append(ids, id)
			if fallbackRegion == "" {
				fallbackRegion = aws.RegionFromZone(zone)
			}
		}
	}
	// An unfinished run knows its group: after a blue/green run made green,
	// the nodes span two groups.
	store := &state.Store{Client: o.client, Namespace: o.StateNamespace}
	rec, _ := store.Load(ctx, o.recordName())
	if rec != nil && (rec.FinishedAt != nil || rec.Cloud == nil) {
		rec = nil
	}
	asg := o.ASG
	if asg == "" && rec != nil {
		asg = rec.Cloud.Group
	}
	var exclude []string
	if o.BlueGreen.GreenASG != "" {
		exclude = append(exclude, o.BlueGreen.GreenASG)
	}
	provider, err := aws.New(ctx, aws.Options{Region: o.Region, Profile: o.Profile, ASGName: asg, FallbackRegion: fallbackRegion, Exclude: exclude})
	if err != nil {
		return nil, err
	}
	g, err := provider.FindGroup(ctx, ids)
	if err != nil {
		return nil, err
	}
	target, err := provider.ResolveTarget(ctx, g, o.AMI, o.TemplateVersion)
	if err != nil {
		return nil, err
	}
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	byNode, _ := aws.MapNodes(g, ptrs)
	cg := &plan.CloudGroup{
		Provider:       providerAWS,
		Region:         provider.Region(),
		Name:           g.Name,
		Template:       g.LaunchTemplateID,
		CurrentVersion: g.LaunchTemplateVersion,
		TargetVersion:  target.Version,
		TargetImage:    target.Image,
		Sizes:          plan.Sizes{Min: g.Min, Desired: g.Desired, Max: g.Max},
		Nodes:          byNode,
	}
	if target.Create {
		cg.TargetVersion = plan.NewVersion
	}
	// An interrupted run scaled the group up already: the plan says so and
	// shows the sizes the end restores.
	if rec != nil && rec.Cloud.Original != nil && rec.Cloud.Group == g.Name && !plan.IsBlueGreen(o.Strategy) {
		cg.Recorded = rec.Cloud.Original
	}
	o.cloudGroup = &aws.NodeGroup{Provider: provider, Client: o.client, ASG: g.Name, AMI: o.AMI, Version: o.TemplateVersion}
	return cg, nil
}

// recordName is the key of the node group's record and lock.
func (o *PlanOptions) recordName() string {
	if o.Selector != "" {
		return "-l " + o.Selector
	}
	return o.NodeGroup
}
