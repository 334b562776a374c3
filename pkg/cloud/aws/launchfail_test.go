package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// activityXML is one scaling activity as DescribeScalingActivities
// answers it.
func activityXML(start time.Time, status, zone, desc, msg string) string {
	return fmt.Sprintf(`<member><ActivityId>a</ActivityId><AutoScalingGroupName>ng1</AutoScalingGroupName><Cause>c</Cause>
<Description>%s</Description><StartTime>%s</StartTime><StatusCode>%s</StatusCode><StatusMessage>%s</StatusMessage>
<Details>{&quot;Subnet ID&quot;:&quot;subnet-%s&quot;,&quot;Availability Zone&quot;:&quot;%s&quot;}</Details></member>`,
		desc, start.UTC().Format("2006-01-02T15:04:05.000Z"), status, msg, zone, zone)
}

func TestLaunchRefused(t *testing.T) {
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return since.Add(time.Duration(min) * time.Minute) }
	noRoom := "There are not enough free addresses in subnet 'subnet-a' to satisfy the requested number of instances. Launching EC2 instance failed."
	noType := "Your requested instance type (m5.large) is not supported in your requested Availability Zone (us-east-1c). Please retry your request by not specifying an Availability Zone or choosing us-east-1a, us-east-1b. Launching EC2 instance failed."
	launch, failed := "Launching a new EC2 instance: i-1", "Launching a new EC2 instance.  Status Reason: x"
	tests := []struct {
		name string
		acts []string // newest first
		want string   // code, zones refused, zones launched, message; "" none
	}{
		{name: "a full subnet, launches elsewhere", acts: []string{
			activityXML(at(3), "Successful", "us-east-1b", launch, ""),
			activityXML(at(2), "Failed", "us-east-1a", failed, noRoom),
			activityXML(at(1), "Successful", "us-east-1c", launch, ""),
		}, want: "InsufficientFreeAddressesInSubnet [us-east-1a] [us-east-1b us-east-1c] There are not enough free addresses in subnet 'subnet-a' to satisfy the requested number of instances"},
		{name: "a zone without the type", acts: []string{activityXML(at(1), "Failed", "us-east-1c", failed, noType)},
			want: "Unsupported [us-east-1c] [] Your requested instance type (m5.large) is not supported in your requested Availability Zone (us-east-1c). Please retry your request by not specifying an Availability Zone or choosing us-east-1a, us-east-1b"},
		{name: "a refusal the zone launched past", acts: []string{
			activityXML(at(3), "Successful", "us-east-1a", launch, ""),
			activityXML(at(2), "Failed", "us-east-1a", failed, noRoom),
		}},
		{name: "a refusal before the scale-up", acts: []string{activityXML(at(-1), "Failed", "us-east-1a", failed, noRoom)}},
		{name: "a failure no capacity explains", acts: []string{activityXML(at(1), "Failed", "us-east-1a", failed, "The image id '[ami-1]' does not exist. Launching EC2 instance failed.")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `<DescribeScalingActivitiesResponse ` + asgNS + `><DescribeScalingActivitiesResult><Activities>` +
				strings.Join(tc.acts, "") + `</Activities></DescribeScalingActivitiesResult></DescribeScalingActivitiesResponse>`
			replies := baseReplies()
			replies["DescribeScalingActivities"] = fixed(200, body)
			p, f := newTestProvider(t, replies, Options{})
			ng := &NodeGroup{API: p, ASG: "ng1"}
			lf, err := ng.LaunchRefused(context.Background(), since)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if lf != nil {
				got = fmt.Sprintf("%s %v %v %s", lf.Code, lf.Zones, lf.Launched, lf.Message)
			}
			if got != tc.want {
				t.Errorf("LaunchRefused() = %q, want %q", got, tc.want)
			}
			if c := f.last("DescribeScalingActivities"); c.Get("AutoScalingGroupName") != "ng1" {
				t.Errorf("asked for the activities of %q, want ng1", c.Get("AutoScalingGroupName"))
			}
		})
	}
}
