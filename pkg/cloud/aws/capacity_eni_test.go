package aws

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// eniConfig is an ENIConfig naming subnet ("" for none).
func eniConfig(name, subnet string) *unstructured.Unstructured {
	spec := map[string]any{"securityGroups": []any{"sg-1"}}
	if subnet != "" {
		spec["subnet"] = subnet
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crd.k8s.amazonaws.com/v1alpha1", "kind": "ENIConfig",
		"metadata": map[string]any{"name": name}, "spec": spec}}
}

// zonedNode is groupNode's node in zone, with labels.
func zonedNode(name, id, zone string, pods int, labels map[string]string) []runtime.Object {
	objs := groupNode(name, id, pods)
	n := objs[0].(*corev1.Node)
	n.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	for k, v := range labels {
		n.Labels[k] = v
	}
	return objs
}

// subnetsByID answers DescribeSubnets with the subnets asked for of free
// (subnet -> zone and free addresses).
func subnetsByID(free map[string][2]string) func(url.Values) reply {
	return func(v url.Values) reply {
		var items strings.Builder
		for i := 1; v.Has(fmt.Sprintf("SubnetId.%d", i)); i++ {
			id := v.Get(fmt.Sprintf("SubnetId.%d", i))
			if f, ok := free[id]; ok {
				fmt.Fprintf(&items, `<item><subnetId>%s</subnetId><availabilityZone>%s</availabilityZone><availableIpAddressCount>%s</availableIpAddressCount></item>`, id, f[0], f[1])
			}
		}
		return reply{200, `<DescribeSubnetsResponse ` + ec2NS + `><subnetSet>` + items.String() + `</subnetSet></DescribeSubnetsResponse>`}
	}
}

// TestProveENIConfigSubnets: under custom networking the added nodes'
// pods take addresses of each zone's ENIConfig subnet, on the type's
// interfaces but the primary (m5.large: 2 of 3, 12 pods: 2 ENIs of 10);
// the ENIConfig is named after the zone (ENI_CONFIG_LABEL_DEF a zone
// label) or by the label on the group's nodes there; what cannot be read
// is named.
func TestProveENIConfigSubnets(t *testing.T) {
	g := &AutoScalingGroup{Name: "ng1", ARN: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:u:autoScalingGroupName/ng1",
		VPCZoneIdentifier: "subnet-a,subnet-b", Zones: []string{"us-east-1a", "us-east-1b"}, Instances: []Instance{{ID: "i-1"}, {ID: "i-2"}}}
	custom := corev1.EnvVar{Name: "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", Value: "true"}
	byZone := corev1.EnvVar{Name: "ENI_CONFIG_LABEL_DEF", Value: "topology.kubernetes.io/zone"}
	pods := func(subnet, config, zone string, free int64) plan.QuotaUse {
		return plan.QuotaUse{Scope: "aws/123456789012/" + subnet + "/ips", Name: fmt.Sprintf("subnet %s of ENIConfig %q (pods) (%s)", subnet, config, zone),
			Unit: "IP", Needed: 2 * 20, Free: free, PerNode: 20}
	}
	free := map[string][2]string{"subnet-pa": {"us-east-1a", "30"}, "subnet-pb": {"us-east-1b", "500"}}
	for _, tc := range []struct {
		name       string
		cni        []corev1.EnvVar
		labels     map[string]string // on the node in us-east-1a
		configs    []runtime.Object
		quotas     []plan.QuotaUse
		unprovable string
	}{
		{name: "ENIConfigs named after the zones", cni: []corev1.EnvVar{custom, byZone},
			configs: []runtime.Object{eniConfig("us-east-1a", "subnet-pa"), eniConfig("us-east-1b", "subnet-pb")},
			quotas:  []plan.QuotaUse{pods("subnet-pa", "us-east-1a", "us-east-1a", 30), pods("subnet-pb", "us-east-1b", "us-east-1b", 500)}},
		{name: "ENIConfigs by the nodes' label; a zone without a labelled node", cni: []corev1.EnvVar{custom},
			labels:     map[string]string{defaultENILabel: "pods-a"},
			configs:    []runtime.Object{eniConfig("pods-a", "subnet-pa")},
			quotas:     []plan.QuotaUse{pods("subnet-pa", "pods-a", "us-east-1a", 30)},
			unprovable: `no node of Auto Scaling group "ng1" in zone us-east-1b has label k8s.amazonaws.com/eniConfig to tell which ENIConfig its pods' subnet is: that subnet is not proven`},
		{name: "an ENIConfig missing, one without a subnet", cni: []corev1.EnvVar{custom, byZone},
			configs:    []runtime.Object{eniConfig("us-east-1b", "")},
			unprovable: `cannot read ENIConfig "us-east-1a" (zone us-east-1a): eniconfigs.crd.k8s.amazonaws.com "us-east-1a" not found: its subnet is not proven; ENIConfig "us-east-1b" (zone us-east-1b) names no subnet (spec.subnet): its pods' subnet is not proven`},
		{name: "no custom networking: nothing to prove here", configs: []runtime.Object{eniConfig("us-east-1a", "subnet-pa")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := dynamicFor
			dynamicFor = func(kubernetes.Interface) (dynamic.Interface, error) {
				return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{eniConfigs: "ENIConfigList"}, tc.configs...), nil
			}
			t.Cleanup(func() { dynamicFor = prev })
			kube := slices.Concat(zonedNode("n1", "i-1", "us-east-1a", 4, tc.labels), zonedNode("n2", "i-2", "us-east-1b", 12, nil), []runtime.Object{vpcCNI(tc.cni...)})
			api, _ := newTestProvider(t, map[string]func(url.Values) reply{"DescribeInstanceTypes": fixed(200, m5LargeXML), "DescribeSubnets": subnetsByID(free)}, Options{})
			quotas, unprovable := proveENIConfigSubnets(context.Background(), capacityInput{p: api, kube: fake.NewClientset(kube...), g: g, typ: "m5.large", added: 2})
			if fmt.Sprint(quotas) != fmt.Sprint(tc.quotas) {
				t.Errorf("quotas = %+v\nwant %+v", quotas, tc.quotas)
			}
			if got := strings.Join(unprovable, "; "); got != tc.unprovable {
				t.Errorf("unprovable = %q\nwant %q", got, tc.unprovable)
			}
		})
	}
}
