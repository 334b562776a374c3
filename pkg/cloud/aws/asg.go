package aws

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Instance is one instance of an Auto Scaling group.
type Instance struct {
	ID, Zone string
	// LaunchTemplateID and LaunchTemplateVersion are what the instance was
	// launched from; the version is a number (from the instance's
	// aws:ec2launchtemplate:version tag where EC2 has it).
	LaunchTemplateID, LaunchTemplateVersion string
	ImageID                                 string
	// Lifecycle is the Auto Scaling lifecycle state (InService, Pending,
	// Terminating, ...).
	Lifecycle string
	// Protected is ProtectedFromScaleIn: the group's own scale-in passes
	// over it (an explicit termination does not).
	Protected bool
	// Launched is EC2's LaunchTime; zero where EC2 did not describe it.
	Launched time.Time
}

// AutoScalingGroup is an Auto Scaling group.
type AutoScalingGroup struct {
	Name                  string
	ARN                   string // the permission probe simulates on it
	Min, Max, Desired     int32
	Zones                 []string
	LaunchTemplateID      string
	LaunchTemplateVersion string // as set on the group, resolved to a number
	Instances             []Instance

	// What a clone (the blue/green strategy's green group) copies.
	VPCZoneIdentifier                string // subnets, comma-separated
	HealthCheckType                  string
	HealthCheckGracePeriod           int32
	DefaultCooldown                  int32
	TerminationPolicies              []string
	Tags                             map[string]Tag
	CapacityRebalance                bool
	NewInstancesProtectedFromScaleIn bool
	// Deleting is set while Auto Scaling deletes the group.
	Deleting bool
	// Suspended are the group's suspended processes (AZRebalance, ...).
	Suspended []string
	// TargetGroups (ARNs) and LoadBalancers (Classic Load Balancer names)
	// are attached to the group: Auto Scaling registers its instances.
	TargetGroups, LoadBalancers []string

	spec  string // the version as set on the group: a number, $Latest or $Default
	mixed bool   // the launch template comes from a mixed instances policy
	// overrides are the instance types the mixed instances policy's
	// overrides name, any of which Auto Scaling may launch.
	overrides []string
}

// Tag is the value of an Auto Scaling group's tag and whether the group
// copies it to the instances it launches.
type Tag struct {
	Value             string
	PropagateAtLaunch bool
}

// statusDeleting is the group's Status while it is being deleted.
const statusDeleting = "Delete in progress"

// Auto Scaling takes at most 50 instance IDs per DescribeAutoScalingInstances.
const describeASGInstancesBatch = 50

// describeASGInstances calls fn with each of the instances Auto Scaling
// describes (those in a group), 50 IDs a call, every page; what says what
// the calls were for, in an error.
func (p *Client) describeASGInstances(ctx context.Context, ids []string, what string, fn func(astypes.AutoScalingInstanceDetails)) error {
	for chunk := range slices.Chunk(ids, describeASGInstancesBatch) {
		pg := autoscaling.NewDescribeAutoScalingInstancesPaginator(p.asg, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: chunk})
		for pg.HasMorePages() {
			out, err := pg.NextPage(ctx)
			if err != nil {
				return wrap(err, "%s instances %s", what, quoteList(chunk))
			}
			for _, in := range out.AutoScalingInstances {
				fn(in)
			}
		}
	}
	return nil
}

// FindGroup returns the Auto Scaling group named in Options.ASGName, or else
// the one group all the given instances belong to.
func (p *Client) FindGroup(ctx context.Context, instanceIDs []string) (*AutoScalingGroup, error) {
	if p.opts.ASGName != "" {
		return p.Group(ctx, p.opts.ASGName)
	}
	return p.groupOfInstances(ctx, instanceIDs)
}

// groupOfInstances returns the one group all the given instances belong
// to.
func (p *Client) groupOfInstances(ctx context.Context, instanceIDs []string) (*AutoScalingGroup, error) {
	if len(instanceIDs) == 0 {
		return nil, inputErrorf("no instance IDs to find the Auto Scaling group from (the nodes have no aws:/// provider IDs); use --asg")
	}
	byGroup := map[string][]string{}
	err := p.describeASGInstances(ctx, instanceIDs, "find the Auto Scaling group of", func(in astypes.AutoScalingInstanceDetails) {
		g := sdkaws.ToString(in.AutoScalingGroupName)
		byGroup[g] = append(byGroup[g], sdkaws.ToString(in.InstanceId))
	})
	if err != nil {
		return nil, err
	}
	for _, name := range p.opts.Exclude {
		delete(byGroup, name)
	}
	switch len(byGroup) {
	case 0:
		return nil, &Error{msg: fmt.Sprintf("instances %s belong to no Auto Scaling group: --provider karpenter serves Karpenter's instances, --provider none with --target-label standalone ones; or name their group with --asg", quoteList(instanceIDs)), err: cloud.ErrNoGroup, input: true}
	case 1:
		for name := range byGroup {
			return p.Group(ctx, name)
		}
	}
	names := make([]string, 0, len(byGroup))
	for n := range byGroup {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%q has %s", n, quoteList(byGroup[n]))
	}
	return nil, inputErrorf("the nodes' instances belong to %d Auto Scaling groups (%s); use --asg or narrow the nodes with --selector", len(names), strings.Join(parts, "; "))
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = strconv.Quote(id)
	}
	return strings.Join(q, ", ")
}

// Group describes an Auto Scaling group with its instances: their zones,
// launch template versions and images.
func (p *Client) Group(ctx context.Context, name string) (*AutoScalingGroup, error) {
	ag, err := p.describeGroup(ctx, name)
	if err != nil {
		return nil, err
	}
	if ag == nil {
		return nil, p.groupNotFound(name)
	}
	return p.groupFrom(ctx, ag)
}

// describeGroup returns the named group as Auto Scaling describes it, or
// nil when there is none.
func (p *Client) describeGroup(ctx context.Context, name string) (*astypes.AutoScalingGroup, error) {
	out, err := p.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil {
		return nil, wrap(err, "describe Auto Scaling group %q", name)
	}
	for i := range out.AutoScalingGroups {
		if sdkaws.ToString(out.AutoScalingGroups[i].AutoScalingGroupName) == name {
			return &out.AutoScalingGroups[i], nil
		}
	}
	return nil, nil
}

// groupFrom reads a described group, resolving launch template versions
// and looking up its instances in EC2.
func (p *Client) groupFrom(ctx context.Context, ag *astypes.AutoScalingGroup) (*AutoScalingGroup, error) {
	g := groupSettings(ag)
	res := resolver{p: p, cache: map[[2]string]ec2types.LaunchTemplateVersion{}}
	if err := g.resolveTemplate(ctx, ag, res); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(ag.Instances))
	for _, in := range ag.Instances {
		if isWarm(string(in.LifecycleState)) {
			continue // the warm pool's: no member of the group (see WarmPool)
		}
		i := Instance{
			ID:        sdkaws.ToString(in.InstanceId),
			Zone:      sdkaws.ToString(in.AvailabilityZone),
			Lifecycle: string(in.LifecycleState),
			Protected: sdkaws.ToBool(in.ProtectedFromScaleIn),
		}
		if in.LaunchTemplate != nil {
			i.LaunchTemplateID = sdkaws.ToString(in.LaunchTemplate.LaunchTemplateId)
			i.LaunchTemplateVersion = sdkaws.ToString(in.LaunchTemplate.Version)
		}
		g.Instances = append(g.Instances, i)
		ids = append(ids, i.ID)
	}
	ec2s, err := p.describeInstances(ctx, ids)
	if err != nil {
		return nil, err
	}
	for k := range g.Instances {
		if err := g.Instances[k].launchedAs(ctx, ec2s, res); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// groupSettings is the group as Auto Scaling describes it, without its
// launch template and instances.
func groupSettings(ag *astypes.AutoScalingGroup) *AutoScalingGroup {
	g := &AutoScalingGroup{
		Name:    sdkaws.ToString(ag.AutoScalingGroupName),
		ARN:     sdkaws.ToString(ag.AutoScalingGroupARN),
		Min:     sdkaws.ToInt32(ag.MinSize),
		Max:     sdkaws.ToInt32(ag.MaxSize),
		Desired: sdkaws.ToInt32(ag.DesiredCapacity),
		Zones:   slices.Clone(ag.AvailabilityZones),

		VPCZoneIdentifier:                sdkaws.ToString(ag.VPCZoneIdentifier),
		HealthCheckType:                  sdkaws.ToString(ag.HealthCheckType),
		HealthCheckGracePeriod:           sdkaws.ToInt32(ag.HealthCheckGracePeriod),
		DefaultCooldown:                  sdkaws.ToInt32(ag.DefaultCooldown),
		TerminationPolicies:              slices.Clone(ag.TerminationPolicies),
		CapacityRebalance:                sdkaws.ToBool(ag.CapacityRebalance),
		NewInstancesProtectedFromScaleIn: sdkaws.ToBool(ag.NewInstancesProtectedFromScaleIn),
		Deleting:                         sdkaws.ToString(ag.Status) == statusDeleting,
	}
	for _, sp := range ag.SuspendedProcesses {
		g.Suspended = append(g.Suspended, sdkaws.ToString(sp.ProcessName))
	}
	g.TargetGroups, g.LoadBalancers = attached(ag)
	if len(ag.Tags) > 0 {
		g.Tags = make(map[string]Tag, len(ag.Tags))
		for _, t := range ag.Tags {
			g.Tags[sdkaws.ToString(t.Key)] = Tag{Value: sdkaws.ToString(t.Value), PropagateAtLaunch: sdkaws.ToBool(t.PropagateAtLaunch)}
		}
	}
	return g
}

// resolveTemplate finds the launch template version the group launches
// (its own, or its mixed instances policy's), as a number.
func (g *AutoScalingGroup) resolveTemplate(ctx context.Context, ag *astypes.AutoScalingGroup, res resolver) error {
	lt := ag.LaunchTemplate
	if lt == nil && ag.MixedInstancesPolicy != nil && ag.MixedInstancesPolicy.LaunchTemplate != nil {
		lt, g.mixed = ag.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification, true
		for _, o := range ag.MixedInstancesPolicy.LaunchTemplate.Overrides {
			if t := sdkaws.ToString(o.InstanceType); t != "" {
				g.overrides = append(g.overrides, t)
			}
		}
	}
	if lt == nil {
		return nil
	}
	g.spec = sdkaws.ToString(lt.Version)
	if g.spec == "" {
		g.spec = "$Default" // what Auto Scaling uses when no version is set
	}
	v, err := res.version(ctx, sdkaws.ToString(lt.LaunchTemplateId), sdkaws.ToString(lt.LaunchTemplateName), g.spec)
	if err != nil {
		return err
	}
	g.LaunchTemplateID = sdkaws.ToString(v.LaunchTemplateId)
	g.LaunchTemplateVersion = strconv.FormatInt(sdkaws.ToInt64(v.VersionNumber), 10)
	return nil
}

// launchedAs fills in the image and the launch template version the
// instance was launched from, and when, as EC2 describes it (ec2s, by ID).
func (in *Instance) launchedAs(ctx context.Context, ec2s map[string]ec2types.Instance, res resolver) error {
	if e, ok := ec2s[in.ID]; ok {
		in.ImageID, in.Launched = sdkaws.ToString(e.ImageId), sdkaws.ToTime(e.LaunchTime)
		id, v := launchedFrom(e)
		in.LaunchTemplateID, in.LaunchTemplateVersion = cmp.Or(id, in.LaunchTemplateID), cmp.Or(v, in.LaunchTemplateVersion)
	}
	// Without the EC2 tag, Auto Scaling may report "$Latest" or
	// "$Default": resolved now, which is right unless the template
	// changed since the launch.
	if in.LaunchTemplateID != "" && !isNumber(in.LaunchTemplateVersion) {
		v, err := res.version(ctx, in.LaunchTemplateID, "", in.LaunchTemplateVersion)
		if err != nil {
			return err
		}
		in.LaunchTemplateVersion = strconv.FormatInt(sdkaws.ToInt64(v.VersionNumber), 10)
	}
	return nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 63)
	return err == nil
}

// resolver looks up launch template versions once per call.
type resolver struct {
	p     *Client
	cache map[[2]string]ec2types.LaunchTemplateVersion
}

func (r *resolver) version(ctx context.Context, id, name, version string) (ec2types.LaunchTemplateVersion, error) {
	key := [2]string{id + "/" + name, version}
	if v, ok := r.cache[key]; ok {
		return v, nil
	}
	in := &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{version}}
	what := id
	if id != "" {
		in.LaunchTemplateId = sdkaws.String(id)
	} else {
		in.LaunchTemplateName, what = sdkaws.String(name), name
	}
	out, err := r.p.ec2.DescribeLaunchTemplateVersions(ctx, in)
	if err != nil {
		return ec2types.LaunchTemplateVersion{}, wrap(err, "describe launch template %q version %q", what, version)
	}
	if len(out.LaunchTemplateVersions) == 0 {
		return ec2types.LaunchTemplateVersion{}, &Error{msg: fmt.Sprintf("launch template %q has no version %q", what, version), err: errVersionNotFound}
	}
	r.cache[key] = out.LaunchTemplateVersions[0]
	return out.LaunchTemplateVersions[0], nil
}

// sameButImage returns the group's current version when v differs from it
// in the image alone (a version an IaC tool made with a new image, say),
// else "".
func (r *resolver) sameButImage(ctx context.Context, g *AutoScalingGroup, v ec2types.LaunchTemplateVersion) (string, error) {
	cur, err := r.version(ctx, g.LaunchTemplateID, "", g.LaunchTemplateVersion)
	if err != nil || cur.LaunchTemplateData == nil || v.LaunchTemplateData == nil {
		return "", err
	}
	same := *v.LaunchTemplateData
	same.ImageId = cur.LaunchTemplateData.ImageId
	if !reflect.DeepEqual(same, *cur.LaunchTemplateData) {
		return "", nil
	}
	return g.LaunchTemplateVersion, nil
}

// EC2 filters take at most 200 values.
const describeInstancesBatch = 200

// describeInstances looks instances up by a filter rather than by ID, so an
// instance that has just gone away is missing from the answer instead of
// failing the whole call with InvalidInstanceID.NotFound.
func (p *Client) describeInstances(ctx context.Context, ids []string) (map[string]ec2types.Instance, error) {
	out := map[string]ec2types.Instance{}
	for chunk := range slices.Chunk(ids, describeInstancesBatch) {
		pg := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{
			Filters: []ec2types.Filter{{Name: sdkaws.String("instance-id"), Values: chunk}},
		})
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, wrap(err, "describe instances %s", quoteList(chunk))
			}
			for _, r := range page.Reservations {
				for _, in := range r.Instances {
					out[sdkaws.ToString(in.InstanceId)] = in
				}
			}
		}
	}
	return out, nil
}

// Outdated returns the instances launched from another launch template or
// another version than targetVersion of the group's template. Instances
// already terminating are left out: they are on their way out.
func Outdated(g *AutoScalingGroup, targetVersion string) []Instance {
	var out []Instance
	for _, in := range g.Instances {
		if machineState(in.Lifecycle) == plan.MachineLeaving {
			continue
		}
		if in.LaunchTemplateID != g.LaunchTemplateID || in.LaunchTemplateVersion != targetVersion {
			out = append(out, in)
		}
	}
	return out
}

// launchedFrom reads the launch template and version an instance was
// launched from off the tags EC2 puts on it ("" without them).
func launchedFrom(e ec2types.Instance) (template, version string) {
	for _, t := range e.Tags {
		switch sdkaws.ToString(t.Key) {
		case "aws:ec2launchtemplate:id":
			template = sdkaws.ToString(t.Value)
		case "aws:ec2launchtemplate:version":
			version = sdkaws.ToString(t.Value)
		}
	}
	return template, version
}
