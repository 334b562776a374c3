package aws

import (
	"context"
	"maps"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// GreenSpec is what a green node group takes besides blue's
// configuration: its name, the target and its sizes.
type GreenSpec struct {
	Name                    string
	Version, ReleaseVersion string // not with a custom AMI
	// TemplateVersion is the version of blue's launch template green
	// launches; empty means blue's.
	TemplateVersion   string
	Min, Desired, Max int32
	// Tags are added to blue's (those that mark green as blue's).
	Tags map[string]string
}

// greenInput is CreateNodegroup of a group configured as blue (subnets,
// instance types, AMI and capacity type, disk, labels, taints, node role,
// launch template, update configuration, tags) with the spec's target
// and sizes. Blue's disk size and AMI type are left out with a launch
// template or custom AMI, where EKS refuses them (API Reference,
// CreateNodegroup: diskSize, amiType).
func greenInput(blue *ManagedGroup, spec GreenSpec) *eks.CreateNodegroupInput {
	in := &eks.CreateNodegroupInput{
		ClusterName: &blue.Cluster, NodegroupName: &spec.Name, NodeRole: &blue.NodeRole,
		Subnets: blue.Subnets, InstanceTypes: blue.InstanceTypes, CapacityType: ekstypes.CapacityTypes(blue.CapacityType),
		Labels: maps.Clone(blue.Labels), Taints: eksTaints(blue.Taints), Tags: maps.Clone(blue.Tags),
		ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: &spec.Min, DesiredSize: &spec.Desired, MaxSize: &spec.Max},
		// The same token for the same green: a create whose answer was
		// lost, sent again, makes no second group (API Reference,
		// CreateNodegroup: clientRequestToken).
		ClientRequestToken: sdkaws.String(spec.Name),
	}
	if len(spec.Tags) > 0 {
		if in.Tags == nil {
			in.Tags = map[string]string{}
		}
		maps.Copy(in.Tags, spec.Tags)
	}
	if u := blue.Update; u.Strategy != "" {
		in.UpdateConfig = ConfigChange{Update: &u}.input("", "").UpdateConfig
	}
	if !blue.CustomAMI() {
		in.AmiType = ekstypes.AMITypes(blue.AMIType)
		in.Version, in.ReleaseVersion = nonEmpty(spec.Version), nonEmpty(spec.ReleaseVersion)
	}
	if lt := blue.LaunchTemplate; lt != nil {
		v := spec.TemplateVersion
		if v == "" {
			v = lt.Version
		}
		in.LaunchTemplate = &ekstypes.LaunchTemplateSpecification{Id: nonEmpty(lt.ID), Version: nonEmpty(v)}
	} else if blue.DiskSize > 0 {
		in.DiskSize = sdkaws.Int32(blue.DiskSize)
	}
	return in
}

// CreateGreen creates a managed node group configured as blue with the
// spec's target, and returns it as EKS describes it (CREATING at first;
// see WaitActive). It settles by reading: when the group exists already
// (ResourceInUseException, an earlier create whose answer was lost or an
// interrupted run's), or the call fails but the group is there, that
// group is returned and no second one made.
func (e *EKS) CreateGreen(ctx context.Context, blue *ManagedGroup, spec GreenSpec) (*ManagedGroup, error) {
	out, callErr := e.eks.CreateNodegroup(ctx, greenInput(blue, spec))
	if callErr == nil {
		return managedGroup(out.Nodegroup), nil
	}
	switch {
	case isCode(callErr, "InvalidParameterException"):
		return nil, &Error{msg: "EKS refused to create managed node group " + quote(spec.Name) + ": " + oneLine(errMessage(callErr)), err: callErr, input: true}
	case isCode(callErr, "ResourceLimitExceededException"):
		// API Reference, CreateNodegroup: the cluster holds as many
		// managed node groups as its quota allows.
		return nil, &Error{msg: "cannot create managed node group " + quote(spec.Name) + ": " + oneLine(errMessage(callErr)) + "; delete an unused node group or have the quota raised, or use --strategy eks", err: callErr, input: true}
	}
	g, err := e.DescribeNodegroup(ctx, blue.Cluster, spec.Name)
	if err != nil {
		return nil, wrap(callErr, "create managed node group %q", spec.Name)
	}
	return g, nil
}

func quote(s string) string { return `"` + s + `"` }

// DeleteNodegroup deletes a managed node group; one already gone is no
// error. EKS drains each node for a few minutes and then terminates it
// regardless (User Guide, delete-managed-node-group): delete a group only
// once its nodes are drained.
func (e *EKS) DeleteNodegroup(ctx context.Context, cluster, name string) error {
	_, err := e.eks.DeleteNodegroup(ctx, &eks.DeleteNodegroupInput{ClusterName: &cluster, NodegroupName: &name})
	if err != nil && !isCode(err, "ResourceNotFoundException") {
		return wrap(err, "delete managed node group %q", name)
	}
	return nil
}

// WaitDeleted waits until the node group is gone.
func (e *EKS) WaitDeleted(ctx context.Context, cluster, name string) error {
	return e.poll(ctx, func() (bool, error) {
		_, err := e.eks.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: &cluster, NodegroupName: &name})
		if isCode(err, "ResourceNotFoundException") {
			return true, nil
		}
		if err != nil {
			return false, wrap(err, "describe managed node group %q", name)
		}
		return false, nil
	})
}
