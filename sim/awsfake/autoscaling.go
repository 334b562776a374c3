package awsfake

import (
	"fmt"
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
		return s.terminateInGroup(f)
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
		for n := range s.groups {
			names = append(names, n)
		}
	}
	var items []*node
	for _, name := range names {
		g := s.groups[name]
		if g == nil {
			continue // unknown names are left out, not an error, as in AWS
		}
		lt := s.templates[g.LaunchTemplateID]
		var zones, insts []*node
		for _, z := range g.Zones {
			zones = append(zones, txt("member", z))
		}
		for _, id := range g.members {
			in := s.instances[id]
			insts = append(insts, el("member",
				txt("InstanceId", in.ID),
				txt("InstanceType", in.InstanceType),
				txt("AvailabilityZone", in.Zone),
				txt("LifecycleState", in.Lifecycle),
				txt("HealthStatus", "Healthy"),
				ltSpec(in.LaunchTemplateID, in.LaunchTemplateName, in.GroupVersion),
				boolean("ProtectedFromScaleIn", false),
			))
		}
		items = append(items, el("member",
			txt("AutoScalingGroupName", g.Name),
			txt("AutoScalingGroupARN", s.arn(g)),
			ltSpec(lt.ID, lt.Name, g.LaunchTemplateVersion),
			num("MinSize", g.Min),
			num("MaxSize", g.Max),
			num("DesiredCapacity", g.Desired),
			num("DefaultCooldown", 300),
			el("AvailabilityZones", zones...),
			txt("HealthCheckType", "EC2"),
			num("HealthCheckGracePeriod", 300),
			el("Instances", insts...),
			txt("CreatedTime", g.created.Format(timeFormat)),
			el("TerminationPolicies", txt("member", "Default")),
			boolean("NewInstancesProtectedFromScaleIn", false),
		))
	}
	return []*node{el("AutoScalingGroups", items...)}, nil
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
			boolean("ProtectedFromScaleIn", false),
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

func (s *Server) groupArg(f form) (*group, error) {
	name := f.get("AutoScalingGroupName")
	g := s.groups[name]
	if g == nil {
		return nil, validation("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	return g, nil
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
		id, name := f.get("LaunchTemplate.LaunchTemplateId"), f.get("LaunchTemplate.LaunchTemplateName")
		var lt *LaunchTemplate
		if id != "" {
			lt = s.templates[id]
		} else {
			for _, t := range s.templates {
				if t.Name == name {
					lt = t
				}
			}
		}
		if lt == nil {
			return validation("You must use a valid fully-formed launch template. The specified launch template, with template ID %s, does not exist.", id+name)
		}
		v := f.get("LaunchTemplate.Version")
		if v == "" {
			v = "$Default"
		}
		if _, ok := lt.resolve(v); !ok {
			return validation("You must use a valid fully-formed launch template. The specified launch template version %s for launch template %s does not exist.", v, lt.ID)
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

func (s *Server) terminateInGroup(f form) ([]*node, error) {
	id := f.get("InstanceId")
	in := s.instances[id]
	if in == nil || in.Lifecycle == LifecycleTerminated {
		return nil, validation("Instance Id not found - No managed instance found for instance ID: %s", id)
	}
	g := s.groups[in.Group]
	decrement := f.boolean("ShouldDecrementDesiredCapacity")
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
	return []*node{el("Activity",
		txt("ActivityId", requestID()),
		txt("AutoScalingGroupName", g.Name),
		txt("Description", desc),
		txt("Cause", cause),
		txt("StartTime", now.Format(timeFormat)),
		txt("StatusCode", "InProgress"),
		num("Progress", 0),
		txt("Details", `{"Subnet ID":"subnet-0","Availability Zone":"`+in.Zone+`"}`),
	)}, nil
}
