// Package aws is the Auto Scaling side of the EKS-style update: it finds a
// node group's Auto Scaling group, points it at the target launch template
// version, changes its size and terminates replaced instances, through the
// AWS SDK for Go v2.
package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Options select the account, region and group.
type Options struct {
	Region, Profile string
	// ASGName names the Auto Scaling group; empty means find it from the
	// nodes' instance IDs.
	ASGName string
	// Exclude are groups whose instances FindGroup ignores (a blue/green
	// run's given green group, whose nodes carry the same labels).
	Exclude []string
	// FallbackRegion is used when neither Region nor the SDK's
	// configuration names one (the region of the nodes' zones).
	FallbackRegion string
}

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
}

// Group is an Auto Scaling group.
type Group struct {
	Name                  string
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
}

// Tag is the value of an Auto Scaling group's tag and whether the group
// copies it to the instances it launches.
type Tag struct {
	Value             string
	PropagateAtLaunch bool
}

// statusDeleting is the group's Status while it is being deleted.
const statusDeleting = "Delete in progress"

// Provider talks to Auto Scaling and EC2.
type Provider struct {
	opts   Options
	region string
	asg    *autoscaling.Client
	ec2    *ec2.Client
	elbv2  *elasticloadbalancingv2.Client
	elb    *elasticloadbalancing.Client
	// pollEvery is how often a wait asks again (lb.go).
	pollEvery time.Duration
	// cfg is what the clients were made from, for the EKS calls (eksapi.go).
	cfg sdkaws.Config
}

// Error is an error whose message is short enough for one line of CLI
// output; the SDK's error, with its request ID, stays reachable through
// errors.Unwrap / errors.As.
type Error struct {
	msg       string
	err       error
	input     bool
	transient bool
}

func (e *Error) Error() string { return e.msg }

// Transient reports whether AWS throttled the call, answered 5xx, or could
// not be reached, after the SDK's retries (see cloud.Transient).
func (e *Error) Transient() bool { return e.transient }

// Input reports whether the error is the user's to fix (a flag, the
// credentials): the command exits 2, and nothing was changed.
func (e *Error) Input() bool { return e.input }

// errVersionNotFound is behind the error of a launch template version
// that does not exist.
var errVersionNotFound = errors.New("launch template version not found")

func isNotFound(err error) bool { return errors.Is(err, errVersionNotFound) }

func inputErrorf(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...), input: true}
}

func (e *Error) Unwrap() error { return e.err }

func (p *Provider) groupNotFound(name string) error {
	return &Error{msg: fmt.Sprintf("auto scaling group %q not found in region %q; check --asg and --region", name, p.region), err: cloud.ErrGroupNotFound, input: true}
}

// wrap prefixes an SDK error with what could not be done ("cannot
// describe ..."), keeping only the service's error code and message.
func wrap(err error, format string, args ...any) error {
	msg := "cannot " + fmt.Sprintf(format, args...)
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return &Error{msg: fmt.Sprintf("%s: %s: %s", msg, ae.ErrorCode(), oneLine(ae.ErrorMessage())), err: err, transient: transient(err, ae.ErrorCode())}
	}
	return &Error{msg: msg + ": " + oneLine(err.Error()), err: err, transient: transient(err, "")}
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimRight(s, ".")
}

// New loads the SDK's default configuration (environment, shared config and
// SSO profiles, web identity, instance roles; AWS_ENDPOINT_URL and the
// per-service AWS_ENDPOINT_URL_AUTO_SCALING / AWS_ENDPOINT_URL_EC2 are
// honoured by the SDK itself) and checks that a region and credentials are
// there, so a missing one fails here with a clear message rather than on the
// first call.
func New(ctx context.Context, opts Options) (*Provider, error) {
	// The SDK's own log lines (retries, connection reuse) would break the
	// one-line errors and the progress output; its errors say enough.
	lo := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if opts.Region != "" {
		lo = append(lo, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(opts.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		if opts.Profile != "" {
			return nil, &Error{msg: fmt.Sprintf("load AWS profile %q: %s; check --profile", opts.Profile, oneLine(err.Error())), err: err, input: true}
		}
		return nil, wrap(err, "load AWS configuration")
	}
	if cfg.Region == "" {
		cfg.Region = opts.FallbackRegion
	}
	if cfg.Region == "" {
		return nil, inputErrorf("no AWS region configured; use --region or set AWS_REGION")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, &Error{msg: "no AWS credentials found; set AWS_PROFILE (or use --profile) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run aws sso login", err: err, input: true}
	}
	return NewFromConfig(cfg, opts), nil
}

// NewFromConfig makes a provider from an SDK configuration the caller has
// loaded.
func NewFromConfig(cfg sdkaws.Config, opts Options) *Provider {
	if cfg.Retryer == nil { // unless AWS_RETRY_MODE or the caller chose one
		shared := newRetryer()
		cfg.Retryer = func() sdkaws.Retryer { return shared }
	}
	return &Provider{
		opts:   opts,
		region: cfg.Region,
		asg:    autoscaling.NewFromConfig(cfg),
		ec2:    ec2.NewFromConfig(cfg),
		elbv2:  elasticloadbalancingv2.NewFromConfig(cfg),
		elb:    elasticloadbalancing.NewFromConfig(cfg),

		pollEvery: deregistrationPoll,
		cfg:       cfg,
	}
}

// Region is the region the provider works in.
func (p *Provider) Region() string { return p.region }

// InstanceIDFromProviderID splits a node's spec.providerID,
// aws:///us-east-1a/i-0abc, into zone and instance ID.
func InstanceIDFromProviderID(providerID string) (zone, id string, ok bool) {
	rest, found := strings.CutPrefix(providerID, "aws://")
	if !found {
		return "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	id = parts[len(parts)-1]
	if !strings.HasPrefix(id, "i-") || len(id) < 3 {
		return "", "", false
	}
	if len(parts) >= 2 {
		zone = parts[len(parts)-2]
	}
	return zone, id, true
}

// RegionFromZone turns an availability zone (us-east-1a) into its region
// (us-east-1), or returns "" when it does not look like one.
func RegionFromZone(zone string) string {
	n := len(zone)
	if n < 3 || zone[n-1] < 'a' || zone[n-1] > 'z' || zone[n-2] < '0' || zone[n-2] > '9' {
		return ""
	}
	return zone[:n-1]
}

// Auto Scaling takes at most 50 instance IDs per DescribeAutoScalingInstances.
const describeASGInstancesBatch = 50

// describeASGInstances calls fn with each of the instances Auto Scaling
// describes (those in a group), 50 IDs a call, every page; what says what
// the calls were for, in an error.
func (p *Provider) describeASGInstances(ctx context.Context, ids []string, what string, fn func(astypes.AutoScalingInstanceDetails)) error {
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
func (p *Provider) FindGroup(ctx context.Context, instanceIDs []string) (*Group, error) {
	if p.opts.ASGName != "" {
		return p.Group(ctx, p.opts.ASGName)
	}
	return p.groupOfInstances(ctx, instanceIDs)
}

// groupOfInstances returns the one group all the given instances belong
// to.
func (p *Provider) groupOfInstances(ctx context.Context, instanceIDs []string) (*Group, error) {
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
		return nil, &Error{msg: fmt.Sprintf("instances %s belong to no Auto Scaling group (as Karpenter's and standalone instances): provider none serves them, with --provider none and --target-label; or name their group with --asg", quoteList(instanceIDs)), err: cloud.ErrNoGroup, input: true}
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
func (p *Provider) Group(ctx context.Context, name string) (*Group, error) {
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
func (p *Provider) describeGroup(ctx context.Context, name string) (*astypes.AutoScalingGroup, error) {
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
func (p *Provider) groupFrom(ctx context.Context, ag *astypes.AutoScalingGroup) (*Group, error) {
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
func groupSettings(ag *astypes.AutoScalingGroup) *Group {
	g := &Group{
		Name:    sdkaws.ToString(ag.AutoScalingGroupName),
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
func (g *Group) resolveTemplate(ctx context.Context, ag *astypes.AutoScalingGroup, res resolver) error {
	lt := ag.LaunchTemplate
	if lt == nil && ag.MixedInstancesPolicy != nil && ag.MixedInstancesPolicy.LaunchTemplate != nil {
		lt, g.mixed = ag.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification, true
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
// instance was launched from, as EC2 describes it (ec2s, by ID).
func (in *Instance) launchedAs(ctx context.Context, ec2s map[string]ec2types.Instance, res resolver) error {
	if e, ok := ec2s[in.ID]; ok {
		in.ImageID = sdkaws.ToString(e.ImageId)
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
	p     *Provider
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
func (r *resolver) sameButImage(ctx context.Context, g *Group, v ec2types.LaunchTemplateVersion) (string, error) {
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
func (p *Provider) describeInstances(ctx context.Context, ids []string) (map[string]ec2types.Instance, error) {
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

var amiPattern = regexp.MustCompile(`^ami-[0-9a-zA-Z]+$`)

// ValidImageID reports whether s has the form of an AMI ID.
func ValidImageID(s string) bool { return amiPattern.MatchString(s) }

// Target is the launch template version an upgrade moves the group to.
type Target struct {
	// Version is the version number; empty when the run will create it
	// (Create), as a copy of SourceVersion with Image. SourceVersion is
	// also set for a copy an earlier run made, and for a version given
	// that differs from the group's current one in the image alone.
	Version       string
	Image         string
	Create        bool
	SourceVersion string
	// source is SourceVersion as described, to find a copy made by a
	// create whose answer was lost (findCopy)
	source *ec2types.LaunchTemplateVersion
}

// ResolveTarget works out, changing nothing, what SetTarget will do: with
// ami, a new version of the group's launch template copied from its current
// one with only the image changed (none when the current one already has
// that image, as after an interrupted run, or when such a copy exists, as
// after a run killed before it pointed the group at its copy); with
// version, that existing version; with neither, the group's current one.
// Bad flags and missing images or versions are caught here, before
// anything changes.
func (p *Provider) ResolveTarget(ctx context.Context, g *Group, ami, version string) (Target, error) {
	if ami != "" && version != "" {
		return Target{}, inputErrorf("--ami and --launch-template-version cannot be used together")
	}
	if ami != "" && !ValidImageID(ami) {
		return Target{}, inputErrorf("invalid AMI ID %q: want ami- followed by letters and digits; check --ami", ami)
	}
	if version != "" && version != "$Latest" && version != "$Default" && !isNumber(version) {
		return Target{}, inputErrorf("invalid launch template version %q: want a number, $Latest or $Default; check --launch-template-version", version)
	}
	if g.LaunchTemplateID == "" {
		return Target{}, inputErrorf("auto scaling group %q uses a launch configuration, not a launch template; only launch templates are supported", g.Name)
	}
	if (ami != "" || version != "") && g.mixed {
		return Target{}, inputErrorf("auto scaling group %q takes its launch template from a mixed instances policy, which cannot be changed here; update it yourself and run without --ami and --launch-template-version", g.Name)
	}
	res := resolver{p: p, cache: map[[2]string]ec2types.LaunchTemplateVersion{}}
	want := g.LaunchTemplateVersion
	if version != "" {
		want = version
	}
	v, err := res.version(ctx, g.LaunchTemplateID, "", want)
	if err != nil {
		var ae smithy.APIError
		if version != "" && (errors.As(err, &ae) && strings.Contains(ae.ErrorCode(), "VersionNotFound") || isNotFound(err)) {
			return Target{}, &Error{msg: fmt.Sprintf("launch template %q has no version %q; check --launch-template-version", g.LaunchTemplateID, version), err: err, input: true}
		}
		return Target{}, err
	}
	t := Target{Version: strconv.FormatInt(sdkaws.ToInt64(v.VersionNumber), 10)}
	if v.LaunchTemplateData != nil {
		t.Image = sdkaws.ToString(v.LaunchTemplateData.ImageId)
	}
	if ami == "" || t.Image == ami {
		if t.Version != g.LaunchTemplateVersion {
			t.SourceVersion, err = res.sameButImage(ctx, g, v)
		}
		return t, err
	}
	if err := p.checkImage(ctx, ami); err != nil {
		return Target{}, err
	}
	// A run killed between making the version and pointing the group at
	// it left the version behind: it is the target, not a reason for one
	// more.
	made, err := p.findCopy(ctx, v, ami)
	if err != nil {
		return Target{}, err
	}
	if made != "" {
		return Target{Version: made, Image: ami, SourceVersion: t.Version}, nil
	}
	return Target{Image: ami, Create: true, SourceVersion: t.Version, source: &v}, nil
}

// checkImage makes sure the AMI exists in the region, so a typo fails
// before a launch template version is made from it.
func (p *Provider) checkImage(ctx context.Context, ami string) error {
	out, err := p.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{ami}})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && strings.HasPrefix(ae.ErrorCode(), "InvalidAMIID") {
			return &Error{msg: fmt.Sprintf("image %q not found in region %q; check --ami and --region", ami, p.region), err: err, input: true}
		}
		return wrap(err, "describe image %q", ami)
	}
	for _, im := range out.Images {
		if sdkaws.ToString(im.ImageId) == ami {
			return nil
		}
	}
	return inputErrorf("image %q not found in region %q; check --ami and --region", ami, p.region)
}

// SetTarget makes the group launch the target that ResolveTarget describes
// and returns its launch template version number.
func (p *Provider) SetTarget(ctx context.Context, g *Group, ami, version string) (string, error) {
	t, err := p.ResolveTarget(ctx, g, ami, version)
	if err != nil {
		return "", err
	}
	target := t.Version
	if t.Create {
		if target, err = p.createVersion(ctx, g, t, ami); err != nil {
			return "", err
		}
	}
	// A group on $Default or $Latest stays on it when that launches the
	// target (see keepsFollowing), so infrastructure as code that follows
	// it is not left behind; otherwise it is pinned to the number.
	// A mixed instances policy is left as it is: pinning there would
	// replace the policy with a plain launch template.
	follow, err := p.keepsFollowing(ctx, g, target)
	if err != nil {
		return "", err
	}
	if g.spec != target && !g.mixed && !follow {
		_, err := p.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
			AutoScalingGroupName: sdkaws.String(g.Name),
			LaunchTemplate: &astypes.LaunchTemplateSpecification{
				LaunchTemplateId: sdkaws.String(g.LaunchTemplateID),
				Version:          sdkaws.String(target),
			},
		})
		if err != nil {
			return "", wrap(err, "point Auto Scaling group %q at launch template %q version %s", g.Name, g.LaunchTemplateID, target)
		}
	}
	if !follow {
		g.spec = target
	}
	g.LaunchTemplateVersion = target
	return target, nil
}

// SetSize sets the group's desired capacity and max size in one call, so
// the pair is checked as a whole (min <= desired <= max).
func (p *Provider) SetSize(ctx context.Context, group string, desired, max int32) error {
	_, err := p.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(group),
		DesiredCapacity:      sdkaws.Int32(desired),
		MaxSize:              sdkaws.Int32(max),
	})
	if err != nil {
		return wrap(err, "set Auto Scaling group %q to desired %d, max %d", group, desired, max)
	}
	return nil
}

// SetMax sets the group's max size alone, leaving desired capacity to
// whoever else changes it (the cluster autoscaler).
func (p *Provider) SetMax(ctx context.Context, group string, max int32) error {
	_, err := p.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(group),
		MaxSize:              sdkaws.Int32(max),
	})
	if err != nil {
		return wrap(err, "set Auto Scaling group %q to max %d", group, max)
	}
	return nil
}

// Sizes reads the group's min, desired and max with one call.
func (p *Provider) Sizes(ctx context.Context, group string) (min, desired, max int32, err error) {
	out, err := p.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	if err != nil {
		return 0, 0, 0, wrap(err, "describe Auto Scaling group %q", group)
	}
	for _, g := range out.AutoScalingGroups {
		if sdkaws.ToString(g.AutoScalingGroupName) == group {
			return sdkaws.ToInt32(g.MinSize), sdkaws.ToInt32(g.DesiredCapacity), sdkaws.ToInt32(g.MaxSize), nil
		}
	}
	return 0, 0, 0, p.groupNotFound(group)
}

// AZRebalance is the group's process that, when its zones are unbalanced,
// launches in the emptiest zone and then terminates in the fullest one.
const AZRebalance = "AZRebalance"

// ProcessSuspended reports whether the group's process is suspended now.
func (p *Provider) ProcessSuspended(ctx context.Context, group, process string) (bool, error) {
	ag, err := p.describeGroup(ctx, group)
	if err != nil {
		return false, err
	}
	if ag == nil {
		return false, p.groupNotFound(group)
	}
	return slices.ContainsFunc(ag.SuspendedProcesses, func(sp astypes.SuspendedProcess) bool {
		return sdkaws.ToString(sp.ProcessName) == process
	}), nil
}

// SuspendProcess suspends one process of the group; suspending it again
// changes nothing.
func (p *Provider) SuspendProcess(ctx context.Context, group, process string) error {
	_, err := p.asg.SuspendProcesses(ctx, &autoscaling.SuspendProcessesInput{AutoScalingGroupName: sdkaws.String(group), ScalingProcesses: []string{process}})
	if err != nil {
		return wrap(err, "suspend process %s of Auto Scaling group %q", process, group)
	}
	return nil
}

// ResumeProcess resumes one process of the group; resuming one that runs
// changes nothing.
func (p *Provider) ResumeProcess(ctx context.Context, group, process string) error {
	_, err := p.asg.ResumeProcesses(ctx, &autoscaling.ResumeProcessesInput{AutoScalingGroupName: sdkaws.String(group), ScalingProcesses: []string{process}})
	if err != nil {
		return wrap(err, "resume process %s of Auto Scaling group %q", process, group)
	}
	return nil
}

// TerminateShrink terminates an instance and lowers the desired capacity by
// one, so nothing replaces it: the scale-down, one node at a time.
func (p *Provider) TerminateShrink(ctx context.Context, instanceID string) error {
	return p.terminate(ctx, instanceID, true)
}

// Terminate terminates an instance without decrementing the desired
// capacity, so the group launches a replacement from its current launch
// template version. An instance that is already gone counts as terminated,
// so a re-run after an interruption can repeat the call.
func (p *Provider) Terminate(ctx context.Context, instanceID string) error {
	return p.terminate(ctx, instanceID, false)
}

func (p *Provider) terminate(ctx context.Context, instanceID string, decrement bool) error {
	_, err := p.asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId:                     sdkaws.String(instanceID),
		ShouldDecrementDesiredCapacity: sdkaws.Bool(decrement),
	})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "not found") {
			return nil
		}
		return wrap(err, "terminate instance %q", instanceID)
	}
	return nil
}

// Outdated returns the instances launched from another launch template or
// another version than targetVersion of the group's template. Instances
// already terminating are left out: they are on their way out.
func Outdated(g *Group, targetVersion string) []Instance {
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
