package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// quotasAndEC2 answers Service Quotas (JSON 1.1, told apart by its
// X-Amz-Target) from quotas, and the rest as fakeAWS does.
type quotasAndEC2 struct {
	quotas map[string]float64
	asked  []string
	rest   *fakeAWS
}

func (f *quotasAndEC2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "ServiceQuotasV20190624.GetServiceQuota" {
		f.rest.ServeHTTP(w, r)
		return
	}
	var in struct{ ServiceCode, QuotaCode string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	f.asked = append(f.asked, in.ServiceCode+"/"+in.QuotaCode)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	v, ok := f.quotas[in.QuotaCode]
	if !ok {
		w.WriteHeader(400)
		_, _ = fmt.Fprintf(w, `{"__type":"NoSuchResourceException","message":"The request failed because the specified service quota %s does not exist."}`, in.QuotaCode)
		return
	}
	_, _ = fmt.Fprintf(w, `{"Quota":{"ServiceCode":%q,"QuotaCode":%q,"Value":%v}}`, in.ServiceCode, in.QuotaCode, v)
}

// quotaAPI is a client of an endpoint that answers Service Quotas from
// quotas and EC2 and Auto Scaling from replies.
func quotaAPI(t *testing.T, replies map[string]func(url.Values) reply, quotas map[string]float64) (*Client, *quotasAndEC2) {
	t.Helper()
	f := &quotasAndEC2{quotas: quotas, rest: &fakeAWS{replies: replies}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return NewFromConfig(sdkaws.Config{Region: "us-east-1", BaseEndpoint: sdkaws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}, Options{}), f
}

func instanceXML(id, typ, lifecycle string) string {
	lc := ""
	if lifecycle != "" {
		lc = "<instanceLifecycle>" + lifecycle + "</instanceLifecycle>"
	}
	return `<item><instancesSet><item><instanceId>` + id + `</instanceId><instanceType>` + typ + `</instanceType>` + lc + `</item></instancesSet></item>`
}

const instanceTypesXML = `<DescribeInstanceTypesResponse ` + ec2NS + `><instanceTypeSet>
<item><instanceType>m5.xlarge</instanceType><vCpuInfo><defaultVCpus>4</defaultVCpus></vCpuInfo></item>
<item><instanceType>c5.2xlarge</instanceType><vCpuInfo><defaultVCpus>8</defaultVCpus></vCpuInfo></item>
</instanceTypeSet></DescribeInstanceTypesResponse>`

// noSubnets is what ProveCapacity says of groupXML, which names no subnets.
var noSubnets = []string{`Auto Scaling group "ng1" names no subnets (VPCZoneIdentifier): the addresses of the nodes it adds are not proven`}

func TestProveCapacity(t *testing.T) {
	// The region runs the group's i-1 and i-2 (m5.xlarge, 4 vCPUs each),
	// a c5.2xlarge (8, Standard too), a g4dn (another bucket) and a Spot
	// m5 (another market): 16 vCPUs of the On-Demand Standard quota.
	region := instanceXML("i-1", "m5.xlarge", "") + instanceXML("i-2", "m5.xlarge", "") + instanceXML("i-9", "c5.2xlarge", "") +
		instanceXML("i-8", "g4dn.xlarge", "") + instanceXML("i-7", "m5.xlarge", "spot")
	tests := []struct {
		name      string
		instances string
		template  string // what the launch template version names beside its image
		reserved  string // DescribeCapacityReservations' items
		added     int32
		want      plan.CapacityPlan
		asked     []string
	}{
		{name: "the surge exceeds the quota", instances: region, added: 6,
			want: plan.CapacityPlan{Quotas: []plan.QuotaUse{{Scope: "aws/123456789012/us-east-1/L-1216C47A",
				Name: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances (L-1216C47A)", Unit: "vCPU",
				Needed: 24, Free: 16, Limit: 32, PerNode: 4}}, Unprovable: noSubnets, InstanceType: "m5.xlarge"},
			asked: []string{"ec2/L-1216C47A"}},
		{name: "the surge fits", instances: region, added: 4,
			want: plan.CapacityPlan{Quotas: []plan.QuotaUse{{Scope: "aws/123456789012/us-east-1/L-1216C47A",
				Name: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances (L-1216C47A)", Unit: "vCPU",
				Needed: 16, Free: 16, Limit: 32, PerNode: 4}}, Unprovable: noSubnets, InstanceType: "m5.xlarge"},
			asked: []string{"ec2/L-1216C47A"}},
		{name: "spot instances count against the Spot quota", added: 1,
			instances: instanceXML("i-1", "m5.xlarge", "spot") + instanceXML("i-5", "m5.xlarge", ""),
			want: plan.CapacityPlan{Quotas: []plan.QuotaUse{{Scope: "aws/123456789012/us-east-1/L-34B43A08",
				Name: "Running Spot Standard (A, C, D, H, I, M, R, T, Z) instances (L-34B43A08)", Unit: "vCPU",
				Needed: 4, Free: 60, Limit: 64, PerNode: 4}}, Unprovable: noSubnets, InstanceType: "m5.xlarge"},
			asked: []string{"ec2/L-34B43A08"}},
		{name: "the target template's type, not the instances'", instances: region, added: 1,
			template: `<instanceType>c5.2xlarge</instanceType>`,
			want: plan.CapacityPlan{Quotas: []plan.QuotaUse{{Scope: "aws/123456789012/us-east-1/L-1216C47A",
				Name: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances (L-1216C47A)", Unit: "vCPU",
				Needed: 8, Free: 16, Limit: 32, PerNode: 8}}, Unprovable: noSubnets, InstanceType: "c5.2xlarge"},
			asked: []string{"ec2/L-1216C47A"}},
		{name: "existing reservations: open ones counted, targeted ones listed, the run's own left out", instances: region, added: 4,
			reserved: reservationXML("cr-open", "us-east-1a", "open", 3, "") + reservationXML("cr-full", "us-east-1a", "open", 0, "") +
				reservationXML("cr-targeted", "us-east-1b", "targeted", 2, "") + reservationXML("cr-run", "us-east-1b", "open", 2, TagReservation),
			want: plan.CapacityPlan{Quotas: []plan.QuotaUse{{Scope: "aws/123456789012/us-east-1/L-1216C47A",
				Name: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances (L-1216C47A)", Unit: "vCPU",
				Needed: 16, Free: 16, Limit: 32, PerNode: 4}}, Unprovable: noSubnets, InstanceType: "m5.xlarge",
				Reserved: []plan.ReservedCapacity{{ID: "cr-open", Zone: "us-east-1a", InstanceType: "m5.xlarge", Available: 3, Open: true},
					{ID: "cr-targeted", Zone: "us-east-1b", InstanceType: "m5.xlarge", Available: 2}}},
			asked: []string{"ec2/L-1216C47A"}},
		{name: "an unknown family is not guessed", instances: instanceXML("i-1", "zz9.large", ""), added: 2,
			want: plan.CapacityPlan{Unprovable: append([]string{`instance type "zz9.large" is of a family without a known vCPU quota`}, noSubnets...), InstanceType: "zz9.large"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeAutoScalingGroups"] = fixed(200, strings.Replace(groupXML, "<AutoScalingGroupName>ng1</AutoScalingGroupName>",
				"<AutoScalingGroupName>ng1</AutoScalingGroupName><AutoScalingGroupARN>arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:uuid:autoScalingGroupName/ng1</AutoScalingGroupARN>", 1))
			replies["DescribeInstances"] = fixed(200, `<DescribeInstancesResponse `+ec2NS+`><reservationSet>`+tc.instances+`</reservationSet></DescribeInstancesResponse>`)
			replies["DescribeInstanceTypes"] = func(v url.Values) reply { return reply{200, instanceTypesXML} }
			replies["DescribeInstanceTypeOfferings"] = offerings(nil)
			replies["DescribeCapacityReservations"] = fixed(200, `<DescribeCapacityReservationsResponse `+ec2NS+`><capacityReservationSet>`+tc.reserved+`</capacityReservationSet></DescribeCapacityReservationsResponse>`)
			replies["DescribeLaunchTemplateVersions"] = fixed(200, strings.Replace(ltv2XML, "<imageId>ami-new</imageId>", "<imageId>ami-new</imageId>"+tc.template, 1))
			api, f := quotaAPI(t, replies, map[string]float64{"L-1216C47A": 32, "L-34B43A08": 64})
			got, err := (&NodeGroup{API: api, ASG: "ng1"}).ProveCapacity(context.Background(), tc.added)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(*got) != fmt.Sprint(tc.want) {
				t.Errorf("ProveCapacity() = %+v\nwant %+v", *got, tc.want)
			}
			if fmt.Sprint(f.asked) != fmt.Sprint(tc.asked) {
				t.Errorf("quotas asked %v, want %v", f.asked, tc.asked)
			}
		})
	}
}

// reservationXML is a Capacity Reservation of m5.xlarge as
// DescribeCapacityReservations describes it (botocore's ec2 model,
// CapacityReservation), tagged with tag when it is not "".
func reservationXML(id, zone, match string, available int, tag string) string {
	tags := ""
	if tag != "" {
		tags = "<tagSet><item><key>" + tag + "</key><value>t</value></item></tagSet>"
	}
	return fmt.Sprintf(`<item><capacityReservationId>%s</capacityReservationId><instanceType>m5.xlarge</instanceType><availabilityZone>%s</availabilityZone>`+
		`<instanceMatchCriteria>%s</instanceMatchCriteria><availableInstanceCount>%d</availableInstanceCount><state>active</state>%s</item>`, id, zone, match, available, tags)
}

func TestBucketOf(t *testing.T) {
	for typ, want := range map[string]string{"m7g.large": "L-1216C47A", "im4gn.xlarge": "L-1216C47A", "g4dn.xlarge": "L-DB2E81BA",
		"vt1.3xlarge": "L-DB2E81BA", "inf2.xlarge": "L-1945791B", "p4d.24xlarge": "L-417A185B", "x2idn.16xlarge": "L-7295265B",
		"trn1.2xlarge": "L-2C3B7624", "u-6tb1.metal": "", "mac1.metal": ""} {
		t.Run(typ, func(t *testing.T) {
			b, ok := bucketOf(typ)
			if got := b.onDemand; got != want || ok != (want != "") {
				t.Errorf("bucketOf(%q) = %q, %v; want %q", typ, got, ok, want)
			}
		})
	}
}
