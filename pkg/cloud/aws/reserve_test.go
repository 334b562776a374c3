package aws

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// reserveReplies answer ng1 (i-1 in us-east-1a, i-2 in us-east-1b, i-3
// leaving) of type typ, and the reservations found by tag.
func reserveReplies(typ, lifecycle, found string) map[string]func(url.Values) reply {
	replies := baseReplies()
	replies["DescribeInstances"] = fixed(200, `<DescribeInstancesResponse `+ec2NS+`><reservationSet>`+instanceXML("i-1", typ, lifecycle)+instanceXML("i-2", typ, lifecycle)+`</reservationSet></DescribeInstancesResponse>`)
	set := ""
	if found != "" {
		set = `<item><capacityReservationId>` + found + `</capacityReservationId><state>active</state></item>`
	}
	replies["DescribeCapacityReservations"] = fixed(200, `<DescribeCapacityReservationsResponse `+ec2NS+`><capacityReservationSet>`+set+`</capacityReservationSet></DescribeCapacityReservationsResponse>`)
	replies["CreateCapacityReservation"] = fixed(200, `<CreateCapacityReservationResponse `+ec2NS+`><capacityReservation><capacityReservationId>cr-new</capacityReservationId></capacityReservation></CreateCapacityReservationResponse>`)
	replies["CancelCapacityReservation"] = fixed(200, `<CancelCapacityReservationResponse `+ec2NS+`><return>true</return></CancelCapacityReservationResponse>`)
	return replies
}

// TestPlanReservations: the added instances go where Auto Scaling puts
// them, the zone with the fewest first (leaving ones not counted).
func TestPlanReservations(t *testing.T) {
	tests := []struct {
		name, lifecycle string
		added           int32
		want            string
	}{
		{name: "three added over two zones", added: 3, want: "us-east-1a 2 m5.xlarge tok-us-east-1a; us-east-1b 1 m5.xlarge tok-us-east-1b"},
		{name: "one added", added: 1, want: "us-east-1a 1 m5.xlarge tok-us-east-1a"},
		{name: "spot instances", lifecycle: "spot", added: 1, want: "runs Spot Instances"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newTestProvider(t, reserveReplies("m5.xlarge", tc.lifecycle, ""), Options{})
			rs, err := (&NodeGroup{API: p, ASG: "ng1", Surge: true}).PlanReservations(context.Background(), tc.added, "tok")
			got := fmt.Sprint(err)
			if err == nil {
				var parts []string
				for _, r := range rs {
					parts = append(parts, fmt.Sprintf("%s %d %s %s", r.Zone, r.Count, r.InstanceType, r.Token))
				}
				got = strings.Join(parts, "; ")
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("PlanReservations() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReserveAndRelease: a reservation is found by its token's tag, or
// made with the token as ClientToken, open, limited, tagged; a refusal is
// EC2's; a release cancels, and one gone is released.
func TestReserveAndRelease(t *testing.T) {
	r := plan.Reservation{Zone: "us-east-1a", InstanceType: "m5.large", Count: 2, Token: "tok-us-east-1a"}
	t.Run("made", func(t *testing.T) {
		p, f := newTestProvider(t, reserveReplies("m5.large", "", ""), Options{})
		id, err := (&NodeGroup{API: p, ASG: "ng1"}).Reserve(context.Background(), r)
		if err != nil || id != "cr-new" {
			t.Fatalf("Reserve() = %q, %v", id, err)
		}
		c := f.last("CreateCapacityReservation")
		for k, want := range map[string]string{"ClientToken": "tok-us-east-1a", "InstanceMatchCriteria": "open", "EndDateType": "limited", "InstanceCount": "2",
			"AvailabilityZone": "us-east-1a", "InstancePlatform": "Linux/UNIX", "TagSpecifications.1.ResourceType": "capacity-reservation",
			"TagSpecifications.1.Tag.1.Key": TagReservation, "TagSpecifications.1.Tag.1.Value": "tok-us-east-1a"} {
			if c.Get(k) != want {
				t.Errorf("CreateCapacityReservation %s = %q, want %q", k, c.Get(k), want)
			}
		}
		if c.Get("EndDate") == "" {
			t.Errorf("no EndDate: %v", c)
		}
		if d := f.last("DescribeCapacityReservations"); d.Get("Filter.1.Name") != "tag:"+TagReservation || d.Get("Filter.1.Value.1") != "tok-us-east-1a" {
			t.Errorf("looked for it with %v", d)
		}
	})
	t.Run("found by its token", func(t *testing.T) {
		p, f := newTestProvider(t, reserveReplies("m5.large", "", "cr-old"), Options{})
		id, err := (&NodeGroup{API: p, ASG: "ng1"}).Reserve(context.Background(), r)
		if err != nil || id != "cr-old" || len(f.callsOf("CreateCapacityReservation")) != 0 {
			t.Errorf("Reserve() = %q, %v, creates %d: want the one found", id, err, len(f.callsOf("CreateCapacityReservation")))
		}
	})
	t.Run("no capacity", func(t *testing.T) {
		replies := reserveReplies("m5.large", "", "")
		replies["CreateCapacityReservation"] = func(url.Values) reply { return ec2Error("InsufficientInstanceCapacity", "Insufficient capacity.") }
		p, _ := newTestProvider(t, replies, Options{})
		_, err := (&NodeGroup{API: p, ASG: "ng1"}).Reserve(context.Background(), r)
		if want := `cannot reserve 2 m5.large in zone "us-east-1a" for the scale-up (--reserve-surge): InsufficientInstanceCapacity: Insufficient capacity`; err == nil || err.Error() != want {
			t.Errorf("Reserve() = %v, want %q", err, want)
		}
	})
	for _, tc := range []struct {
		name, id, found string
		cancel          func(url.Values) reply
		wantCancel      string
	}{
		{name: "by ID", id: "cr-1", wantCancel: "cr-1"},
		{name: "by its token", found: "cr-2", wantCancel: "cr-2"},
		{name: "never made", wantCancel: ""},
		{name: "gone", id: "cr-1", wantCancel: "cr-1", cancel: func(url.Values) reply {
			return ec2Error("InvalidCapacityReservationId.NotFound", "The capacity reservation ID 'cr-1' does not exist")
		}},
	} {
		t.Run("release "+tc.name, func(t *testing.T) {
			replies := reserveReplies("m5.large", "", tc.found)
			if tc.cancel != nil {
				replies["CancelCapacityReservation"] = tc.cancel
			}
			p, f := newTestProvider(t, replies, Options{})
			rel := r
			rel.ID = tc.id
			if err := (&NodeGroup{API: p, ASG: "ng1"}).Release(context.Background(), rel); err != nil {
				t.Fatal(err)
			}
			got := ""
			if c := f.last("CancelCapacityReservation"); c != nil {
				got = c.Get("CapacityReservationId")
			}
			if got != tc.wantCancel {
				t.Errorf("cancelled %q, want %q", got, tc.wantCancel)
			}
		})
	}
}

// TestRefuseReserve: --reserve-surge is refused where the run makes no
// scale-up of its own.
func TestRefuseReserve(t *testing.T) {
	on := map[string]string{optReserveSurge: "true"}
	for _, tc := range []struct {
		name    string
		t       plan.CloudTarget
		managed bool
		want    string
	}{
		{name: "eks", t: plan.CloudTarget{Options: on, Strategy: plan.StrategyEKS}},
		{name: "surge", t: plan.CloudTarget{Options: on, Strategy: plan.StrategySurge}},
		{name: "blue-green", t: plan.CloudTarget{Options: on, Strategy: "blue-green"}, want: "not --strategy blue-green"},
		{name: "a managed node group", t: plan.CloudTarget{Options: on}, managed: true, want: "EKS managed node group"},
		{name: "not asked", t: plan.CloudTarget{Strategy: "blue-green"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseReserve(tc.t, "ng1", tc.managed)
			if got := fmt.Sprint(err); (tc.want == "") != (err == nil) || !strings.Contains(got, tc.want) {
				t.Errorf("refuseReserve() = %v, want %q", err, tc.want)
			}
			if err != nil && !err.(*Error).Input() {
				t.Errorf("error %v is not the user's to fix (exit 2)", err)
			}
		})
	}
}
