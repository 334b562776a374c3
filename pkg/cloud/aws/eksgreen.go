package aws

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"strings"

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
// launch template, update configuration, remote access, node auto repair,
// warm pool, tags) with the spec's target and sizes. Blue's disk size,
// AMI type and remote access are left out with a launch template or
// custom AMI, where EKS refuses them (API Reference, CreateNodegroup:
// diskSize, amiType; remoteAccess: "If you specify launchTemplate, then
// don't specify remoteAccess").
func greenInput(blue *EKSNodegroup, spec GreenSpec) *eks.CreateNodegroupInput {
	in := &eks.CreateNodegroupInput{
		ClusterName: &blue.Cluster, NodegroupName: &spec.Name, NodeRole: &blue.NodeRole,
		Subnets: blue.Subnets, InstanceTypes: blue.InstanceTypes, CapacityType: ekstypes.CapacityTypes(blue.CapacityType),
		Labels: maps.Clone(blue.Labels), Taints: eksTaints(blue.Taints),
		ScalingConfig:    &ekstypes.NodegroupScalingConfig{MinSize: &spec.Min, DesiredSize: &spec.Desired, MaxSize: &spec.Max},
		NodeRepairConfig: blue.NodeRepair, WarmPoolConfig: blue.WarmPool,
		// A token of this call's own: the SDK's retries of it send the
		// same, so a create whose answer was lost makes no second group
		// (API Reference, CreateNodegroup: clientRequestToken); a later
		// run, after a rollback deleted green, sends another, where EKS
		// would answer a reused one with the deleted group's create and
		// make nothing. A run interrupted mid-call finds the group by
		// name (CreateGreen, openManagedBlueGreen).
		ClientRequestToken: sdkaws.String(requestToken()),
	}
	in.Tags = greenNodegroupTags(blue.Tags, spec.Tags)
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
	} else {
		in.RemoteAccess = blue.RemoteAccess
		if blue.DiskSize > 0 {
			in.DiskSize = sdkaws.Int32(blue.DiskSize)
		}
	}
	return in
}

// maxNodegroupTags is EKS's limit on a resource's tags (API Reference,
// CreateNodegroup: tags, "Maximum number of 50 items").
const maxNodegroupTags = 50

// greenNodegroupTags are blue's tags for green with mark's added, less
// the aws: ones, which AWS reserves and EKS refuses from a user (User
// Guide, eks-using-tags: "Don't use aws:, AWS:, or any upper or lowercase
// combination of such as a prefix for either keys or values";
// CloudFormation and eksctl put aws:cloudformation:* there); nil when
// there are none.
func greenNodegroupTags(blue, mark map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range blue {
		if !reservedTag(k) && !reservedTag(v) {
			out[k] = v
		}
	}
	maps.Copy(out, mark)
	if len(out) == 0 {
		return nil
	}
	return out
}

func reservedTag(s string) bool { return len(s) >= 4 && strings.EqualFold(s[:4], "aws:") }

// checkGreenTags refuses a blue whose tags green could not carry: past
// EKS's 50 with the marks green gets.
func checkGreenTags(blue *EKSNodegroup, mark map[string]string) error {
	if n := len(greenNodegroupTags(blue.Tags, mark)); n > maxNodegroupTags {
		return inputErrorf("managed node group %q has %d tags to copy; with the %d that mark the green group that is %d, over EKS's %d; remove some from %q or use --strategy eks", blue.Name, n-len(mark), len(mark), n, maxNodegroupTags, blue.Name)
	}
	return nil
}

// CreateGreen creates a managed node group configured as blue with the
// spec's target, and returns it as EKS describes it (CREATING at first;
// see WaitActive). It settles by reading: when the group exists already
// (ResourceInUseException, an earlier create whose answer was lost or an
// interrupted run's), or the call fails but the group is there, that
// group is returned and no second one made.
func (e *EKS) CreateGreen(ctx context.Context, blue *EKSNodegroup, spec GreenSpec) (*EKSNodegroup, error) {
	if err := checkGreenTags(blue, spec.Tags); err != nil {
		return nil, err
	}
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

// requestToken is a fresh idempotency token.
func requestToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
