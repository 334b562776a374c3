package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// eniConfigs are the VPC CNI's ENIConfigs (crd.k8s.amazonaws.com/v1alpha1,
// cluster-scoped), each naming the subnet of the pods of the nodes that
// use it (spec.subnet).
var eniConfigs = schema.GroupVersionResource{Group: "crd.k8s.amazonaws.com", Version: "v1alpha1", Resource: "eniconfigs"}

// defaultENILabel is the node label that names a node's ENIConfig when
// ENI_CONFIG_LABEL_DEF is unset (the VPC CNI's README,
// ENI_CONFIG_LABEL_DEF).
const defaultENILabel = "k8s.amazonaws.com/eniConfig"

// dynamicFor makes the dynamic client the ENIConfigs are read with
// (cloud.DynamicFor). Tests replace it.
var dynamicFor = func(client kubernetes.Interface) (dynamic.Interface, error) {
	return cloud.DynamicFor(client, "the VPC CNI's ENIConfigs")
}

// proveENIConfigSubnets proves, under the VPC CNI's custom networking
// (AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true), the subnets the added nodes'
// pods take addresses of: the subnet of the ENIConfig of each of the
// group's zones. Pods run on the secondary network interfaces only there,
// the primary one keeping the node's own address in the group's subnet
// (EKS User Guide, "Customize the secondary network interface in Amazon
// EKS nodes"), so a node takes nodeIPs of its type's interfaces but one.
// Each ENIConfig's subnet is asked to hold every added node, as the
// group's subnets are. What cannot be read is named, not guessed.
func proveENIConfigSubnets(ctx context.Context, in capacityInput) ([]plan.QuotaUse, []string) {
	if in.kube == nil {
		return nil, nil
	}
	cni, ok, err := readCNI(ctx, in)
	if err != nil || !ok || !cni.custom || cni.prefix {
		return nil, nil // perNodeIPs says why what it could not read is not proven
	}
	names, unprovable := eniConfigNames(ctx, in, cni)
	subnetOf, more := eniConfigSubnets(ctx, in.kube, names)
	unprovable = append(unprovable, more...)
	if len(subnetOf) == 0 {
		return nil, unprovable
	}
	maxENI, perENI, err := typeNetwork(ctx, in.p, in.typ)
	if err != nil {
		return nil, append(unprovable, oneLine(err.Error())+": the ENIConfigs' subnets are not proven")
	}
	pods, err := busiestPods(ctx, in)
	if err != nil {
		return nil, append(unprovable, oneLine(err.Error())+": the ENIConfigs' subnets are not proven")
	}
	perNode := nodeIPs(cni, maxENI-1, perENI, pods)
	quotas, err := subnetRoom(ctx, in, slices.Sorted(maps.Keys(subnetOf)), perNode, func(id string) string {
		return fmt.Sprintf("subnet %s of ENIConfig %q (pods)", id, subnetOf[id])
	})
	if err != nil {
		return nil, append(unprovable, oneLine(err.Error()))
	}
	return quotas, unprovable
}

// eniConfigNames is the ENIConfig of each of the group's zones: the zone's
// own name where ENI_CONFIG_LABEL_DEF is a zone label (the EKS User
// Guide's way: ENIConfigs named after the zones), else the label's value
// on the group's nodes in that zone, which the added nodes, launched from
// the same template, share.
func eniConfigNames(ctx context.Context, in capacityInput, cni cniSettings) (map[string]string, []string) {
	out := map[string]string{}
	if cni.eniLabel == "topology.kubernetes.io/zone" || cni.eniLabel == "failure-domain.beta.kubernetes.io/zone" {
		for _, z := range in.g.Zones {
			out[z] = z
		}
		return out, nil
	}
	label := cni.eniLabel
	if label == "" {
		label = defaultENILabel
	}
	nodes, err := groupNodes(ctx, in)
	if err != nil {
		return nil, []string{oneLine(err.Error()) + ": the ENIConfigs' subnets are not proven"}
	}
	var unprovable []string
	for _, z := range in.g.Zones {
		i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Labels[corev1.LabelTopologyZone] == z && n.Labels[label] != "" })
		if i < 0 {
			unprovable = append(unprovable, fmt.Sprintf("no node of Auto Scaling group %q in zone %s has label %s to tell which ENIConfig its pods' subnet is: that subnet is not proven", in.g.Name, z, label))
			continue
		}
		out[z] = nodes[i].Labels[label]
	}
	return out, unprovable
}

// eniConfigSubnets reads the ENIConfigs named (by zone) and gives the
// subnet of each, with the ENIConfig it is of.
func eniConfigSubnets(ctx context.Context, kube kubernetes.Interface, names map[string]string) (map[string]string, []string) {
	if len(names) == 0 {
		return nil, nil
	}
	dc, err := dynamicFor(kube)
	if err != nil {
		return nil, []string{oneLine(err.Error()) + ": the ENIConfigs' subnets are not proven"}
	}
	out := map[string]string{}
	var unprovable []string
	for _, z := range slices.Sorted(maps.Keys(names)) {
		obj, err := dc.Resource(eniConfigs).Get(ctx, names[z], metav1.GetOptions{})
		if err != nil {
			unprovable = append(unprovable, fmt.Sprintf("cannot read ENIConfig %q (zone %s): %s: its subnet is not proven", names[z], z, oneLine(err.Error())))
			continue
		}
		subnet, _, _ := unstructured.NestedString(obj.Object, "spec", "subnet")
		if subnet == "" {
			unprovable = append(unprovable, fmt.Sprintf("ENIConfig %q (zone %s) names no subnet (spec.subnet): its pods' subnet is not proven", names[z], z))
			continue
		}
		out[subnet] = names[z]
	}
	return out, unprovable
}
