package awsfake

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Launches EC2 refuses, and the scaling activities that say so.
//
// Auto Scaling launches in the zone with the fewest instances; "if the
// attempt fails, however, Amazon EC2 Auto Scaling attempts to launch the
// instances in another Availability Zone until it succeeds" (Amazon EC2
// Auto Scaling User Guide, "Availability Zone distribution"). Each failed
// attempt is a scaling activity with StatusCode Failed whose StatusMessage
// is EC2's error followed by "Launching EC2 instance failed." (User Guide,
// "Troubleshoot Amazon EC2 Auto Scaling: EC2 instance launch failures" and
// "... capacity issues"); DescribeScalingActivities answers them, newest
// first, with Details naming the subnet and zone.

// launchRetry is how long the fake leaves a zone that refused a launch
// before it tries the zone again (Auto Scaling retries, its pace not
// published).
const launchRetry = 2 * time.Second

// activity is one scaling activity: botocore's autoscaling Activity
// (ActivityId, AutoScalingGroupName, Cause, StartTime and StatusCode are
// required members of its output shape).
type activity struct {
	id, group, description, cause string
	status, message, details      string
	start, end                    time.Time
}

// activityState is what the scaling activities need: the activities,
// oldest first; by instance, the index of the one that launches it; and,
// by group and zone, when the fake tries a zone that refused again.
type activityState struct {
	list       []activity
	byInstance map[string]int
	retryZone  map[[2]string]time.Time
}

// maxActivities bounds the log (AWS keeps six weeks of them).
const maxActivities = 2000

// SetNoCapacity makes EC2 short of instance type typ in zone: a launch
// there fails with InsufficientInstanceCapacity, as does a Capacity
// Reservation asked there, unless it launches into an open reservation
// with room (reservations.go). SetNoCapacity with none false gives the
// capacity back.
func (s *Server) SetNoCapacity(zone, typ string, none bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capacity.short == nil {
		s.capacity.short = map[[2]string]bool{}
	}
	s.capacity.short[[2]string{zone, typ}] = none
	s.notify()
}

// launchRefusal is EC2's error for a launch of typ into zone (subnet ""
// where the group has none there), or nil. The rules are EC2's:
//   - a zone that does not offer the type: Unsupported, "Your requested
//     instance type (t) is not supported in your requested Availability
//     Zone (z). Please retry your request by not specifying an
//     Availability Zone or choosing ..." (User Guide, instance launch
//     failures);
//   - a subnet with no free address: InsufficientFreeAddressesInSubnet,
//     "There are not enough free addresses in subnet 's' to satisfy the
//     requested number of instances." (EC2 API Reference, Error codes:
//     "The specified subnet does not contain enough free private IP
//     addresses to fulfill your request");
//   - no capacity of the type in the zone and no open Capacity
//     Reservation with room: InsufficientInstanceCapacity, "We currently
//     do not have sufficient t capacity in the Availability Zone you
//     requested (z). Our system will be working on provisioning
//     additional capacity. You can currently get t capacity by not
//     specifying an Availability Zone in your request or choosing ..."
//     (User Guide, capacity issues).
func (s *Server) launchRefusal(g *group, typ, zone, subnet string) *apiError {
	others := func(bad func(string) bool) string {
		var ok []string
		for _, z := range g.Zones {
			if z != zone && !bad(z) {
				ok = append(ok, z)
			}
		}
		return strings.Join(ok, ", ")
	}
	switch {
	case s.capacity.withheld[[2]string{zone, typ}]:
		return ec2Err("Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.",
			typ, zone, others(func(z string) bool { return s.capacity.withheld[[2]string{z, typ}] }))
	case subnet != "" && s.subnetFree(subnet) < 1:
		return ec2Err("InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", subnet)
	case s.capacity.short[[2]string{zone, typ}] && !s.reservedRoomLocked(zone, typ):
		return ec2Err("InsufficientInstanceCapacity", "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.",
			typ, zone, typ, others(func(z string) bool { return s.capacity.short[[2]string{z, typ}] }))
	}
	return nil
}

// launchZoneLocked is the zone of the group's next launch: the one with
// the fewest instances that EC2 does not refuse. Each zone that refuses
// is a failed activity and is left alone for launchRetry; "" when every
// zone refused.
func (s *Server) launchZoneLocked(g *group, perZone map[string][]*instance) string {
	zones := slices.Clone(g.Zones)
	slices.SortStableFunc(zones, func(a, b string) int { return len(perZone[a]) - len(perZone[b]) })
	now := time.Now()
	for _, z := range zones {
		if now.Before(s.capacity.acts.retryZone[[2]string{g.Name, z}]) {
			continue
		}
		typ, subnet := s.launchTypeLocked(g), subnetIn(g, z)
		err := s.launchRefusal(g, typ, z, subnet)
		if err == nil {
			return z
		}
		s.refusedLocked(g, z, subnet, err)
	}
	return ""
}

// launchTypeLocked is the instance type the group launches now.
func (s *Server) launchTypeLocked(g *group) string {
	lt := s.templates[g.LaunchTemplateID]
	vn, _ := lt.resolve(g.LaunchTemplateVersion)
	return lt.Versions[vn-1].InstanceType
}

// subnetIn is the group's subnet in zone, "" where it has none.
func subnetIn(g *group, zone string) string {
	for _, sn := range g.Subnets {
		if z, _ := subnetZone(sn); z == zone {
			return sn
		}
	}
	return ""
}

// refusedLocked records a failed launch in zone and keeps the zone
// aside for launchRetry, after which the group is looked at again.
func (s *Server) refusedLocked(g *group, zone, subnet string, err *apiError) {
	a := s.newActivityLocked(g, zone, subnet)
	msg := err.message + " Launching EC2 instance failed."
	a.description = "Launching a new EC2 instance.  Status Reason: " + msg
	a.status, a.message, a.end = "Failed", statusMessage(msg), a.start
	s.addActivityLocked(a)
	if s.capacity.acts.retryZone == nil {
		s.capacity.acts.retryZone = map[[2]string]time.Time{}
	}
	s.capacity.acts.retryZone[[2]string{g.Name, zone}] = time.Now().Add(launchRetry)
	s.logf("awsfake: launch in %s for group %s refused: %s: %s", zone, g.Name, err.code, err.message)
	s.kickAfter(launchRetry)
}

// newActivityLocked is an activity of a launch in zone, started now.
func (s *Server) newActivityLocked(g *group, zone, subnet string) activity {
	s.seq++
	now := time.Now().UTC()
	running := 0
	for _, id := range g.members {
		if active(s.instances[id]) {
			running++
		}
	}
	return activity{
		id:    fmt.Sprintf("%08x-0000-4000-8000-%012x", s.idBase()>>36, uint64(s.seq)),
		group: g.Name,
		cause: fmt.Sprintf("At %s an instance was started in response to a difference between desired and actual capacity, increasing the capacity from %d to %d.",
			now.Format(time.RFC3339), running, running+1),
		details: fmt.Sprintf(`{"Subnet ID":%q,"Availability Zone":%q}`, subnet, zone),
		start:   now,
	}
}

func (s *Server) addActivityLocked(a activity) int {
	acts := &s.capacity.acts
	if len(acts.list) >= maxActivities {
		acts.list = slices.Delete(acts.list, 0, len(acts.list)-maxActivities+1)
		acts.byInstance = nil // indexes moved; only launches under way used them
	}
	acts.list = append(acts.list, a)
	return len(acts.list) - 1
}

// launchStartedLocked records the activity of an instance's launch, In
// progress until launchEndedLocked.
func (s *Server) launchStartedLocked(g *group, in *instance) {
	a := s.newActivityLocked(g, in.Zone, in.subnet)
	a.description = "Launching a new EC2 instance: " + in.ID
	a.status = "InProgress"
	if s.capacity.acts.byInstance == nil {
		s.capacity.acts.byInstance = map[string]int{}
	}
	s.capacity.acts.byInstance[in.ID] = s.addActivityLocked(a)
}

// launchEndedLocked ends an instance's launch activity: Successful, or
// Failed with why.
func (s *Server) launchEndedLocked(in *instance, err error) {
	i, ok := s.capacity.acts.byInstance[in.ID]
	if !ok || i >= len(s.capacity.acts.list) {
		return
	}
	delete(s.capacity.acts.byInstance, in.ID)
	a := &s.capacity.acts.list[i]
	a.status, a.end = "Successful", time.Now().UTC()
	if err != nil {
		a.status, a.message = "Failed", statusMessage(err.Error())
	}
}

// statusMessage cuts a message to StatusMessage's 255 characters
// (XmlStringMaxLen255 in botocore's autoscaling model).
func statusMessage(m string) string {
	if r := []rune(m); len(r) > 255 {
		return string(r[:255])
	}
	return m
}

// ScalingActivities are a group's activities, newest first, as
// DescribeScalingActivities answers them: status, zone and message.
func (s *Server) ScalingActivities(groupName string) []ScalingActivity {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ScalingActivity
	for _, a := range slices.Backward(s.capacity.acts.list) {
		if a.group == groupName {
			out = append(out, ScalingActivity{Status: a.status, Message: a.message, Details: a.details})
		}
	}
	return out
}

// ScalingActivity is what a test reads of an activity.
type ScalingActivity struct{ Status, Message, Details string }

// describeActivities answers DescribeScalingActivities: the activities of
// AutoScalingGroupName (all groups' without it) or of ActivityIds.member
// (unknown IDs "are ignored with no error"), newest first, MaxRecords a
// page ("The default value is 100 and the maximum value is 100") with
// NextToken (botocore's DescribeScalingActivitiesType).
func (s *Server) describeActivities(f form) ([]*node, error) {
	name, ids := f.get("AutoScalingGroupName"), f.list("ActivityIds.member")
	limit := 100
	if v, ok, err := f.int32("MaxRecords"); err != nil {
		return nil, err
	} else if ok && v > 0 {
		limit = min(int(v), 100)
	}
	from := 0
	if t := f.get("NextToken"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return nil, &apiError{status: 400, code: "InvalidNextToken", message: "The token '" + t + "' is invalid."}
		}
		from = n
	}
	var sel []activity
	for _, a := range slices.Backward(s.capacity.acts.list) {
		if (name == "" || a.group == name) && (len(ids) == 0 || slices.Contains(ids, a.id)) {
			sel = append(sel, a)
		}
	}
	var items []*node
	for _, a := range sel[min(from, len(sel)):min(from+limit, len(sel))] {
		items = append(items, activityNode(a, s.opts.Region))
	}
	out := []*node{el("Activities", items...)}
	if from+limit < len(sel) {
		out = append(out, txt("NextToken", strconv.Itoa(from+limit)))
	}
	return out, nil
}

func activityNode(a activity, region string) *node {
	n := el("member", txt("ActivityId", a.id), txt("AutoScalingGroupName", a.group),
		txt("Description", a.description), txt("Cause", a.cause),
		txt("StartTime", a.start.Format(timeFormat)), txt("StatusCode", a.status),
		txt("Progress", "100"), txt("Details", a.details),
		txt("AutoScalingGroupARN", fmt.Sprintf("arn:aws:autoscaling:%s:123456789012:autoScalingGroup:00000000-0000-4000-8000-000000000000:autoScalingGroupName/%s", region, a.group)))
	if a.message != "" {
		n.add(txt("StatusMessage", a.message))
	}
	if !a.end.IsZero() {
		n.add(txt("EndTime", a.end.Format(timeFormat)))
	}
	return n
}
