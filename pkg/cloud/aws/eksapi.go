package aws

// The EKS side of a managed node group: thin calls over aws-sdk-go-v2's
// service/eks (and SSM for the recommended AMI release) that the managed
// update provider makes. EKS runs the update; these only describe, check,
// start and follow it, and create and delete whole node groups.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// Tags EKS puts on a managed node group's Auto Scaling group, and the
// label it puts on the group's nodes (User Guide, managed-node-groups).
const (
	TagClusterName   = "eks:cluster-name"
	TagNodegroupName = "eks:nodegroup-name"
	NodegroupLabel   = "eks.amazonaws.com/nodegroup"
)

// Labels EKS puts on the nodes of a managed node group, and eksctl and the
// project's demo on self-managed ones: where nodes carry them, they must
// agree with the target (see plan.CloudGroup.VersionLabel).
const (
	ImageLabel           = "eks.amazonaws.com/nodegroup-image"
	TemplateVersionLabel = "eks.amazonaws.com/sourceLaunchTemplateVersion"
)

// EKS calls the EKS and SSM APIs for managed node groups.
type EKS struct {
	eks *eks.Client
	ssm *ssm.Client
	// pollMin and pollMax bound the backoff of the waits.
	pollMin, pollMax time.Duration
}

// NewEKSFromConfig makes the EKS calls from an SDK configuration; without
// a retryer in cfg it gets the one the provider's clients use.
func NewEKSFromConfig(cfg sdkaws.Config) *EKS {
	if cfg.Retryer == nil {
		shared := newRetryer()
		cfg.Retryer = func() sdkaws.Retryer { return shared }
	}
	cfg.APIOptions = append(slices.Clip(cfg.APIOptions), markUnreachable)
	return &EKS{eks: eks.NewFromConfig(cfg), ssm: ssm.NewFromConfig(cfg), pollMin: 2 * time.Second, pollMax: 30 * time.Second}
}

// EKS makes the EKS calls from the provider's configuration, sharing its
// retryer.
func (p *Client) EKS() *EKS { return NewEKSFromConfig(p.cfg) }

// SetPoll bounds the waits' backoff between two reads (default 2s to
// 30s): tests shorten it.
func (e *EKS) SetPoll(lo, hi time.Duration) { e.pollMin, e.pollMax = lo, hi }

// EKSNodegroup is a managed node group as DescribeNodegroup says.
type EKSNodegroup struct {
	Cluster, Name, ARN string
	// Status is CREATING, ACTIVE, UPDATING, DELETING, CREATE_FAILED,
	// DELETE_FAILED or DEGRADED.
	Status                  string
	Version, ReleaseVersion string
	AMIType, CapacityType   string
	Min, Desired, Max       int32
	Update                  UpdateSettings
	Health                  []HealthIssue
	// LaunchTemplate is the user's launch template, nil when EKS made the
	// group without one.
	LaunchTemplate         *TemplateRef
	Subnets, InstanceTypes []string
	Labels, Tags           map[string]string
	Taints                 []corev1.Taint
	NodeRole               string
	DiskSize               int32 // 0 with a launch template
	AutoScalingGroups      []string
	// RemoteAccess (SSH key, source security groups), NodeRepair (auto
	// repair) and WarmPool are as EKS describes them, nil when unset: a
	// green group takes them over as they are.
	RemoteAccess *ekstypes.RemoteAccessConfig
	NodeRepair   *ekstypes.NodeRepairConfig
	WarmPool     *ekstypes.WarmPoolConfig
}

// CustomAMI reports whether the group's launch template names its own
// image: EKS then knows no Kubernetes or release version for it.
func (g *EKSNodegroup) CustomAMI() bool { return g.AMIType == string(ekstypes.AMITypesCustom) }

// UpdateSettings is a node group's updateConfig: MaxUnavailable or
// MaxUnavailablePercentage (0 when unset) and the strategy, DEFAULT or
// MINIMAL.
type UpdateSettings struct {
	MaxUnavailable, MaxUnavailablePercentage int32
	Strategy                                 string
}

// HealthIssue is one of a node group's health issues.
type HealthIssue struct {
	Code, Message string
	ResourceIDs   []string
}

// TemplateRef names a launch template (by ID or name) and a version.
type TemplateRef struct{ ID, Name, Version string }

// ManagedGroupOf reads which managed node group an Auto Scaling group
// backs from its tags; ok is false for a self-managed group.
func ManagedGroupOf(g *AutoScalingGroup) (cluster, nodegroup string, ok bool) {
	cluster, nodegroup = g.Tags[TagClusterName].Value, g.Tags[TagNodegroupName].Value
	return cluster, nodegroup, cluster != "" && nodegroup != ""
}

// FindManagedGroup finds the Auto Scaling group of the instances and, if
// EKS manages it, the node group's cluster and name (ok false if not).
func (p *Client) FindManagedGroup(ctx context.Context, instanceIDs []string) (g *AutoScalingGroup, cluster, nodegroup string, ok bool, err error) {
	g, err = p.FindGroup(ctx, instanceIDs)
	if err != nil {
		return nil, "", "", false, err
	}
	cluster, nodegroup, ok = ManagedGroupOf(g)
	return g, cluster, nodegroup, ok, nil
}

// DescribeNodegroup describes a managed node group.
func (e *EKS) DescribeNodegroup(ctx context.Context, cluster, name string) (*EKSNodegroup, error) {
	out, err := e.eks.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: &cluster, NodegroupName: &name})
	if err != nil {
		if isCode(err, "ResourceNotFoundException") {
			return nil, &Error{msg: fmt.Sprintf("managed node group %q not found in cluster %q", name, cluster), err: err, input: true}
		}
		return nil, wrap(err, "describe managed node group %q", name)
	}
	return managedGroup(out.Nodegroup), nil
}

// ListNodegroups names the cluster's managed node groups.
func (e *EKS) ListNodegroups(ctx context.Context, cluster string) ([]string, error) {
	var names []string
	pg := eks.NewListNodegroupsPaginator(e.eks, &eks.ListNodegroupsInput{ClusterName: &cluster})
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err != nil {
			return nil, wrap(err, "list the managed node groups of cluster %q", cluster)
		}
		names = append(names, out.Nodegroups...)
	}
	return names, nil
}

// ClusterVersion is the Kubernetes version of the cluster's control plane.
func (e *EKS) ClusterVersion(ctx context.Context, cluster string) (string, error) {
	out, err := e.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &cluster})
	if err != nil {
		return "", wrap(err, "describe cluster %q", cluster)
	}
	return sdkaws.ToString(out.Cluster.Version), nil
}

func managedGroup(n *ekstypes.Nodegroup) *EKSNodegroup {
	g := &EKSNodegroup{
		Cluster: sdkaws.ToString(n.ClusterName), Name: sdkaws.ToString(n.NodegroupName), ARN: sdkaws.ToString(n.NodegroupArn),
		Status: string(n.Status), Version: sdkaws.ToString(n.Version), ReleaseVersion: sdkaws.ToString(n.ReleaseVersion),
		AMIType: string(n.AmiType), CapacityType: string(n.CapacityType), NodeRole: sdkaws.ToString(n.NodeRole),
		Subnets: n.Subnets, InstanceTypes: n.InstanceTypes, Labels: maps.Clone(n.Labels), Tags: maps.Clone(n.Tags),
		DiskSize: sdkaws.ToInt32(n.DiskSize), RemoteAccess: n.RemoteAccess, NodeRepair: n.NodeRepairConfig, WarmPool: n.WarmPoolConfig,
	}
	if s := n.ScalingConfig; s != nil {
		g.Min, g.Desired, g.Max = sdkaws.ToInt32(s.MinSize), sdkaws.ToInt32(s.DesiredSize), sdkaws.ToInt32(s.MaxSize)
	}
	if u := n.UpdateConfig; u != nil {
		g.Update = UpdateSettings{MaxUnavailable: sdkaws.ToInt32(u.MaxUnavailable),
			MaxUnavailablePercentage: sdkaws.ToInt32(u.MaxUnavailablePercentage), Strategy: string(u.UpdateStrategy)}
	}
	if n.Health != nil {
		for _, i := range n.Health.Issues {
			g.Health = append(g.Health, HealthIssue{Code: string(i.Code), Message: sdkaws.ToString(i.Message), ResourceIDs: i.ResourceIds})
		}
	}
	if lt := n.LaunchTemplate; lt != nil {
		g.LaunchTemplate = &TemplateRef{ID: sdkaws.ToString(lt.Id), Name: sdkaws.ToString(lt.Name), Version: sdkaws.ToString(lt.Version)}
	}
	for _, t := range n.Taints {
		g.Taints = append(g.Taints, corev1.Taint{Key: sdkaws.ToString(t.Key), Value: sdkaws.ToString(t.Value), Effect: kubeEffect[t.Effect]})
	}
	if n.Resources != nil {
		for _, a := range n.Resources.AutoScalingGroups {
			g.AutoScalingGroups = append(g.AutoScalingGroups, sdkaws.ToString(a.Name))
		}
	}
	return g
}

// kubeEffect maps EKS's taint effects to Kubernetes' (API Reference,
// Taint); eksEffect is the inverse.
var kubeEffect = map[ekstypes.TaintEffect]corev1.TaintEffect{
	ekstypes.TaintEffectNoSchedule:       corev1.TaintEffectNoSchedule,
	ekstypes.TaintEffectNoExecute:        corev1.TaintEffectNoExecute,
	ekstypes.TaintEffectPreferNoSchedule: corev1.TaintEffectPreferNoSchedule,
}

func eksTaints(ts []corev1.Taint) []ekstypes.Taint {
	var out []ekstypes.Taint
	for _, t := range ts {
		for e, k := range kubeEffect {
			if k == t.Effect {
				out = append(out, ekstypes.Taint{Key: sdkaws.String(t.Key), Value: sdkaws.String(t.Value), Effect: e})
			}
		}
	}
	return out
}

// isCode reports whether err is the service's error code.
func isCode(err error, code string) bool {
	var ae interface{ ErrorCode() string }
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

// amiFamilies are where AWS publishes each AMI type's recommended release
// in SSM (User Guide, retrieve-ami-id: /aws/service/eks/optimized-ami/
// <version>/<family>/recommended/release_version; retrieve-ami-id-
// bottlerocket: /aws/service/bottlerocket/aws-k8s-<version>[-flavor]/
// <arch>/latest/image_version, which is Bottlerocket's release version).
// eksctl and the EKS Terraform modules read the same parameters. The
// flavors are -nvidia, -fips and, for NVIDIA FIPS, -nvidia-fips:
// Bottlerocket's variant names (bottlerocket-os/bottlerocket, the
// aws-k8s-<version>-nvidia-fips variants of its settings-defaults
// packages) under the prefix its publisher writes each variant's
// parameters to (tools/pubsys/policies/ssm: {variant}/{arch}/...).
// The AMI types with no entry are in unpublished.
var amiFamilies = map[ekstypes.AMITypes]string{
	ekstypes.AMITypesAl2X8664:                    "eks:amazon-linux-2",
	ekstypes.AMITypesAl2X8664Gpu:                 "eks:amazon-linux-2-gpu",
	ekstypes.AMITypesAl2Arm64:                    "eks:amazon-linux-2-arm64",
	ekstypes.AMITypesAl2023X8664Standard:         "eks:amazon-linux-2023/x86_64/standard",
	ekstypes.AMITypesAl2023Arm64Standard:         "eks:amazon-linux-2023/arm64/standard",
	ekstypes.AMITypesAl2023X8664Neuron:           "eks:amazon-linux-2023/x86_64/neuron",
	ekstypes.AMITypesAl2023X8664Nvidia:           "eks:amazon-linux-2023/x86_64/nvidia",
	ekstypes.AMITypesAl2023Arm64Nvidia:           "eks:amazon-linux-2023/arm64/nvidia",
	ekstypes.AMITypesBottlerocketX8664:           "br::x86_64",
	ekstypes.AMITypesBottlerocketArm64:           "br::arm64",
	ekstypes.AMITypesBottlerocketX8664Nvidia:     "br:-nvidia:x86_64",
	ekstypes.AMITypesBottlerocketArm64Nvidia:     "br:-nvidia:arm64",
	ekstypes.AMITypesBottlerocketX8664Fips:       "br:-fips:x86_64",
	ekstypes.AMITypesBottlerocketArm64Fips:       "br:-fips:arm64",
	ekstypes.AMITypesBottlerocketX8664NvidiaFips: "br:-nvidia-fips:x86_64",
	ekstypes.AMITypesBottlerocketArm64NvidiaFips: "br:-nvidia-fips:arm64",
}

// unpublished are the AMI types AWS publishes no release version of in
// SSM: a custom AMI has none, and Windows' parameters
// (/aws/service/ami-windows-latest/..., User Guide, retrieve-windows-ami-
// id) name an image id, not a release version. A run on them takes
// --release-version.
var unpublished = []ekstypes.AMITypes{
	ekstypes.AMITypesCustom,
	ekstypes.AMITypesWindowsCore2019X8664, ekstypes.AMITypesWindowsFull2019X8664,
	ekstypes.AMITypesWindowsCore2022X8664, ekstypes.AMITypesWindowsFull2022X8664,
	ekstypes.AMITypesWindowsCore2025X8664, ekstypes.AMITypesWindowsFull2025X8664,
}

// ReleaseParameter is the SSM parameter holding the recommended release
// version of an AMI type for a Kubernetes version; ok is false for AMI
// types without one (CUSTOM, Windows).
func ReleaseParameter(version, amiType string) (name string, ok bool) {
	fam, ok := amiFamilies[ekstypes.AMITypes(amiType)]
	if !ok {
		return "", false
	}
	kind, rest, _ := strings.Cut(fam, ":")
	if kind == "eks" {
		return "/aws/service/eks/optimized-ami/" + version + "/" + rest + "/recommended/release_version", true
	}
	variant, arch, _ := strings.Cut(rest, ":")
	return "/aws/service/bottlerocket/aws-k8s-" + version + variant + "/" + arch + "/latest/image_version", true
}

// LatestRelease is the recommended AMI release version of an AMI type for
// a Kubernetes version: what UpdateNodegroupVersion takes when given
// none (API Reference, UpdateNodegroupVersion: releaseVersion).
func (e *EKS) LatestRelease(ctx context.Context, version, amiType string) (string, error) {
	name, ok := ReleaseParameter(version, amiType)
	if !ok {
		return "", inputErrorf("AWS publishes no recommended release for AMI type %q; use --release-version", amiType)
	}
	out, err := e.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: &name})
	if err != nil {
		if isCode(err, "ParameterNotFound") {
			return "", inputErrorf("no EKS AMI release for Kubernetes %q and AMI type %q (SSM parameter %s); check --kubernetes-version", version, amiType, name)
		}
		return "", wrap(err, "read SSM parameter %s", name)
	}
	return sdkaws.ToString(out.Parameter.Value), nil
}

// poll calls read until it reports done, waiting pollMin, doubling up to
// pollMax, between reads; throttled reads are read again.
func (e *EKS) poll(ctx context.Context, read func() (bool, error)) error {
	wait := e.pollMin
	for {
		done, err := read()
		if err != nil && !cloud.Transient(err) {
			return err
		}
		if done && err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, e.pollMax)
	}
}
