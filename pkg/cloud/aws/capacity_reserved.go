package aws

import (
	"cmp"
	"context"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// proveReserved reads the account's active On-Demand Capacity
// Reservations of the type in the group's zones
// (DescribeCapacityReservations, filters instance-type,
// availability-zone, state): the added nodes launch in an "open" one's
// free places ("Instances that have matching attributes run in the
// Capacity Reservation automatically", EC2 User Guide, "Capacity
// Reservation instance eligibility"); a "targeted" one serves only
// launches that name it, which the group's do not unless its launch
// template does, so it is listed, not counted. The run's own
// reservations (--reserve-surge, tagged) are left out: they are its
// surge, not room it found. Spot launches use none.
func proveReserved(ctx context.Context, in capacityInput) ([]plan.ReservedCapacity, []string) {
	if in.spot || len(in.g.Zones) == 0 {
		return nil, nil
	}
	var out []plan.ReservedCapacity
	pg := ec2.NewDescribeCapacityReservationsPaginator(in.p.ec2, &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
		{Name: sdkaws.String("instance-type"), Values: []string{in.typ}},
		{Name: sdkaws.String("availability-zone"), Values: in.g.Zones},
		{Name: sdkaws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}},
	}})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, []string{oneLine(wrap(err, "read the capacity reservations of %s in the group's zones", in.typ).Error())}
		}
		for _, c := range page.CapacityReservations {
			if ownReservation(c) || sdkaws.ToInt32(c.AvailableInstanceCount) <= 0 {
				continue
			}
			out = append(out, plan.ReservedCapacity{ID: sdkaws.ToString(c.CapacityReservationId), Zone: sdkaws.ToString(c.AvailabilityZone),
				InstanceType: sdkaws.ToString(c.InstanceType), Available: sdkaws.ToInt32(c.AvailableInstanceCount),
				Open: c.InstanceMatchCriteria == ec2types.InstanceMatchCriteriaOpen})
		}
	}
	slices.SortFunc(out, func(a, b plan.ReservedCapacity) int { return cmp.Compare(a.Zone+a.ID, b.Zone+b.ID) })
	return out, nil
}

// ownReservation says a reservation is one a run made (--reserve-surge).
func ownReservation(c ec2types.CapacityReservation) bool {
	return slices.ContainsFunc(c.Tags, func(t ec2types.Tag) bool { return sdkaws.ToString(t.Key) == TagReservation })
}
