package awsfake

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	f := start(t, 1)
	f.s.WithholdOffering("us-east-1b", "m5.large")
	filters := func(typ string, locs ...string) []ec2types.Filter {
		return []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{typ}}, {Name: aws.String("location"), Values: locs}}
	}
	tests := []struct {
		name string
		in   ec2.DescribeInstanceTypeOfferingsInput
		want string // location list, or the error
	}{
		{name: "zones that offer the type", want: "us-east-1a us-east-1c",
			in: ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: filters("m5.large", "us-east-1a", "us-east-1b", "us-east-1c")}},
		{name: "another type is offered everywhere", want: "us-east-1a us-east-1b",
			in: ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: filters("c5.large", "us-east-1a", "us-east-1b")}},
		{name: "region by default", want: "us-east-1",
			in: ec2.DescribeInstanceTypeOfferingsInput{Filters: filters("m5.large", "us-east-1")}},
		{name: "an unknown filter", want: "InvalidParameterValue: The filter 'zone' is invalid",
			in: ec2.DescribeInstanceTypeOfferingsInput{Filters: []ec2types.Filter{{Name: aws.String("zone"), Values: []string{"us-east-1a"}}}}},
		{name: "a location type the model does not list", want: "InvalidParameterValue",
			in: ec2.DescribeInstanceTypeOfferingsInput{LocationType: "planet"}},
		{name: "MaxResults below the model's least", want: "InvalidParameterValue",
			in: ec2.DescribeInstanceTypeOfferingsInput{MaxResults: aws.Int32(2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeInstanceTypeOfferings(f.ctx, &tc.in)
			got := errString(err)
			if err == nil {
				var locs []string
				for _, o := range out.InstanceTypeOfferings {
					locs = append(locs, aws.ToString(o.Location))
				}
				got = strings.Join(locs, " ")
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("DescribeInstanceTypeOfferings() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDescribeSubnets(t *testing.T) {
	f := start(t, 1)
	if err := f.s.CreateGroup(GroupSpec{Name: "ng2", Min: 0, Max: 2, Desired: 2, Subnets: []string{Subnet("us-east-1a")},
		LaunchTemplateID: f.ltID, LaunchTemplateVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WaitStable(f.ctx, "ng2"); err != nil {
		t.Fatal(err)
	}
	f.s.SetSubnetFree(Subnet("us-east-1b"), 7)
	tests := []struct {
		name string
		ids  []string
		want string
	}{
		{name: "a subnet's size less its instances, and one a test set", ids: []string{Subnet("us-east-1a"), Subnet("us-east-1b")},
			want: fmt.Sprintf("subnet-us-east-1a us-east-1a %d; subnet-us-east-1b us-east-1b 7", subnetSize-2)},
		{name: "a subnet the fake does not have", ids: []string{"subnet-0abc"}, want: "InvalidSubnetID.NotFound: The subnet ID 'subnet-0abc' does not exist"},
		{name: "a subnet of another region", ids: []string{Subnet("eu-west-1a")}, want: "InvalidSubnetID.NotFound"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.ec2.DescribeSubnets(f.ctx, &ec2.DescribeSubnetsInput{SubnetIds: tc.ids})
			got := errString(err)
			if err == nil {
				var rows []string
				for _, s := range out.Subnets {
					rows = append(rows, fmt.Sprintf("%s %s %d", aws.ToString(s.SubnetId), aws.ToString(s.AvailabilityZone), aws.ToInt32(s.AvailableIpAddressCount)))
				}
				got = strings.Join(rows, "; ")
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("DescribeSubnets() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDescribeInstanceTypesNetwork(t *testing.T) {
	f := start(t, 1)
	out, err := f.ec2.DescribeInstanceTypes(f.ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large", "t3.medium"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range out.InstanceTypes {
		got = append(got, fmt.Sprintf("%s %d×%d", it.InstanceType, aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces), aws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface)))
	}
	if want := "m5.large 3×10, t3.medium 3×6"; strings.Join(got, ", ") != want {
		t.Errorf("DescribeInstanceTypes() = %q, want %q", strings.Join(got, ", "), want)
	}
}
