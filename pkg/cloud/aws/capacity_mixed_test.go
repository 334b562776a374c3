package aws

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// mixedTypesXML describes the mixed group's types: two of the Standard
// quota (4 and 8 vCPUs) and a G one (4).
const mixedTypesXML = `<DescribeInstanceTypesResponse ` + ec2NS + `><instanceTypeSet>
<item><instanceType>m5.xlarge</instanceType><vCpuInfo><defaultVCpus>4</defaultVCpus></vCpuInfo></item>
<item><instanceType>c5.2xlarge</instanceType><vCpuInfo><defaultVCpus>8</defaultVCpus></vCpuInfo></item>
<item><instanceType>g4dn.xlarge</instanceType><vCpuInfo><defaultVCpus>4</defaultVCpus></vCpuInfo></item>
</instanceTypeSet></DescribeInstanceTypesResponse>`

// TestProveMixed: a mixed instances policy's group may launch any of its
// types, so each vCPU quota they count against is held to every added
// node launched as its largest type, and a zone is refused only where EC2
// offers none of them.
func TestProveMixed(t *testing.T) {
	g := &AutoScalingGroup{Name: "ng1", ARN: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:u:autoScalingGroupName/ng1",
		Zones: []string{"us-east-1a", "us-east-1b"}, mixed: true, overrides: []string{"m5.xlarge", "c5.2xlarge", "g4dn.xlarge"}}
	replies := baseReplies()
	replies["DescribeInstances"] = fixed(200, `<DescribeInstancesResponse `+ec2NS+`><reservationSet>`+instanceXML("i-1", "m5.xlarge", "")+`</reservationSet></DescribeInstancesResponse>`)
	replies["DescribeInstanceTypes"] = fixed(200, mixedTypesXML)
	// us-east-1b offers m5.xlarge alone; us-east-1a none of the types.
	replies["DescribeInstanceTypeOfferings"] = func(v url.Values) reply {
		if filterValues(v, "instance-type")[0] != "m5.xlarge" {
			return offerings(map[string]bool{"us-east-1a": true, "us-east-1b": true})(v)
		}
		return offerings(map[string]bool{"us-east-1a": true})(v)
	}
	api, _ := quotaAPI(t, replies, map[string]float64{"L-1216C47A": 32, "L-DB2E81BA": 4})
	in := capacityInput{p: api, g: g, added: 2}
	quotas, unprovable := proveMixedVCPUs(context.Background(), in)
	const worst = ", as if every added node were a %s, the largest it counts of the mixed instances policy's m5.xlarge, c5.2xlarge, g4dn.xlarge"
	want := []plan.QuotaUse{
		{Scope: "aws/123456789012/us-east-1/L-1216C47A", Name: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances (L-1216C47A)" + fmt.Sprintf(worst, "c5.2xlarge"),
			Unit: "vCPU", Needed: 16, Free: 28, Limit: 32, PerNode: 8},
		{Scope: "aws/123456789012/us-east-1/L-DB2E81BA", Name: "Running On-Demand G and VT instances (L-DB2E81BA)" + fmt.Sprintf(worst, "g4dn.xlarge"),
			Unit: "vCPU", Needed: 8, Free: 4, Limit: 4, PerNode: 4},
	}
	if fmt.Sprint(quotas) != fmt.Sprint(want) || len(unprovable) > 0 {
		t.Errorf("vCPUs = %+v, %q\nwant %+v", quotas, unprovable, want)
	}
	offered, unprovable := proveMixedOffered(context.Background(), in)
	if len(offered) != 1 || !strings.HasPrefix(offered[0].Name, "any of m5.xlarge, c5.2xlarge, g4dn.xlarge in zone us-east-1a, where EC2 offers none of them") ||
		offered[0].Needed != 2 || offered[0].Free != 0 || len(unprovable) > 0 {
		t.Errorf("offered = %+v, %q; want us-east-1a alone refused", offered, unprovable)
	}
}

// TestMixedOverridesRead: a group's mixed instances policy's overrides
// (DescribeAutoScalingGroups, MixedInstancesPolicy.LaunchTemplate.Overrides,
// botocore's autoscaling model) are the types it may launch.
func TestMixedOverridesRead(t *testing.T) {
	replies := baseReplies()
	replies["DescribeAutoScalingGroups"] = fixed(200, strings.Replace(groupXML,
		"<LaunchTemplate><LaunchTemplateId>lt-1</LaunchTemplateId><LaunchTemplateName>ng1</LaunchTemplateName><Version>$Latest</Version></LaunchTemplate>",
		"<MixedInstancesPolicy><LaunchTemplate><LaunchTemplateSpecification><LaunchTemplateId>lt-1</LaunchTemplateId><Version>$Latest</Version></LaunchTemplateSpecification>"+
			"<Overrides><member><InstanceType>m5.xlarge</InstanceType></member><member><InstanceType>c5.2xlarge</InstanceType></member></Overrides></LaunchTemplate></MixedInstancesPolicy>", 1))
	api, _ := quotaAPI(t, replies, nil)
	g, err := api.Group(context.Background(), "ng1")
	if err != nil {
		t.Fatal(err)
	}
	if !g.mixed || strings.Join(g.overrides, ",") != "m5.xlarge,c5.2xlarge" {
		t.Errorf("mixed %v, overrides %v; want m5.xlarge and c5.2xlarge", g.mixed, g.overrides)
	}
}
