package aws

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// resourceKind is the resource IAM authorises an action on, as the
// Service Authorization Reference lists each action's "Resource types"
// (https://docs.aws.amazon.com/service-authorization/latest/reference/):
// Describe and List actions of Auto Scaling, EC2 and ELB take none ("*").
type resourceKind int

const (
	anyResource       resourceKind = iota // "*": no resource-level permission
	onGroup                               // the Auto Scaling group
	onTemplate                            // the launch template
	onNewInstances                        // the instances Auto Scaling launches (instance/*)
	onTargetGroups                        // the group's target groups
	onClassicLBs                          // the group's Classic Load Balancers
	onCluster                             // the EKS cluster
	onNodegroup                           // the EKS managed node group
	onNewNodegroup                        // green's node group, made on the cluster
	onParameter                           // SSM's public release parameter
	onEC2Quotas                           // EC2's quotas in Service Quotas (quota: ec2/<code>)
	onReservations                        // capacity reservations (capacity-reservation/*)
	onNewReservations                     // the tags of a capacity reservation being created
)

// resource is what the simulation of one kind's actions is given: the
// ARNs (none: "*", SimulatePrincipalPolicy's default) and the context
// entries the least-privilege conditions read; skip says the run never
// makes those actions (a group with no target groups deregisters from
// none).
type resource struct {
	arns    []string
	context []iamtypes.ContextEntry
	skip    bool
}

// scope is where the ARNs are: the caller's partition and account
// (sts:GetCallerIdentity) and the client's region.
type scope struct{ partition, region, account string }

func (s scope) arn(service, account, res string) string {
	return arn.ARN{Partition: s.partition, Service: service, Region: s.region, AccountID: account, Resource: res}.String()
}

// tagContext are the condition keys IAM sets from a resource's tags
// (aws:ResourceTag/<key>, and the service's own, autoscaling:ResourceTag
// or ec2:ResourceTag), and, for green's creation which carries the same
// tags, aws:RequestTag/<key> and aws:TagKeys (IAM User Guide, "AWS global
// condition context keys").
func tagContext(tags map[string]string, prefixes ...string) []iamtypes.ContextEntry {
	keys := slices.Sorted(maps.Keys(tags))
	var out []iamtypes.ContextEntry
	for _, p := range prefixes {
		for _, k := range keys {
			out = append(out, stringEntry(p+k, tags[k]))
		}
	}
	if len(keys) > 0 && slices.Contains(prefixes, "aws:RequestTag/") {
		out = append(out, iamtypes.ContextEntry{ContextKeyName: sdkaws.String("aws:TagKeys"),
			ContextKeyType: iamtypes.ContextKeyTypeEnumStringList, ContextKeyValues: keys})
	}
	return out
}

func stringEntry(key, value string) iamtypes.ContextEntry {
	return iamtypes.ContextEntry{ContextKeyName: sdkaws.String(key), ContextKeyType: iamtypes.ContextKeyTypeEnumString, ContextKeyValues: []string{value}}
}

// groupTags are an Auto Scaling group's tags as key and value.
func groupTags(g *AutoScalingGroup) map[string]string {
	out := make(map[string]string, len(g.Tags))
	for k, t := range g.Tags {
		out[k] = t.Value
	}
	return out
}

// groupResource is an Auto Scaling group: its ARN as Auto Scaling
// describes it (autoScalingGroup:<uuid>:autoScalingGroupName/<name>) and
// its tags.
func (s scope) groupResource(g *AutoScalingGroup) resource {
	a := cmp.Or(g.ARN, s.arn("autoscaling", s.account, "autoScalingGroup:*:autoScalingGroupName/"+g.Name))
	return resource{arns: []string{a}, context: tagContext(groupTags(g), "aws:ResourceTag/", "autoscaling:ResourceTag/", "aws:RequestTag/")}
}

// templateResource is a launch template (launch-template/<id>), with
// ec2:LaunchTemplate, the key RunInstances sets to the template it
// launches from (Service Authorization Reference, Amazon EC2); its tags
// are not read, so a condition on them is "cannot tell".
func (s scope) templateResource(id string) resource {
	if id == "" {
		return resource{}
	}
	a := s.arn("ec2", s.account, "launch-template/"+id)
	return resource{arns: []string{a}, context: []iamtypes.ContextEntry{stringEntry("ec2:LaunchTemplate", a)}}
}

// groupResources are the resources of a run on Auto Scaling group g.
func (s scope) groupResources(g *AutoScalingGroup) map[resourceKind]resource {
	out := map[resourceKind]resource{
		onGroup:    s.groupResource(g),
		onTemplate: s.templateResource(g.LaunchTemplateID),
		// ec2:CreateTags of a launch is conditioned on ec2:CreateAction
		// (EC2 User Guide, "Grant permission to tag resources during
		// creation").
		onNewInstances: {arns: []string{s.arn("ec2", s.account, "instance/*")}, context: []iamtypes.ContextEntry{stringEntry("ec2:CreateAction", "RunInstances")}},
		onTargetGroups: {arns: g.TargetGroups, skip: len(g.TargetGroups) == 0},
		onClassicLBs:   {skip: len(g.LoadBalancers) == 0},
		// GetServiceQuota authorises on the quota
		// (arn:…:servicequotas:<region>:<account>:<service>/<code>); the
		// Standard bucket's stands for the bucket the run reads.
		onEC2Quotas: {arns: []string{s.arn("servicequotas", s.account, "ec2/"+bucketStandard.onDemand)}},
		// CreateCapacityReservation authorises on capacity-reservation/*;
		// the tags it adds on ec2:CreateTags with ec2:CreateAction
		// CreateCapacityReservation (Service Authorization Reference,
		// Amazon EC2; EC2 User Guide, "Grant permission to tag resources
		// during creation").
		onReservations:    {arns: []string{s.arn("ec2", s.account, "capacity-reservation/*")}},
		onNewReservations: {arns: []string{s.arn("ec2", s.account, "capacity-reservation/*")}, context: []iamtypes.ContextEntry{stringEntry("ec2:CreateAction", "CreateCapacityReservation")}},
	}
	for _, lb := range g.LoadBalancers {
		r := out[onClassicLBs]
		r.arns = append(r.arns, s.arn("elasticloadbalancing", s.account, "loadbalancer/"+lb))
		out[onClassicLBs] = r
	}
	return out
}

// managedResources are the resources of a run on EKS managed node group
// m: the cluster and node group (their ARNs as EKS gives them), the node
// group's Auto Scaling group and launch template, and the release
// parameter SSM publishes.
func (s scope) managedResources(m *ManagedNodeGroup) map[resourceKind]resource {
	g := m.group
	cluster := s.arn("eks", s.account, "cluster/"+g.Cluster)
	if a, err := arn.Parse(g.ARN); err == nil {
		a.Resource = "cluster/" + g.Cluster
		cluster = a.String()
	}
	ngARN := cmp.Or(g.ARN, s.arn("eks", s.account, "nodegroup/"+g.Cluster+"/"+g.Name+"/*"))
	lt := m.asg.LaunchTemplateID
	if g.LaunchTemplate != nil && g.LaunchTemplate.ID != "" {
		lt = g.LaunchTemplate.ID
	}
	out := map[resourceKind]resource{
		onCluster:      {arns: []string{cluster}},
		onNodegroup:    {arns: []string{ngARN}, context: tagContext(g.Tags, "aws:ResourceTag/", "aws:RequestTag/")},
		onNewNodegroup: {arns: []string{cluster}, context: tagContext(g.Tags, "aws:RequestTag/")},
		onGroup:        s.groupResource(m.asg),
		onTemplate:     s.templateResource(lt),
	}
	// Public parameters have no account in their ARN (SSM User Guide,
	// "Discovering public parameters").
	if name, ok := ReleaseParameter(cmp.Or(m.target.Version, g.Version), g.AMIType); ok {
		out[onParameter] = resource{arns: []string{s.arn("ssm", "", "parameter/"+strings.TrimPrefix(name, "/"))}}
	}
	return out
}
