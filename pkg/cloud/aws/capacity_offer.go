package aws

import (
	"context"
	"fmt"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// proveOffered finds the group's zones where EC2 does not offer the
// instance type (DescribeInstanceTypeOfferings, location type
// availability-zone): Auto Scaling launches none of the added nodes there,
// so each such zone is a limit with none free, named with what to do.
func proveOffered(ctx context.Context, in capacityInput) ([]plan.QuotaUse, []string) {
	if len(in.g.Zones) == 0 {
		return nil, nil
	}
	offered, err := offeredZones(ctx, in.p, in.typ, in.g.Zones)
	if err != nil {
		return nil, []string{oneLine(err.Error())}
	}
	var out []plan.QuotaUse
	for _, z := range in.g.Zones {
		if offered[z] {
			continue
		}
		out = append(out, plan.QuotaUse{
			Scope: strings.Join([]string{"aws", accountOf(in.g.ARN), in.p.region, in.typ, z}, "/"),
			Name: fmt.Sprintf("%s in zone %s, where EC2 does not offer it (take the zone's subnet out of Auto Scaling group %q or launch another instance type)",
				in.typ, z, in.g.Name),
			Unit: "instance", Needed: int64(in.added),
		})
	}
	return out, nil
}

// offeredZones are those of zones where EC2 offers typ.
func offeredZones(ctx context.Context, p *Client, typ string, zones []string) (map[string]bool, error) {
	out := map[string]bool{}
	pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		Filters: []ec2types.Filter{
			{Name: sdkaws.String("instance-type"), Values: []string{typ}},
			{Name: sdkaws.String("location"), Values: zones},
		},
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, wrap(err, "read the zones that offer instance type %q", typ)
		}
		for _, o := range page.InstanceTypeOfferings {
			if string(o.InstanceType) == typ {
				out[sdkaws.ToString(o.Location)] = true
			}
		}
	}
	return out, nil
}
