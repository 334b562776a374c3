package aws

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.LaunchRefusals = (*NodeGroup)(nil)

// refusal is an EC2 error that ends a launch activity of an Auto Scaling
// group and that no wait outlasts. The activity's StatusMessage is EC2's
// message without its code, followed by "Launching EC2 instance failed.",
// so the code is told by its words, as the Amazon EC2 Auto Scaling User
// Guide lists them ("Troubleshoot Amazon EC2 Auto Scaling: EC2 instance
// launch failures" and "... capacity issues").
type refusal struct{ code, words, fix string }

var refusals = []refusal{
	{"Unsupported", "is not supported in your requested Availability Zone",
		"take the zone's subnet out of the Auto Scaling group, or launch an instance type every zone offers"},
	{"InsufficientFreeAddressesInSubnet", "not enough free addresses in subnet",
		"free addresses in the zone's subnet or give the group a larger one"},
	{"InsufficientInstanceCapacity", "do not have sufficient",
		"wait for EC2's capacity, reserve it before the run (--reserve-surge), or launch another instance type"},
	{"VcpuLimitExceeded", "more vCPU capacity than your current vCPU limit",
		"raise the vCPU quota in Service Quotas"},
	{"InstanceLimitExceeded", "more instances than your current instance limit",
		"raise the instance quota in Service Quotas"},
}

// maxActivityPages bounds how far back LaunchRefused reads (100
// activities a page).
const maxActivityPages = 5

// LaunchRefused implements cloud.LaunchRefusals: the group's scaling
// activities since `since`, newest first (DescribeScalingActivities);
// a zone whose newest launch activity failed with a refusal is refused,
// and the zones with a launch under way or done since have capacity.
func (n *NodeGroup) LaunchRefused(ctx context.Context, since time.Time) (*plan.LaunchFailure, error) {
	var out *plan.LaunchFailure
	seen := map[string]bool{}
	var launched []string
	pg := autoscaling.NewDescribeScalingActivitiesPaginator(n.API.asg, &autoscaling.DescribeScalingActivitiesInput{AutoScalingGroupName: sdkaws.String(n.ASG)})
	for page := 0; pg.HasMorePages() && page < maxActivityPages; page++ {
		res, err := pg.NextPage(ctx)
		if err != nil {
			return nil, wrap(err, "read the scaling activities of Auto Scaling group %q", n.ASG)
		}
		for _, a := range res.Activities {
			if a.StartTime == nil || a.StartTime.Before(since) {
				return withLaunched(out, launched), nil
			}
			zone := activityZone(a)
			if zone == "" || seen[zone] || !strings.HasPrefix(sdkaws.ToString(a.Description), "Launching") {
				continue
			}
			seen[zone] = true
			if r, ok := refusedBy(a); ok {
				out = addRefusal(out, r, a, zone)
			} else if a.StatusCode != astypes.ScalingActivityStatusCodeFailed && a.StatusCode != astypes.ScalingActivityStatusCodeCancelled {
				launched = append(launched, zone)
			}
		}
	}
	return withLaunched(out, launched), nil
}

// refusedBy is the refusal that failed a launch activity.
func refusedBy(a astypes.Activity) (refusal, bool) {
	if a.StatusCode != astypes.ScalingActivityStatusCodeFailed {
		return refusal{}, false
	}
	msg := sdkaws.ToString(a.StatusMessage)
	i := slices.IndexFunc(refusals, func(r refusal) bool { return strings.Contains(msg, r.words) })
	if i < 0 {
		return refusal{}, false
	}
	return refusals[i], true
}

// addRefusal adds a refused zone; the newest refusal names the code.
func addRefusal(out *plan.LaunchFailure, r refusal, a astypes.Activity, zone string) *plan.LaunchFailure {
	if out == nil {
		out = &plan.LaunchFailure{Code: r.code, Message: strings.TrimSuffix(oneLine(sdkaws.ToString(a.StatusMessage)), ". Launching EC2 instance failed"),
			Fix: r.fix, At: sdkaws.ToTime(a.StartTime)}
	}
	out.Zones = append(out.Zones, zone)
	return out
}

func withLaunched(out *plan.LaunchFailure, launched []string) *plan.LaunchFailure {
	if out != nil {
		slices.Sort(launched)
		slices.Sort(out.Zones)
		out.Launched = launched
	}
	return out
}

// activityZone is the zone of a launch activity's Details, a JSON object
// with "Subnet ID" and "Availability Zone" (as the User Guide's "Verify a
// scaling activity" shows them); "" where it names none.
func activityZone(a astypes.Activity) string {
	var d struct {
		Zone string `json:"Availability Zone"`
	}
	if json.Unmarshal([]byte(sdkaws.ToString(a.Details)), &d) != nil {
		return ""
	}
	return d.Zone
}
