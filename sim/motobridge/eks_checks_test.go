package motobridge

import (
	"maps"
	"strings"
)

// eksCheck is what AWS documents for one answer of the scenario in
// eks_test.go, and moto 5.2.1's answer where it deviates (doc then says
// where AWS documents want). sim/awsfake/README.md ("Checked against moto
// 5.2.1") lists the deviations.
type eksCheck struct {
	want, moto, doc string
}

// Where AWS documents the answers moto deviates from: the Amazon EKS API
// Reference (https://docs.aws.amazon.com/eks/latest/APIReference/) and
// the AWS CLI examples in the AWS SDK Code Examples library
// (https://docs.aws.amazon.com/code-library/latest/ug/).
const (
	docCreating    = "API_CreateNodegroup, and its AWS CLI example (eks_example_eks_CreateNodegroup_section): the new group's status is CREATING"
	docVersion     = "API_CreateNodegroup, version: by default, the Kubernetes version of the cluster is used"
	docOnlyCluster = "API_CreateNodegroup: a node group can only be created at the cluster's current Kubernetes version; version: the cluster's is the only accepted value"
	docRelease     = "API_CreateNodegroup, releaseVersion: by default, the latest available AMI version for the node group's current Kubernetes version"
	docUpdate      = "API_CreateNodegroup, updateConfig; API_NodegroupUpdateConfig: maxUnavailable or maxUnavailablePercentage is required to have a value"
	docAsync       = "API_UpdateNodegroupConfig: the answer is an asynchronous update whose status DescribeUpdate tracks; the group continues to function during the update"
	docMaxSize     = "API_NodegroupScalingConfig, maxSize: the maximum number of nodes the group can scale out to"
	docDeleting    = "API_DeleteNodegroup, and its AWS CLI example (eks_example_eks_DeleteNodegroup_section): the group answered is DELETING"
	docCustom      = "API_Nodegroup, amiType: CUSTOM for a launch template with a custom AMI"
	docCustomRV    = "API_Nodegroup, releaseVersion: with a custom AMI, the AMI ID that was specified in the launch template"
	docLTTypes     = "API_Nodegroup, instanceTypes: null for a group deployed with a launch template"
	docLTDisk      = "API_Nodegroup, diskSize: null for a group deployed with a launch template"
	docASGName     = "not in the API Reference (NodegroupResources names the group only); the plugin takes the name as given"
)

const (
	motoRelease = "1.19.8-20210414" // moto's DEFAULT_RELEASE_VERSION
	motoNoUpd   = "{MaxUnavailable:0 MaxUnavailablePercentage:0 Strategy:}"
)

// eksChecks are the checks by answer key.
func eksChecks() map[string]eksCheck {
	c := map[string]eksCheck{
		"DescribeCluster: version":                     {want: eksVersion + " ok"},
		"ListNodegroups with green":                    {want: "[blue green] ok"},
		"ListNodegroups with green-lt":                 {want: "[blue blue-lt green-lt] ok"},
		"ListNodegroups at the end":                    {want: "[blue blue-lt] ok"},
		"UpdateNodegroupConfig desired 9 above max 4":  {want: "InvalidParameterException", moto: "DescribeUpdate 404", doc: docMaxSize},
		"CreateNodegroup green-1.30 in a 1.31 cluster": {want: "InvalidParameterException", moto: "ok", doc: docOnlyCluster},
	}
	for _, name := range []string{"blue", "green", "blue-lt", "green-lt"} {
		c["CreateNodegroup "+name+": status"] = eksCheck{want: "CREATING", moto: "ACTIVE", doc: docCreating}
	}
	for _, name := range []string{"green", "green-lt"} {
		c["CreateNodegroup "+name+" again: the same group"] = eksCheck{want: "true ok"}
		c["DeleteNodegroup "+name+": answer"] = eksCheck{want: "DELETING ok", moto: "ACTIVE ok", doc: docDeleting}
		c["WaitDeleted "+name] = eksCheck{want: "ok"}
		c["DescribeNodegroup "+name+" deleted"] = eksCheck{want: "ResourceNotFoundException"}
		c["DeleteNodegroup "+name+" again"] = eksCheck{want: "ok"}
	}
	configChecks(c)
	for name, g := range described() {
		for field, check := range g {
			c["DescribeNodegroup "+name+": "+field] = check
		}
	}
	return c
}

// configChecks are UpdateNodegroupConfig's answers and the group after
// each of configChanges.
func configChecks(c map[string]eksCheck) {
	const (
		sizes = "ACTIVE, min 1 desired 3 max 4, "
		web   = "labels map[team:web], taints [{dedicated web NoSchedule <nil>}]"
	)
	for i, then := range []string{
		sizes + "{MaxUnavailable:2 MaxUnavailablePercentage:0 Strategy:DEFAULT}, " + web,
		sizes + "{MaxUnavailable:0 MaxUnavailablePercentage:50 Strategy:MINIMAL}, " + web,
		sizes + "{MaxUnavailable:0 MaxUnavailablePercentage:50 Strategy:MINIMAL}, labels map[tier:front], taints [{spot yes PreferNoSchedule <nil>}]",
	} {
		prefix := "UpdateNodegroupConfig " + configChanges[i].name
		c[prefix+": answer"] = eksCheck{want: "ConfigUpdate InProgress", moto: "ConfigUpdate Successful", doc: docAsync}
		c[prefix+": followed"] = eksCheck{want: "ok", moto: "DescribeUpdate 404", doc: docAsync}
		c[prefix+": then"] = eksCheck{want: then}
	}
}

// described are the node groups as DescribeNodegroup should describe
// them, field by field: blue as created, green as blue/green creates it
// from blue (on moto without blue's update configuration, which moto
// lost), and the same from a launch template with a custom AMI.
func described() map[string]map[string]eksCheck {
	blue := map[string]eksCheck{
		"cluster": {want: eksCluster}, "name": {want: "blue"}, "status": {want: "ACTIVE"},
		"arn":            {want: "arn:aws:eks:us-east-1:123456789012:nodegroup/c1/blue/<id>"},
		"version":        {want: eksVersion, moto: "1.19", doc: docVersion},
		"releaseVersion": {want: eksRelease, moto: motoRelease, doc: docRelease},
		"amiType":        {want: "AL2023_x86_64_STANDARD"}, "capacityType": {want: "ON_DEMAND"},
		"scaling":      {want: "min 1 desired 2 max 3"},
		"updateConfig": {want: "{MaxUnavailable:0 MaxUnavailablePercentage:25 Strategy:MINIMAL}", moto: motoNoUpd, doc: docUpdate},
		"health":       {want: "[]"}, "launchTemplate": {want: "none"},
		"subnets": {want: "[subnet-us-east-1a subnet-us-east-1b]"}, "instanceTypes": {want: "[m5.large]"},
		"labels": {want: "map[team:web]"}, "tags": {want: "map[owner:web]"},
		"taints": {want: "[{dedicated web NoSchedule <nil>}]"}, "nodeRole": {want: eksNodeRole}, "diskSize": {want: "30"},
		"autoScalingGroups": {want: "[eks-blue-<id>]", moto: "[eks-<id>]", doc: docASGName},
	}
	lt := with(blue, map[string]eksCheck{
		"name": {want: "blue-lt"}, "arn": {want: "arn:aws:eks:us-east-1:123456789012:nodegroup/c1/blue-lt/<id>"},
		"releaseVersion": {want: customImage, moto: motoRelease, doc: docCustomRV},
		"amiType":        {want: "CUSTOM", moto: "AL2_x86_64", doc: docCustom},
		"scaling":        {want: "min 1 desired 1 max 2"},
		// The default (User Guide, managed-node-update-behavior).
		"updateConfig":   {want: "{MaxUnavailable:1 MaxUnavailablePercentage:0 Strategy:DEFAULT}", moto: motoNoUpd, doc: docUpdate},
		"launchTemplate": {want: "<template> blue-lt version 1"},
		"instanceTypes":  {want: "[]", moto: "[t3.medium]", doc: docLTTypes},
		"labels":         {want: "map[]"}, "tags": {want: "map[]"}, "taints": {want: "[]"},
		"diskSize":          {want: "0", moto: "20", doc: docLTDisk},
		"autoScalingGroups": {want: "[eks-blue-lt-<id>]", moto: "[eks-<id>]", doc: docASGName},
	})
	return map[string]map[string]eksCheck{
		"blue": blue,
		// CreateGreen names the version, which moto keeps.
		"green":   renamed(with(blue, map[string]eksCheck{"version": {want: eksVersion}}), "blue", "green"),
		"blue-lt": lt,
		"green-lt": renamed(with(lt, map[string]eksCheck{
			"releaseVersion": {want: greenImage, moto: motoRelease, doc: docCustomRV},
			"launchTemplate": {want: "<template> blue-lt version 2"},
		}), "blue-lt", "green-lt"),
	}
}

// with is g with the fields of over replaced.
func with(g, over map[string]eksCheck) map[string]eksCheck {
	out := maps.Clone(g)
	maps.Copy(out, over)
	return out
}

// renamed is g for the group named to instead of from.
func renamed(g map[string]eksCheck, from, to string) map[string]eksCheck {
	out := maps.Clone(g)
	for _, f := range []string{"name", "arn", "autoScalingGroups"} {
		c := out[f]
		c.want = strings.Replace(c.want, from, to, 1)
		out[f] = c
	}
	return out
}
