package aws

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// --reserve-surge: an On-Demand Capacity Reservation per zone and
// instance type for each scale-up, made before it, used by its launches
// and cancelled once the new nodes are Ready (EC2 User Guide, "On-Demand
// Capacity Reservations"; API Reference, CreateCapacityReservation,
// DescribeCapacityReservations, CancelCapacityReservation).

var _ cloud.SurgeReserver = (*NodeGroup)(nil)

const (
	optReserveSurge = "reserve-surge"
	// TagReservation names a reservation by the run's token, so that a
	// run killed before it recorded the ID finds it again.
	TagReservation = "nodeupgrade.dev/reservation"
	// reserveFor is how long a reservation holds if no run cancels it
	// (EndDateType limited): a killed run that never comes back leaves
	// nothing reserved, and billed, for longer.
	reserveFor = 6 * time.Hour
	// tokenMax is ClientToken's length ("Constraint: Maximum 64 ASCII
	// characters", CreateCapacityReservation).
	tokenMax = 64
)

// refuseReserve refuses --reserve-surge where the run makes no scale-up
// of its own to reserve for.
func refuseReserve(t plan.CloudTarget, group string, managed bool) error {
	if t.Options[optReserveSurge] != "true" {
		return nil
	}
	if managed {
		return inputErrorf("--reserve-surge: %q is an EKS managed node group, whose scale-up EKS makes; leave out --reserve-surge", group)
	}
	if s := t.Strategy; s != "" && s != plan.StrategyEKS && s != plan.StrategySurge {
		return inputErrorf("--reserve-surge serves the eks and surge strategies' scale-ups, not --strategy %s; leave it out or use --strategy eks or surge", s)
	}
	return nil
}

// ReservesSurge implements cloud.SurgeReserver.
func (n *NodeGroup) ReservesSurge() bool { return n.Surge }

// PlanReservations implements cloud.SurgeReserver: added instances of the
// type the target launches, placed as Auto Scaling places them, one at a
// time in the zone with the fewest ("Availability Zone distribution",
// Auto Scaling User Guide), ties in the group's order of zones.
func (n *NodeGroup) PlanReservations(ctx context.Context, added int32, token string) ([]plan.Reservation, error) {
	g, err := n.API.Group(ctx, n.ASG)
	if err != nil {
		return nil, err
	}
	typ, spot, err := groupInstanceType(ctx, n.API, g)
	if t := n.templateType(ctx, g); t != "" {
		typ = t
	}
	switch {
	case err != nil:
		return nil, err
	case spot:
		return nil, inputErrorf("--reserve-surge: Auto Scaling group %q runs Spot Instances, which On-Demand Capacity Reservations do not serve; leave out --reserve-surge", g.Name)
	case typ == "" || g.mixed:
		return nil, inputErrorf("--reserve-surge: Auto Scaling group %q launches no one instance type to reserve (a mixed instances policy, or no instance to read it from); leave out --reserve-surge", g.Name)
	}
	per := map[string]int32{}
	for _, in := range g.Instances {
		if machineState(in.Lifecycle) != plan.MachineLeaving {
			per[in.Zone]++
		}
	}
	count := map[string]int32{}
	for range added {
		z := slices.MinFunc(g.Zones, func(a, b string) int { return int(per[a] - per[b]) })
		per[z]++
		count[z]++
	}
	var out []plan.Reservation
	for _, z := range g.Zones {
		if count[z] > 0 {
			out = append(out, plan.Reservation{Zone: z, InstanceType: typ, Count: count[z], Token: reservationToken(token, z)})
		}
	}
	return out, nil
}

// reservationToken is the run's token with the zone, cut to ClientToken's
// length.
func reservationToken(token, zone string) string {
	t := token + "-" + zone
	if len(t) > tokenMax {
		t = t[len(t)-tokenMax:]
	}
	return t
}

// Reserve implements cloud.SurgeReserver: the active reservation tagged
// with the token, or a new one (ClientToken the token: a retry makes no
// second one). InsufficientInstanceCapacity is EC2 without the capacity.
func (n *NodeGroup) Reserve(ctx context.Context, r plan.Reservation) (string, error) {
	if found, err := n.findReservation(ctx, r.Token); err != nil || found != "" {
		return found, err
	}
	tags := []ec2types.Tag{{Key: sdkaws.String(TagReservation), Value: sdkaws.String(r.Token)}, {Key: sdkaws.String("nodeupgrade.dev/group"), Value: sdkaws.String(n.ASG)}}
	out, err := n.API.ec2.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: sdkaws.String(r.InstanceType), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		InstanceCount: sdkaws.Int32(r.Count), AvailabilityZone: sdkaws.String(r.Zone),
		InstanceMatchCriteria: ec2types.InstanceMatchCriteriaOpen,
		EndDateType:           ec2types.EndDateTypeLimited, EndDate: sdkaws.Time(time.Now().Add(reserveFor)),
		ClientToken:       sdkaws.String(r.Token),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation, Tags: tags}},
	})
	if err != nil {
		return "", wrap(err, "reserve %d %s in zone %q for the scale-up (--reserve-surge)", r.Count, r.InstanceType, r.Zone)
	}
	return sdkaws.ToString(out.CapacityReservation.CapacityReservationId), nil
}

// findReservation is the ID of the active reservation tagged token, "" if
// none.
func (n *NodeGroup) findReservation(ctx context.Context, token string) (string, error) {
	out, err := n.API.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
		{Name: sdkaws.String("tag:" + TagReservation), Values: []string{token}},
		{Name: sdkaws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}}})
	if err != nil {
		return "", wrap(err, "find the capacity reservation of the run (tag %s=%s)", TagReservation, token)
	}
	for _, c := range out.CapacityReservations {
		return sdkaws.ToString(c.CapacityReservationId), nil
	}
	return "", nil
}

// Release implements cloud.SurgeReserver.
func (n *NodeGroup) Release(ctx context.Context, r plan.Reservation) error {
	id := r.ID
	if id == "" {
		found, err := n.findReservation(ctx, r.Token)
		if err != nil || found == "" {
			return err
		}
		id = found
	}
	_, err := n.API.ec2.CancelCapacityReservation(ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: sdkaws.String(id)})
	var ae smithy.APIError
	if errors.As(err, &ae) && strings.HasPrefix(ae.ErrorCode(), "InvalidCapacityReservationId") {
		return nil // gone: nothing is reserved
	}
	if err != nil {
		return wrap(err, "cancel capacity reservation %q", id)
	}
	return nil
}
