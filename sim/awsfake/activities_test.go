package awsfake

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// TestLaunchRefusedInAZone: a launch EC2 refuses in a zone is a failed
// scaling activity with EC2's message, and the group launches in its
// other zone instead; an open Capacity Reservation in a zone short of
// capacity takes the launch.
func TestLaunchRefusedInAZone(t *testing.T) {
	a, b := "us-east-1a", "us-east-1b"
	tests := []struct {
		name      string
		set       func(f *fixture)
		want      string // the failed activity's message; "" none
		wantZones string // the zones of the two launches
	}{
		{name: "a zone that does not offer the type", set: func(f *fixture) { f.s.WithholdOffering(a, "m5.large") },
			want:      "Your requested instance type (m5.large) is not supported in your requested Availability Zone (us-east-1a). Please retry your request by not specifying an Availability Zone or choosing us-east-1b. Launching EC2 instance failed.",
			wantZones: "us-east-1b us-east-1b"},
		{name: "a subnet with no free address", set: func(f *fixture) { f.s.SetSubnetFree(Subnet(a), 0) },
			want:      "There are not enough free addresses in subnet 'subnet-us-east-1a' to satisfy the requested number of instances. Launching EC2 instance failed.",
			wantZones: "us-east-1b us-east-1b"},
		{name: "a zone short of capacity", set: func(f *fixture) { f.s.SetNoCapacity(a, "m5.large", true) },
			want:      "We currently do not have sufficient m5.large capacity in the Availability Zone you requested (us-east-1a).",
			wantZones: "us-east-1b us-east-1b"},
		{name: "a zone short of capacity with an open reservation", set: func(f *fixture) {
			f.reserve(t, a, 1)
			f.s.SetNoCapacity(a, "m5.large", true)
		}, wantZones: "us-east-1a us-east-1b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, 1)
			if err := f.s.CreateGroup(GroupSpec{Name: "ng2", Min: 0, Max: 2, Desired: 0, Subnets: []string{Subnet(a), Subnet(b)},
				LaunchTemplateID: f.ltID, LaunchTemplateVersion: "1"}); err != nil {
				t.Fatal(err)
			}
			tc.set(f)
			if err := f.s.SetDesired("ng2", 2); err != nil {
				t.Fatal(err)
			}
			if err := f.s.WaitStable(f.ctx, "ng2"); err != nil {
				t.Fatal(err)
			}
			g, _ := f.s.Group("ng2")
			var zones []string
			for _, in := range g.Instances {
				zones = append(zones, in.Zone)
			}
			if got := strings.Join(zones, " "); got != tc.wantZones {
				t.Errorf("launched in %q, want %q", got, tc.wantZones)
			}
			out, err := f.asg.DescribeScalingActivities(f.ctx, &autoscaling.DescribeScalingActivitiesInput{AutoScalingGroupName: aws.String("ng2")})
			if err != nil {
				t.Fatal(err)
			}
			failed := failedIn(out.Activities, a)
			switch {
			case tc.want == "" && failed != "":
				t.Errorf("a launch failed: %q", failed)
			case !strings.HasPrefix(failed, tc.want):
				t.Errorf("the failed activity in %s says %q, want %q", a, failed, tc.want)
			}
		})
	}
}

// failedIn is the StatusMessage of the newest failed activity in zone.
func failedIn(acts []astypes.Activity, zone string) string {
	for _, act := range acts {
		if act.StatusCode == astypes.ScalingActivityStatusCodeFailed && strings.Contains(aws.ToString(act.Details), `"Availability Zone":"`+zone+`"`) {
			return aws.ToString(act.StatusMessage)
		}
	}
	return ""
}

// TestDescribeScalingActivitiesPages: newest first, MaxRecords a page,
// NextToken the rest.
func TestDescribeScalingActivitiesPages(t *testing.T) {
	f := start(t, 3)
	var ids []string
	pg := autoscaling.NewDescribeScalingActivitiesPaginator(f.asg, &autoscaling.DescribeScalingActivitiesInput{AutoScalingGroupName: aws.String("ng1"), MaxRecords: aws.Int32(2)})
	pages := 0
	for pg.HasMorePages() {
		out, err := pg.NextPage(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, act := range out.Activities {
			if act.StatusCode != astypes.ScalingActivityStatusCodeSuccessful || act.StartTime == nil || act.Cause == nil {
				t.Errorf("activity %+v: want Successful with a start and a cause", act)
			}
			ids = append(ids, aws.ToString(act.Description))
		}
	}
	g, _ := f.s.Group("ng1")
	if pages != 2 || len(ids) != 3 || ids[0] != "Launching a new EC2 instance: "+g.Instances[2].ID {
		t.Errorf("%d pages of %q, want 2 pages of the 3 launches, newest first", pages, ids)
	}
}
