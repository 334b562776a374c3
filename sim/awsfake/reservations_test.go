package awsfake

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// reserve makes an open reservation of n m5.large in zone.
func (f *fixture) reserve(t *testing.T, zone string, n int32) string {
	t.Helper()
	out, err := f.ec2.CreateCapacityReservation(f.ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("m5.large"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		InstanceCount: aws.Int32(n), AvailabilityZone: aws.String(zone)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.CapacityReservation.CapacityReservationId)
}

func TestCreateCapacityReservation(t *testing.T) {
	base := func() ec2.CreateCapacityReservationInput {
		return ec2.CreateCapacityReservationInput{InstanceType: aws.String("m5.large"),
			InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix, InstanceCount: aws.Int32(2),
			AvailabilityZone: aws.String("us-east-1a"), ClientToken: aws.String("tok-1"),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation,
				Tags: []ec2types.Tag{{Key: aws.String("run"), Value: aws.String("ng1")}}}}}
	}
	tests := []struct {
		name   string
		change func(in *ec2.CreateCapacityReservationInput)
		short  bool
		want   string // "open unlimited active 2/2 run=ng1", or the error
	}{
		{name: "the defaults", change: func(*ec2.CreateCapacityReservationInput) {}, want: "open unlimited active 2/2 run=ng1"},
		{name: "limited with an end", change: func(in *ec2.CreateCapacityReservationInput) {
			in.EndDateType, in.EndDate = ec2types.EndDateTypeLimited, aws.Time(time.Now().Add(time.Hour))
		}, want: "open limited active 2/2 run=ng1"},
		{name: "limited without an end", change: func(in *ec2.CreateCapacityReservationInput) { in.EndDateType = ec2types.EndDateTypeLimited },
			want: "InvalidParameterCombination"},
		{name: "no zone", change: func(in *ec2.CreateCapacityReservationInput) { in.AvailabilityZone = nil }, want: "MissingParameter"},
		{name: "a match criteria the model does not list", change: func(in *ec2.CreateCapacityReservationInput) { in.InstanceMatchCriteria = "any" },
			want: "InvalidParameterValue"},
		{name: "no capacity", change: func(*ec2.CreateCapacityReservationInput) {}, short: true, want: "InsufficientInstanceCapacity: Insufficient capacity."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, 1)
			f.s.SetNoCapacity("us-east-1a", "m5.large", tc.short)
			in := base()
			tc.change(&in)
			var got string
			for range 2 { // the same ClientToken: one reservation
				out, err := f.ec2.CreateCapacityReservation(f.ctx, &in)
				got = errString(err)
				if err == nil {
					r := out.CapacityReservation
					got = fmt.Sprintf("%s %s %s %d/%d %s=%s", r.InstanceMatchCriteria, r.EndDateType, r.State,
						aws.ToInt32(r.AvailableInstanceCount), aws.ToInt32(r.TotalInstanceCount), aws.ToString(r.Tags[0].Key), aws.ToString(r.Tags[0].Value))
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("CreateCapacityReservation() = %q, want %q", got, tc.want)
			}
			if n := len(f.s.Reservations()); (refused(got) && n != 0) || (!refused(got) && n != 1) {
				t.Errorf("%d reservations made", n)
			}
		})
	}
}

func refused(got string) bool { return !strings.HasPrefix(got, "open ") }

// TestReservationConsumedAndCancelled: a launch of the type in the zone
// runs in the open reservation; its end gives the place back; a
// cancelled reservation is described cancelled and reserves nothing.
func TestReservationConsumedAndCancelled(t *testing.T) {
	f := start(t, 1)
	ids := map[string]string{}
	for _, z := range zones {
		ids[z] = f.reserve(t, z, 1)
	}
	if err := f.s.SetDesired("ng1", 2); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitStable(f.ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	g, _ := f.s.Group("ng1")
	added := g.Instances[1]
	for _, r := range f.s.Reservations() {
		if want := r.Zone == added.Zone; (r.Launched == 1) != want || (r.Available == 0) != want {
			t.Errorf("reservation %+v: want the launch in %s in its zone's alone", r, added.Zone)
		}
	}
	id := ids[added.Zone]
	if err := f.s.TerminateInstance(added.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitStable(f.ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	if r := f.s.Reservations()[slices.Index(zones, added.Zone)]; r.Available != 1 {
		t.Errorf("reservation %+v: want its place back", r)
	}
	if _, err := f.ec2.CancelCapacityReservation(f.ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	out, err := f.ec2.DescribeCapacityReservations(f.ctx, &ec2.DescribeCapacityReservationsInput{
		Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{"cancelled"}}}})
	if err != nil || len(out.CapacityReservations) != 1 || aws.ToInt32(out.CapacityReservations[0].AvailableInstanceCount) != 0 {
		t.Errorf("DescribeCapacityReservations(state=cancelled) = %+v, %v: want the one, none available", out, err)
	}
	if _, err := f.ec2.CancelCapacityReservation(f.ctx, &ec2.CancelCapacityReservationInput{CapacityReservationId: aws.String("cr-0123456789abcdef0")}); !strings.Contains(errString(err), "InvalidCapacityReservationId.NotFound") {
		t.Errorf("cancel of an unknown reservation: %v", err)
	}
}
