package aws

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// filterValues are the values of the EC2 filter named name in a request.
func filterValues(v url.Values, name string) []string {
	for i := 1; v.Has(fmt.Sprintf("Filter.%d.Name", i)); i++ {
		if v.Get(fmt.Sprintf("Filter.%d.Name", i)) != name {
			continue
		}
		var out []string
		for j := 1; v.Has(fmt.Sprintf("Filter.%d.Value.%d", i, j)); j++ {
			out = append(out, v.Get(fmt.Sprintf("Filter.%d.Value.%d", i, j)))
		}
		return out
	}
	return nil
}

// offerings answers DescribeInstanceTypeOfferings: the filtered type is
// offered in each filtered zone but those of withheld.
func offerings(withheld map[string]bool) func(url.Values) reply {
	return func(v url.Values) reply {
		var items strings.Builder
		for _, typ := range filterValues(v, "instance-type") {
			for _, z := range filterValues(v, "location") {
				if !withheld[z] {
					fmt.Fprintf(&items, `<item><instanceType>%s</instanceType><locationType>availability-zone</locationType><location>%s</location></item>`, typ, z)
				}
			}
		}
		return reply{200, `<DescribeInstanceTypeOfferingsResponse ` + ec2NS + `><instanceTypeOfferingSet>` + items.String() + `</instanceTypeOfferingSet></DescribeInstanceTypeOfferingsResponse>`}
	}
}

// TestNodeIPs replays the examples of the VPC CNI's
// docs/eni-and-ip-target.md: attached ENIs and secondary IPs, whose sum
// (each ENI has its own primary address) is what the node takes of its
// subnet. t3.small: 3 ENIs of 4 addresses; p3dn.24xlarge: 15 of 50.
func TestNodeIPs(t *testing.T) {
	tests := []struct {
		name                 string
		s                    cniSettings
		maxENI, perENI, pods int64
		enis, secondary      int64
	}{
		{"t3.small warm ENI, no pods", cniSettings{warmENI: 1}, 3, 4, 0, 1, 3},
		{"t3.small warm ENI, 5 pods", cniSettings{warmENI: 1}, 3, 4, 5, 3, 9},
		{"t3.small warm ENI, 9 pods", cniSettings{warmENI: 1}, 3, 4, 9, 3, 9},
		{"t3.small warm IP 1 min 1, no pods", cniSettings{warmIP: 1, minIP: 1}, 3, 4, 0, 1, 1},
		{"t3.small warm IP 1 min 1, 5 pods", cniSettings{warmIP: 1, minIP: 1}, 3, 4, 5, 2, 6},
		{"t3.small warm IP 1 min 1, 9 pods", cniSettings{warmIP: 1, minIP: 1}, 3, 4, 9, 3, 9},
		{"t3.small warm IP 2 min 5, no pods", cniSettings{warmIP: 2, minIP: 5}, 3, 4, 0, 2, 5},
		{"t3.small warm IP 2 min 5, 5 pods", cniSettings{warmIP: 2, minIP: 5}, 3, 4, 5, 3, 7},
		{"t3.small warm IP 2 min 5, 9 pods", cniSettings{warmIP: 2, minIP: 5}, 3, 4, 9, 3, 9},
		{"p3dn warm ENI, no pods", cniSettings{warmENI: 1}, 15, 50, 0, 1, 49},
		{"p3dn warm ENI, 3 pods", cniSettings{warmENI: 1}, 15, 50, 3, 2, 98},
		{"p3dn warm ENI, 95 pods", cniSettings{warmENI: 1}, 15, 50, 95, 3, 147},
		{"p3dn warm IP 5 min 10, no pods", cniSettings{warmIP: 5, minIP: 10}, 15, 50, 0, 1, 10},
		{"p3dn warm IP 5 min 10, 7 pods", cniSettings{warmIP: 5, minIP: 10}, 15, 50, 7, 1, 12},
		{"p3dn warm IP 5 min 10, 15 pods", cniSettings{warmIP: 5, minIP: 10}, 15, 50, 15, 1, 20},
		{"p3dn warm IP 5 min 10, 45 pods", cniSettings{warmIP: 5, minIP: 10}, 15, 50, 45, 2, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := nodeIPs(tc.s, tc.maxENI, tc.perENI, tc.pods), tc.enis+tc.secondary; got != want {
				t.Errorf("nodeIPs() = %d, want %d (%d ENIs, %d secondary addresses)", got, want, tc.enis, tc.secondary)
			}
		})
	}
}

// vpcCNI is the VPC CNI's DaemonSet with env on its aws-node container.
func vpcCNI(env ...corev1.EnvVar) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-node"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "aws-node", Env: env}}}}}}
}

// groupNode is a node of instance id running pods pods with their own
// address and one on the host's network, which takes none.
func groupNode(name, id string, pods int) []runtime.Object {
	out := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name + "-proxy"}, Spec: corev1.PodSpec{NodeName: name, HostNetwork: true}}}
	for i := range pods {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", name, i)}, Spec: corev1.PodSpec{NodeName: name}})
	}
	return out
}

const m5LargeXML = `<DescribeInstanceTypesResponse ` + ec2NS + `><instanceTypeSet><item><instanceType>m5.large</instanceType>
<vCpuInfo><defaultVCpus>2</defaultVCpus></vCpuInfo><networkInfo><maximumNetworkInterfaces>3</maximumNetworkInterfaces><ipv4AddressesPerInterface>10</ipv4AddressesPerInterface></networkInfo>
</item></instanceTypeSet></DescribeInstanceTypesResponse>`

const subnetsXML = `<DescribeSubnetsResponse ` + ec2NS + `><subnetSet>
<item><subnetId>subnet-a</subnetId><availabilityZone>us-east-1a</availabilityZone><availableIpAddressCount>50</availableIpAddressCount></item>
<item><subnetId>subnet-b</subnetId><availabilityZone>us-east-1b</availabilityZone><availableIpAddressCount>4000</availableIpAddressCount></item>
</subnetSet></DescribeSubnetsResponse>`

func TestProveSubnetIPs(t *testing.T) {
	g := &AutoScalingGroup{Name: "ng1", ARN: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:u:autoScalingGroupName/ng1",
		VPCZoneIdentifier: "subnet-a,subnet-b", Instances: []Instance{{ID: "i-1"}, {ID: "i-2"}}}
	// i-2's node runs 12 pods with their own address: on an m5.large (3
	// ENIs of 10) ceil(12/9)+1 = 3 ENIs by default, 30 addresses.
	nodes := append(groupNode("n1", "i-1", 4), groupNode("n2", "i-2", 12)...)
	nodes = append(nodes, groupNode("other", "i-9", 40)...) // not the group's
	ips := func(free, perNode int64, subnet, zone string) plan.QuotaUse {
		return plan.QuotaUse{Scope: "aws/123456789012/" + subnet + "/ips", Name: "subnet " + subnet + " (" + zone + ")",
			Unit: "IP", Needed: 2 * perNode, Free: free, PerNode: perNode}
	}
	tests := []struct {
		name       string
		kube       []runtime.Object
		quotas     []plan.QuotaUse
		unprovable string
	}{
		{name: "default warm ENI", kube: slices.Concat(nodes, []runtime.Object{vpcCNI()}),
			quotas: []plan.QuotaUse{ips(50, 30, "subnet-a", "us-east-1a"), ips(4000, 30, "subnet-b", "us-east-1b")}},
		{name: "warm IP and minimum", kube: slices.Concat(nodes, []runtime.Object{vpcCNI(corev1.EnvVar{Name: "WARM_IP_TARGET", Value: "2"}, corev1.EnvVar{Name: "MINIMUM_IP_TARGET", Value: "10"})}),
			// max(10, 12+2) = 14 secondary addresses on 2 ENIs
			quotas: []plan.QuotaUse{ips(50, 16, "subnet-a", "us-east-1a"), ips(4000, 16, "subnet-b", "us-east-1b")}},
		{name: "prefix delegation", kube: slices.Concat(nodes, []runtime.Object{vpcCNI(corev1.EnvVar{Name: "ENABLE_PREFIX_DELEGATION", Value: "true"})}),
			quotas:     []plan.QuotaUse{ips(50, 1, "subnet-a", "us-east-1a"), ips(4000, 1, "subnet-b", "us-east-1b")},
			unprovable: "the VPC CNI assigns /28 prefixes (ENABLE_PREFIX_DELEGATION), whose room in the subnets cannot be proven from their free addresses" + onlyNodes},
		{name: "custom networking: a node's own address in the group's subnets, its pods' in the ENIConfigs'",
			kube:   slices.Concat(nodes, []runtime.Object{vpcCNI(corev1.EnvVar{Name: "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", Value: "true"})}),
			quotas: []plan.QuotaUse{ips(50, 1, "subnet-a", "us-east-1a"), ips(4000, 1, "subnet-b", "us-east-1b")}},
		{name: "no aws-node", kube: nodes,
			quotas:     []plan.QuotaUse{ips(50, 1, "subnet-a", "us-east-1a"), ips(4000, 1, "subnet-b", "us-east-1b")},
			unprovable: `no DaemonSet "kube-system/aws-node" (the Amazon VPC CNI) to read how many addresses pods take` + onlyNodes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			replies := map[string]func(url.Values) reply{
				"DescribeInstanceTypes": fixed(200, m5LargeXML),
				"DescribeSubnets": func(v url.Values) reply {
					if v.Get("SubnetId.1") != "subnet-a" || v.Get("SubnetId.2") != "subnet-b" {
						return ec2Error("InvalidSubnetID.NotFound", "unexpected subnets")
					}
					return reply{200, subnetsXML}
				},
			}
			api, _ := newTestProvider(t, replies, Options{})
			quotas, unprovable := proveSubnetIPs(context.Background(), capacityInput{p: api, kube: fake.NewClientset(tc.kube...), g: g, typ: "m5.large", added: 2})
			if fmt.Sprint(quotas) != fmt.Sprint(tc.quotas) {
				t.Errorf("quotas = %+v\nwant %+v", quotas, tc.quotas)
			}
			if got := strings.Join(unprovable, "; "); got != tc.unprovable {
				t.Errorf("unprovable = %q, want %q", got, tc.unprovable)
			}
		})
	}
}

func TestProveOffered(t *testing.T) {
	g := &AutoScalingGroup{Name: "ng1", ARN: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:u:autoScalingGroupName/ng1",
		Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}}
	tests := []struct {
		name     string
		withheld map[string]bool
		want     []plan.QuotaUse
	}{
		{name: "offered everywhere"},
		{name: "not offered in one zone", withheld: map[string]bool{"us-east-1c": true},
			want: []plan.QuotaUse{{Scope: "aws/123456789012/us-east-1/m5.large/us-east-1c",
				Name: `m5.large in zone us-east-1c, where EC2 does not offer it (take the zone's subnet out of Auto Scaling group "ng1" or launch another instance type)`,
				Unit: "instance", Needed: 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api, f := newTestProvider(t, map[string]func(url.Values) reply{"DescribeInstanceTypeOfferings": offerings(tc.withheld)}, Options{})
			got, unprovable := proveOffered(context.Background(), capacityInput{p: api, g: g, typ: "m5.large", added: 3})
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(unprovable) > 0 {
				t.Errorf("proveOffered() = %+v, %q\nwant %+v", got, unprovable, tc.want)
			}
			if lt := f.last("DescribeInstanceTypeOfferings").Get("LocationType"); lt != "availability-zone" {
				t.Errorf("LocationType = %q, want availability-zone", lt)
			}
		})
	}
}
