package awsfake

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

const timeFormat = "2006-01-02T15:04:05.000Z"

func (s *Server) autoScaling(action string, f form) ([]*node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch action {
	case "DescribeAutoScalingGroups":
		return s.describeGroups(f)
	case "DescribeAutoScalingInstances":
		return s.describeASGInstances(f)
	case "UpdateAutoScalingGroup":
		return nil, s.updateGroup(f)
	case "SetDesiredCapacity":
		return nil, s.setDesired(f)
	case "TerminateInstanceInAutoScalingGroup":
		return s.terminateInGroupLocked(f.get("InstanceId"), f.boolean("ShouldDecrementDesiredCapacity"))
	case "CreateAutoScalingGroup":
		return nil, s.createGroupArgs(f)
	case "DeleteAutoScalingGroup":
		return nil, s.deleteLocked(f.get("AutoScalingGroupName"), f.boolean("ForceDelete"))
	case "CreateOrUpdateTags":
		return nil, s.createOrUpdateTags(f)
	case "SuspendProcesses", "ResumeProcesses":
		procs, err := processesArg(f)
		if err != nil {
			return nil, err
		}
		return nil, s.suspendLocked(f.get("AutoScalingGroupName"), procs, action == "SuspendProcesses")
	case "DescribeScalingActivities":
		return s.describeActivities(f)
	case "DescribeAccountLimits":
		return []*node{
			num("MaxNumberOfAutoScalingGroups", s.opts.MaxGroups),
			num("MaxNumberOfLaunchConfigurations", 200),
			num("NumberOfAutoScalingGroups", len(s.groups)),
			num("NumberOfLaunchConfigurations", 0),
		}, nil
	}
	if res, ok, err := s.lbAutoScaling(action, f); ok {
		return res, err
	}
	if res, ok, err := s.lifecycleCall(action, f); ok {
		return res, err
	}
	return nil, &apiError{status: 400, code: "InvalidAction", message: fmt.Sprintf("The action %s is not valid for this web service.", action)}
}

func (s *Server) arn(g *group) string {
	return fmt.Sprintf("arn:aws:autoscaling:%s:123456789012:autoScalingGroup:00000000-0000-4000-8000-000000000000:autoScalingGroupName/%s", s.opts.Region, g.Name)
}

func ltSpec(id, name, version string) *node {
	return el("LaunchTemplate", txt("LaunchTemplateId", id), txt("LaunchTemplateName", name), txt("Version", version))
}

func (s *Server) describeGroups(f form) ([]*node, error) {
	names := f.list("AutoScalingGroupNames.member")
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(s.groups))
	}
	var items []*node
	for _, name := range names {
		if g := s.groups[name]; g != nil { // unknown names are left out, not an error, as in AWS
			items = append(items, s.groupNode(g))
		}
	}
	return []*node{el("AutoScalingGroups", items...)}, nil
}

// groupNode is a group as DescribeAutoScalingGroups answers it.
func (s *Server) groupNode(g *group) *node {
	lt := s.templates[g.LaunchTemplateID]
	var zones, tags, policies []*node
	for _, z := range g.Zones {
		zones = append(zones, txt("member", z))
	}
	for _, k := range slices.Sorted(maps.Keys(g.Tags)) {
		tags = append(tags, el("member",
			txt("ResourceId", g.Name),
			txt("ResourceType", "auto-scaling-group"),
			txt("Key", k),
			txt("Value", g.Tags[k]),
			boolean("PropagateAtLaunch", !g.NoPropagate[k]),
		))
	}
	for _, p := range g.TerminationPolicies {
		policies = append(policies, txt("member", p))
	}
	item := el("member",
		txt("AutoScalingGroupName", g.Name),
		txt("AutoScalingGroupARN", s.arn(g)),
		ltSpec(lt.ID, lt.Name, g.LaunchTemplateVersion),
		num("MinSize", g.Min),
		num("MaxSize", g.Max),
		num("DesiredCapacity", g.Desired),
		num("DefaultCooldown", g.DefaultCooldown),
		el("AvailabilityZones", zones...),
		txt("HealthCheckType", g.HealthCheckType),
		num("HealthCheckGracePeriod", g.HealthCheckGracePeriod),
		el("Instances", s.groupInstanceNodes(g)...),
		txt("CreatedTime", g.created.Format(timeFormat)),
		el("Tags", tags...),
		el("TerminationPolicies", policies...),
		boolean("NewInstancesProtectedFromScaleIn", g.NewInstancesProtectedFromScaleIn),
		boolean("CapacityRebalance", g.CapacityRebalance),
		s.suspendedProcesses(g),
	)
	item.add(s.attachedNodes(g)...)
	if len(g.Subnets) > 0 {
		item.add(txt("VPCZoneIdentifier", strings.Join(g.Subnets, ",")))
	}
	if g.deleting {
		item.add(txt("Status", StatusDeleting))
	}
	return item
}

// groupInstanceNodes are the group's members as its Instances list.
func (s *Server) groupInstanceNodes(g *group) []*node {
	var insts []*node
	for _, id := range g.members {
		in := s.instances[id]
		insts = append(insts, el("member",
			txt("InstanceId", in.ID),
			txt("InstanceType", in.InstanceType),
			txt("AvailabilityZone", in.Zone),
			txt("LifecycleState", in.Lifecycle),
			txt("HealthStatus", "Healthy"),
			ltSpec(in.LaunchTemplateID, in.LaunchTemplateName, in.GroupVersion),
			boolean("ProtectedFromScaleIn", s.protectedLocked(in.ID)),
		))
	}
	return insts
}

func (s *Server) describeASGInstances(f form) ([]*node, error) {
	ids := f.list("InstanceIds.member")
	var items []*node
	add := func(in *instance) {
		if in == nil || in.Lifecycle == LifecycleTerminated {
			return // instances outside any group are left out, as in AWS
		}
		items = append(items, el("member",
			txt("InstanceId", in.ID),
			txt("InstanceType", in.InstanceType),
			txt("AutoScalingGroupName", in.Group),
			txt("AvailabilityZone", in.Zone),
			txt("LifecycleState", in.Lifecycle),
			txt("HealthStatus", "HEALTHY"),
			ltSpec(in.LaunchTemplateID, in.LaunchTemplateName, in.GroupVersion),
			boolean("ProtectedFromScaleIn", s.protectedLocked(in.ID)),
		))
	}
	if len(ids) == 0 {
		for _, g := range s.groups {
			for _, id := range g.members {
				add(s.instances[id])
			}
		}
	}
	for _, id := range ids {
		add(s.instances[id])
	}
	return []*node{el("AutoScalingInstances", items...)}, nil
}

// groupArg is the group a request changes: it must exist and not be
// pending delete.
func (s *Server) groupArg(f form) (*group, error) {
	return s.mutableGroup(f.get("AutoScalingGroupName"))
}

func (s *Server) mutableGroup(name string) (*group, error) {
	g := s.groups[name]
	if g == nil {
		return nil, validation("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	if g.deleting {
		return nil, validation("The AutoScaling group may not be modified while it is pending delete")
	}
	return g, nil
}

// ltArg reads the LaunchTemplate parameter of CreateAutoScalingGroup and
// UpdateAutoScalingGroup: the template by id or name, and the version
// ("$Default" if none).
func (s *Server) ltArg(f form) (*LaunchTemplate, string, error) {
	id, name := f.get("LaunchTemplate.LaunchTemplateId"), f.get("LaunchTemplate.LaunchTemplateName")
	const bad = "You must use a valid fully-formed launch template. "
	var lt *LaunchTemplate
	switch {
	case id != "" && name != "":
		return nil, "", validation(bad + "You must specify either the launch template ID or launch template name in the request, but not both.")
	case id != "":
		if lt = s.templates[id]; lt == nil {
			return nil, "", validation(bad+"The specified launch template, with template ID %s, does not exist.", id)
		}
	case name != "":
		for _, t := range s.templates {
			if t.Name == name {
				lt = t
			}
		}
		if lt == nil {
			return nil, "", validation(bad+"The specified launch template, with template name %s, does not exist.", name)
		}
	default:
		return nil, "", validation(bad + "You must specify either the launch template ID or launch template name in the request.")
	}
	v := f.get("LaunchTemplate.Version")
	if v == "" {
		v = "$Default"
	}
	if _, ok := lt.resolve(v); !ok {
		return nil, "", validation(bad+"The specified launch template version %s for launch template %s does not exist.", v, lt.ID)
	}
	return lt, v, nil
}

// tagArg is one member of a Tags list.
type tagArg struct {
	resourceID, resourceType, key, value string
	propagate                            bool
}

// tagsArg reads Tags.member.N.*; PropagateAtLaunch defaults to false.
func (f form) tagsArg() []tagArg {
	var out []tagArg
	for i := 1; ; i++ {
		p := "Tags.member." + strconv.Itoa(i) + "."
		if !f.hasPrefix(p) {
			return out
		}
		out = append(out, tagArg{
			resourceID:   f.get(p + "ResourceId"),
			resourceType: f.get(p + "ResourceType"),
			key:          f.get(p + "Key"),
			value:        f.get(p + "Value"),
			propagate:    f.boolean(p + "PropagateAtLaunch"),
		})
	}
}

// createGroupArgs answers CreateAutoScalingGroup. Only groups with a
// LaunchTemplate are supported; mixed instances policies, launch
// configurations and instance ids are refused.
func (s *Server) createGroupArgs(f form) error {
	if !f.hasPrefix("LaunchTemplate.") {
		if f.hasPrefix("MixedInstancesPolicy.") || f.has("LaunchConfigurationName") || f.has("InstanceId") {
			return validation("awsfake supports only groups created with a LaunchTemplate")
		}
		return validation("Valid requests must contain either LaunchTemplate, LaunchConfigurationName, InstanceId or MixedInstancesPolicy parameter.")
	}
	spec, err := createSpecArgs(f)
	if err != nil {
		return err
	}
	lt, version, err := s.ltArg(f)
	if err != nil {
		return err
	}
	spec.LaunchTemplateID, spec.LaunchTemplateVersion = lt.ID, version
	// Load balancers are attached at creation as
	// AttachLoadBalancerTargetGroups and AttachLoadBalancers would attach
	// them; a missing one fails the call before the group exists.
	arns, names := f.list("TargetGroupARNs.member"), f.list("LoadBalancerNames.member")
	if err := s.attachableLocked(arns, names); err != nil {
		return err
	}
	if err := s.createLocked(spec); err != nil {
		return err
	}
	if len(arns)+len(names) == 0 {
		return nil
	}
	return s.attachLocked(spec.Name, arns, names)
}

// createSpecArgs reads CreateAutoScalingGroup's group, its launch
// template aside: sizes (desired defaults to min), cooldown (300 by
// default), zones, subnets and tags.
func createSpecArgs(f form) (GroupSpec, error) {
	var sizes [5]int32
	var has [5]bool
	for i, k := range []string{"MinSize", "MaxSize", "DesiredCapacity", "HealthCheckGracePeriod", "DefaultCooldown"} {
		var err error
		if sizes[i], has[i], err = f.int32(k); err != nil {
			return GroupSpec{}, err
		}
	}
	if !has[0] || !has[1] {
		return GroupSpec{}, validation("1 validation error detected: Value null at 'minSize' or 'maxSize' failed to satisfy constraint: Member must not be null")
	}
	if !has[2] {
		sizes[2] = sizes[0] // AWS's default
	}
	if !has[4] {
		sizes[4] = 300
	}
	spec := GroupSpec{
		Name: f.get("AutoScalingGroupName"), Min: sizes[0], Max: sizes[1], Desired: sizes[2],
		Zones:                            f.list("AvailabilityZones.member"),
		HealthCheckType:                  f.get("HealthCheckType"),
		HealthCheckGracePeriod:           sizes[3],
		DefaultCooldown:                  sizes[4],
		TerminationPolicies:              f.list("TerminationPolicies.member"),
		CapacityRebalance:                f.boolean("CapacityRebalance"),
		NewInstancesProtectedFromScaleIn: f.boolean("NewInstancesProtectedFromScaleIn"),
	}
	for _, sn := range strings.Split(f.get("VPCZoneIdentifier"), ",") {
		if sn = strings.TrimSpace(sn); sn != "" {
			spec.Subnets = append(spec.Subnets, sn)
		}
	}
	for _, t := range f.tagsArg() {
		if spec.Tags == nil {
			spec.Tags, spec.NoPropagate = map[string]string{}, map[string]bool{}
		}
		spec.Tags[t.key] = t.value
		if t.propagate {
			delete(spec.NoPropagate, t.key)
		} else {
			spec.NoPropagate[t.key] = true
		}
	}
	return spec, nil
}

// createOrUpdateTags answers CreateOrUpdateTags: all tags are checked
// before any is set. Instances keep the tags they were launched with.
func (s *Server) createOrUpdateTags(f form) error {
	tags := f.tagsArg()
	for _, t := range tags {
		if t.resourceType != "auto-scaling-group" {
			return validation("Invalid resource type %q: the only resource type supported is auto-scaling-group", t.resourceType)
		}
		if t.key == "" {
			return validation("Tag key must not be empty")
		}
		if _, err := s.mutableGroup(t.resourceID); err != nil {
			return err
		}
	}
	for _, t := range tags {
		g := s.groups[t.resourceID]
		if g.Tags == nil {
			g.Tags = map[string]string{}
		}
		g.Tags[t.key] = t.value
		if t.propagate {
			delete(g.NoPropagate, t.key)
		} else {
			if g.NoPropagate == nil {
				g.NoPropagate = map[string]bool{}
			}
			g.NoPropagate[t.key] = true
		}
	}
	if len(tags) > 0 {
		s.notify()
	}
	return nil
}

func (s *Server) updateGroup(f form) error {
	g, err := s.groupArg(f)
	if err != nil {
		return err
	}
	minV, hasMin, err := f.int32("MinSize")
	if err != nil {
		return err
	}
	maxV, hasMax, err := f.int32("MaxSize")
	if err != nil {
		return err
	}
	des, hasDes, err := f.int32("DesiredCapacity")
	if err != nil {
		return err
	}
	next := g.GroupSpec
	if hasMin {
		next.Min = minV
	}
	if hasMax {
		next.Max = maxV
	}
	if hasDes {
		next.Desired = des
	} else {
		// A new min or max without a desired capacity moves the desired
		// capacity into the new range, as AWS documents.
		next.Desired = min(max(next.Desired, next.Min), next.Max)
	}
	if next.Min > next.Max {
		return validation("Max bound, %d, must be greater than or equal to min bound, %d", next.Max, next.Min)
	}
	if next.Desired < next.Min || next.Desired > next.Max {
		return validation("Desired capacity:%d must be between the specified min size:%d and max size:%d", next.Desired, next.Min, next.Max)
	}
	if f.has("LaunchTemplate.LaunchTemplateId") || f.has("LaunchTemplate.LaunchTemplateName") {
		lt, v, err := s.ltArg(f)
		if err != nil {
			return err
		}
		next.LaunchTemplateID, next.LaunchTemplateVersion = lt.ID, v
	}
	g.GroupSpec = next
	s.notify()
	return nil
}

func (s *Server) setDesired(f form) error {
	g, err := s.groupArg(f)
	if err != nil {
		return err
	}
	d, ok, err := f.int32("DesiredCapacity")
	if err != nil {
		return err
	}
	if !ok {
		return validation("1 validation error detected: Value null at 'desiredCapacity' failed to satisfy constraint: Member must not be null")
	}
	if d > g.Max {
		return validation("New SetDesiredCapacity value %d is above max value %d for the AutoScalingGroup.", d, g.Max)
	}
	if d < g.Min {
		return validation("New SetDesiredCapacity value %d is below min value %d for the AutoScalingGroup.", d, g.Min)
	}
	g.Desired = d
	s.notify()
	return nil
}

func (s *Server) terminateInGroupLocked(id string, decrement bool) ([]*node, error) {
	in := s.instances[id]
	if in == nil || in.Lifecycle == LifecycleTerminated || s.groups[in.Group] == nil {
		return nil, validation("Instance Id not found - No managed instance found for instance ID: %s", id)
	}
	g := s.groups[in.Group]
	if isWarm(in) {
		// The fake's wording; AWS refuses the call for warm-pool instances.
		return nil, validation("Instance %s is in the warm pool of AutoScalingGroup %s and cannot be terminated with TerminateInstanceInAutoScalingGroup", id, g.Name)
	}
	if active(in) {
		if decrement {
			if g.Desired <= g.Min {
				return nil, validation("Currently, desiredSize equals minSize (%d). Terminating instance without replacement will violate group's min size constraint. Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.", g.Min)
			}
			g.Desired--
		}
		// Termination first, so the reconcile loop launches the
		// replacement (if any) in the zone that just lost an instance.
		s.terminateLocked(in)
	}
	now := time.Now().UTC()
	desc := fmt.Sprintf("Terminating EC2 instance: %s", id)
	cause := fmt.Sprintf("At %s instance %s was taken out of service in response to a user request.", now.Format(time.RFC3339), id)
	if decrement {
		cause = fmt.Sprintf("At %s instance %s was taken out of service in response to a user request, shrinking the capacity from %d to %d.", now.Format(time.RFC3339), id, g.Desired+1, g.Desired)
	}
	subnet := in.subnet
	if subnet == "" {
		subnet = "subnet-0"
	}
	return []*node{el("Activity",
		txt("ActivityId", requestID()),
		txt("AutoScalingGroupName", g.Name),
		txt("Description", desc),
		txt("Cause", cause),
		txt("StartTime", now.Format(timeFormat)),
		txt("StatusCode", "InProgress"),
		num("Progress", 0),
		txt("Details", `{"Subnet ID":"`+subnet+`","Availability Zone":"`+in.Zone+`"}`),
	)}, nil
}
