package awsfake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"
)

// fastEKS times the fake's EKS for tests.
var fastEKS = EKSOptions{
	EvictionTimeout: 3 * time.Second, CordonWait: 50 * time.Millisecond, DeleteDrainTimeout: 2 * time.Second,
	NodeReadyTimeout: 20 * time.Second, EvictRetry: 200 * time.Millisecond, ConfigUpdateTime: 50 * time.Millisecond,
}

// eksScene starts a Server without a cluster, with cluster c1 at 1.31 and
// releases for 1.30 and 1.31.
func eksScene(t *testing.T, ctx context.Context) (*Server, *eks.Client) {
	t.Helper()
	r := &recorder{}
	s, err := Start(ctx, Options{LaunchDelay: 20 * time.Millisecond, OnLaunch: r.launch, OnTerminate: r.terminate, EKS: fastEKS, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.CreateEKSCluster("c1", "1.31")
	for _, rel := range []Release{{"1.30", "1.30.8-20241201", "ami-130old"}, {"1.30", "1.30.9-20250101", "ami-130"}, {"1.31", "1.31.1-20250101", "ami-131a"}, {"1.31", "1.31.2-20250201", "ami-131b"}} {
		s.AddRelease(rel)
	}
	return s, eks.NewFromConfig(sdkConfig(s))
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestEKSNodegroupLifecycle drives a managed node group through the real
// SDK: create, describe, list, configure, update, delete.
func TestEKSNodegroupLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, api := eksScene(t, ctx)
	// ng1 is made at 1.30, then the control plane goes to 1.31.
	if err := s.SetEKSClusterVersion("c1", "1.30"); err != nil {
		t.Fatal(err)
	}
	out, err := api.CreateNodegroup(ctx, &eks.CreateNodegroupInput{
		ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"), NodeRole: aws.String("arn:aws:iam::1:role/node"),
		Subnets: []string{Subnet(zones[0]), Subnet(zones[1])}, Version: aws.String("1.30"),
		ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(1), DesiredSize: aws.Int32(4), MaxSize: aws.Int32(6)},
		Labels:        map[string]string{"team": "web"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Nodegroup.Status != ekstypes.NodegroupStatusCreating || aws.ToString(out.Nodegroup.ReleaseVersion) != "1.30.9-20250101" {
		t.Fatalf("created %+v", out.Nodegroup)
	}
	ng, err := s.WaitNodegroup(ctx, "c1", "ng1", func(ng Nodegroup) bool { return ng.Status == NodegroupActive })
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetEKSClusterVersion("c1", "1.31"); err != nil {
		t.Fatal(err)
	}
	asg := ng.Resources.AutoScalingGroups[0].Name
	tags := s.GroupTags(asg)
	if tags["eks:cluster-name"] != "c1" || tags["eks:nodegroup-name"] != "ng1" || tags["kubernetes.io/cluster/c1"] != "owned" {
		t.Errorf("group tags %v", tags)
	}
	g, _ := s.Group(asg)
	for _, in := range g.Instances {
		l := in.NodeLabels
		if l[NodeGroupLabel] != "ng1" || l[ImageLabel] != "ami-130" || l[CapacityTypeLabel] != "ON_DEMAND" || l["team"] != "web" || l[SourceLTIDLabel] != "" {
			t.Errorf("instance %s node labels %v", in.ID, l)
		}
	}
	checkDescribed(t, ctx, api)
	list, err := api.ListNodegroups(ctx, &eks.ListNodegroupsInput{ClusterName: aws.String("c1")})
	if err != nil || !slices.Equal(list.Nodegroups, []string{"ng1"}) {
		t.Fatalf("list %v, %v", list, err)
	}
	t.Run("refusals", func(t *testing.T) { eksRefusals(t, ctx, api) })
	t.Run("config", func(t *testing.T) { eksConfig(t, ctx, s, api) })
	t.Run("version", func(t *testing.T) { eksVersion(t, ctx, s, api, asg) })
	if _, err := api.DeleteNodegroup(ctx, &eks.DeleteNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1")}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitDeleted(ctx, asg); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitNodegroupGone(ctx, "c1", "ng1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.LaunchTemplate(ng.Resources.AutoScalingGroups[0].Name); ok {
		t.Error("the node group's launch template outlived it")
	}
}

// checkDescribed checks ng1 as DescribeNodegroup gives it, defaults
// filled in.
func checkDescribed(t *testing.T, ctx context.Context, api *eks.Client) {
	desc, err := api.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1")})
	if err != nil {
		t.Fatal(err)
	}
	d := desc.Nodegroup
	if aws.ToInt32(d.ScalingConfig.DesiredSize) != 4 || aws.ToInt32(d.UpdateConfig.MaxUnavailable) != 1 || d.UpdateConfig.UpdateStrategy != "DEFAULT" ||
		d.AmiType != "AL2023_x86_64_STANDARD" || aws.ToInt32(d.DiskSize) != 20 || d.InstanceTypes[0] != "t3.medium" || d.CreatedAt == nil {
		t.Errorf("described %+v", d)
	}
}

func eksRefusals(t *testing.T, ctx context.Context, api *eks.Client) {
	for _, tc := range []struct {
		name, code, msg string
		call            func() error
	}{
		{"second group of the name", "ResourceInUseException", "already exists", func() error {
			_, err := api.CreateNodegroup(ctx, &eks.CreateNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
				NodeRole: aws.String("r"), Subnets: []string{Subnet(zones[0])}})
			return err
		}},
		{"new group below the control plane's version", "InvalidParameterException", "cluster's version 1.31", func() error {
			_, err := api.CreateNodegroup(ctx, &eks.CreateNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng9"),
				NodeRole: aws.String("r"), Subnets: []string{Subnet(zones[0])}, Version: aws.String("1.30")})
			return err
		}},
		{"no such cluster", "ResourceNotFoundException", "No cluster found", func() error {
			_, err := api.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("c9"), NodegroupName: aws.String("ng1")})
			return err
		}},
		{"version above the control plane", "InvalidParameterException", "newer than the cluster", func() error {
			_, err := api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"), Version: aws.String("1.32")})
			return err
		}},
		{"unknown release", "InvalidParameterException", "not valid", func() error {
			_, err := api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"), ReleaseVersion: aws.String("1.31.0-1")})
			return err
		}},
		{"an earlier release", "InvalidParameterException", "cannot roll back", func() error {
			_, err := api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
				Version: aws.String("1.30"), ReleaseVersion: aws.String("1.30.8-20241201")})
			return err
		}},
		{"a release of another version", "InvalidParameterException", "not valid for kubernetes version 1.31", func() error {
			_, err := api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
				Version: aws.String("1.31"), ReleaseVersion: aws.String("1.30.9-20250101")})
			return err
		}},
		{"an aws: tag", "InvalidParameterException", "reserved", func() error {
			_, err := api.CreateNodegroup(ctx, &eks.CreateNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng9"),
				NodeRole: aws.String("r"), Subnets: []string{Subnet(zones[0])}, Tags: map[string]string{"aws:cloudformation:stack-name": "s"}})
			return err
		}},
		{"51 tags", "InvalidParameterException", "less than or equal to 50", func() error {
			tags := map[string]string{}
			for i := range 51 {
				tags[fmt.Sprintf("k%d", i)] = "v"
			}
			_, err := api.CreateNodegroup(ctx, &eks.CreateNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng9"),
				NodeRole: aws.String("r"), Subnets: []string{Subnet(zones[0])}, Tags: tags})
			return err
		}},
		{"launch template on a group without", "InvalidParameterException", "not created with one", func() error {
			_, err := api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
				LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: aws.String("lt-1")}})
			return err
		}},
		{"both maxUnavailable kinds", "InvalidParameterException", "Only one", func() error {
			_, err := api.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
				UpdateConfig: &ekstypes.NodegroupUpdateConfig{MaxUnavailable: aws.Int32(1), MaxUnavailablePercentage: aws.Int32(10)}})
			return err
		}},
		{"desired above max", "InvalidParameterException", "Desired capacity", func() error {
			_, err := api.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
				ScalingConfig: &ekstypes.NodegroupScalingConfig{DesiredSize: aws.Int32(9)}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if apiCode(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %s with %q", err, tc.code, tc.msg)
			}
		})
	}
}

func eksConfig(t *testing.T, ctx context.Context, s *Server, api *eks.Client) {
	out, err := api.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
		UpdateConfig: &ekstypes.NodegroupUpdateConfig{MaxUnavailablePercentage: aws.Int32(50), UpdateStrategy: ekstypes.NodegroupUpdateStrategiesMinimal},
		Labels:       &ekstypes.UpdateLabelsPayload{AddOrUpdateLabels: map[string]string{"tier": "1"}, RemoveLabels: []string{"team"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Update.Status != ekstypes.UpdateStatusInProgress || out.Update.Type != ekstypes.UpdateTypeConfigUpdate {
		t.Fatalf("update %+v", out.Update)
	}
	// A second update while the first runs is refused.
	_, err = api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1")})
	if apiCode(err) != "ResourceInUseException" {
		t.Fatalf("second update: %v, want ResourceInUseException", err)
	}
	u, err := s.WaitEKSUpdate(ctx, "c1", "ng1", aws.ToString(out.Update.Id))
	if err != nil || u.Status != UpdateSuccessful {
		t.Fatalf("update %+v, %v", u, err)
	}
	ng, _ := s.Nodegroup("c1", "ng1")
	if ng.UpdateConfig.MaxUnavailable != nil || deref(ng.UpdateConfig.MaxUnavailablePercentage) != 50 || ng.UpdateConfig.UpdateStrategy != "MINIMAL" ||
		ng.Labels["tier"] != "1" || ng.Labels["team"] != "" || ng.Status != NodegroupActive {
		t.Errorf("after config: %+v %+v", ng, ng.UpdateConfig)
	}
	// Back to DEFAULT with maxUnavailable 1 for the version update.
	if _, err := api.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
		UpdateConfig: &ekstypes.NodegroupUpdateConfig{MaxUnavailable: aws.Int32(1), UpdateStrategy: ekstypes.NodegroupUpdateStrategiesDefault}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitNodegroup(ctx, "c1", "ng1", func(ng Nodegroup) bool { return ng.Status == NodegroupActive }); err != nil {
		t.Fatal(err)
	}
}

// eksVersion updates ng1 (4 nodes over 2 zones, maxUnavailable 1) from
// 1.30 to the cluster's 1.31 and its latest release, and checks the
// phases: scale-up by 2 × zones = 4, every old instance replaced, sizes
// back.
func eksVersion(t *testing.T, ctx context.Context, s *Server, api *eks.Client, asg string) {
	peak := int32(0)
	watch, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = s.WaitFor(watch, asg, func(g Group) bool { peak = max(peak, g.Desired); return false }) }()
	out, err := api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1")})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Update.Id)
	u, err := s.WaitEKSUpdate(ctx, "c1", "ng1", id)
	stop()
	if err != nil || u.Status != UpdateSuccessful {
		t.Fatalf("update %+v, %v", u, err)
	}
	desc, err := api.DescribeUpdate(ctx, &eks.DescribeUpdateInput{Name: aws.String("c1"), NodegroupName: aws.String("ng1"), UpdateId: &id})
	if err != nil || desc.Update.Status != ekstypes.UpdateStatusSuccessful || len(desc.Update.Params) != 2 {
		t.Fatalf("described %+v, %v", desc, err)
	}
	g, _ := s.Group(asg)
	for _, in := range g.Instances {
		if in.ImageID != "ami-131b" {
			t.Errorf("instance %s still on %s", in.ID, in.ImageID)
		}
	}
	ng, _ := s.Nodegroup("c1", "ng1")
	if g.Desired != 4 || g.Max != 6 || ng.Version != "1.31" || ng.ReleaseVersion != "1.31.2-20250201" || peak != 8 {
		t.Errorf("after update: sizes %d/%d, version %s %s, peak desired %d (want 4/6, 1.31 1.31.2-20250201, 8)", g.Desired, g.Max, ng.Version, ng.ReleaseVersion, peak)
	}
	ids, err := api.ListUpdates(ctx, &eks.ListUpdatesInput{Name: aws.String("c1"), NodegroupName: aws.String("ng1")})
	if err != nil || len(ids.UpdateIds) != 3 || ids.UpdateIds[2] != id {
		t.Errorf("updates %v, %v", ids, err)
	}
}

// TestEKSLaunchTemplateGroups covers groups made from a user's launch
// template: a custom AMI takes no version or release, another template is
// refused, and a new version of the group's own is rolled out with the
// source template labels.
func TestEKSLaunchTemplateGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, api := eksScene(t, ctx)
	lt := s.CreateLaunchTemplate("web", "ami-custom1", "m5.large")
	other := s.CreateLaunchTemplate("other", "ami-x", "m5.large")
	ng, err := s.ManagedNodeGroup(ctx, ManagedNodeGroupSpec{Cluster: "c1", Name: "lt1", Zones: zones, Min: 1, Desired: 2, Max: 3,
		LaunchTemplate: &LaunchTemplateSpec{ID: lt}})
	// API Reference, Nodegroup: a custom AMI's release version is the AMI,
	// and a launch template's group has no instance types or disk size.
	if err != nil || ng.AmiType != "CUSTOM" || ng.LaunchTemplate.Version != "1" || ng.ReleaseVersion != "ami-custom1" || ng.Version != "1.31" ||
		ng.InstanceTypes != nil || ng.DiskSize != nil {
		t.Fatalf("node group %+v, %v", ng, err)
	}
	if _, err := s.ManagedNodeGroup(ctx, ManagedNodeGroupSpec{Cluster: "c1", Name: "lt2", Zones: zones, Min: 1, Desired: 1, Max: 1,
		LaunchTemplate: &LaunchTemplateSpec{ID: lt}, ReleaseVersion: "1.31.2-20250201"}); err == nil || !strings.Contains(err.Error(), "custom AMI") {
		t.Errorf("create with a custom AMI and a release: %v", err)
	}
	for _, tc := range []struct {
		name string
		in   eks.UpdateNodegroupVersionInput
		msg  string
	}{
		{"release with a custom AMI", eks.UpdateNodegroupVersionInput{ReleaseVersion: aws.String("1.31.2-20250201")}, "custom AMI"},
		{"version with a custom AMI", eks.UpdateNodegroupVersionInput{Version: aws.String("1.31")}, "custom AMI"},
		{"another template", eks.UpdateNodegroupVersionInput{LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: aws.String(other)}}, "is not the launch template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.ClusterName, in.NodegroupName = aws.String("c1"), aws.String("lt1")
			if _, err := api.UpdateNodegroupVersion(ctx, &in); apiCode(err) != "InvalidParameterException" || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want InvalidParameterException with %q", err, tc.msg)
			}
		})
	}
	v, err := s.AddLaunchTemplateVersion(lt, "ami-custom2")
	if err != nil {
		t.Fatal(err)
	}
	out, err := api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("lt1"),
		LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: aws.String(lt), Version: aws.String("2")}})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := s.WaitEKSUpdate(ctx, "c1", "lt1", aws.ToString(out.Update.Id)); err != nil || u.Status != UpdateSuccessful {
		t.Fatalf("update %+v, %v", u, err)
	}
	g, _ := s.Group(ng.Resources.AutoScalingGroups[0].Name)
	for _, in := range g.Instances {
		if in.ImageID != "ami-custom2" || in.NodeLabels[SourceLTIDLabel] != lt || in.NodeLabels[SourceLTVersionLbl] != "2" {
			t.Errorf("instance %s: image %s labels %v (template version %d)", in.ID, in.ImageID, in.NodeLabels, v)
		}
	}
	if ng, _ := s.Nodegroup("c1", "lt1"); ng.LaunchTemplate.Version != "2" || ng.ReleaseVersion != "ami-custom2" {
		t.Errorf("node group's template version %s, release %s, want 2, ami-custom2", ng.LaunchTemplate.Version, ng.ReleaseVersion)
	}
	// Back to version 1: an earlier launch template version is no earlier
	// "Kubernetes version or AMI version" (a custom AMI has none), and the
	// API Reference lets the group take any version of its own template
	// ("You can update the launch template version with necessary
	// changes"); the User Guide's cluster rollback rolls managed node
	// groups back with this very call.
	out, err = api.UpdateNodegroupVersion(ctx, &eks.UpdateNodegroupVersionInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("lt1"),
		LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: aws.String(lt), Version: aws.String("1")}})
	if err != nil {
		t.Fatalf("back to launch template version 1: %v", err)
	}
	if u, err := s.WaitEKSUpdate(ctx, "c1", "lt1", aws.ToString(out.Update.Id)); err != nil || u.Status != UpdateSuccessful {
		t.Fatalf("update back %+v, %v", u, err)
	}
	if ng, _ := s.Nodegroup("c1", "lt1"); ng.LaunchTemplate.Version != "1" || ng.ReleaseVersion != "ami-custom1" {
		t.Errorf("node group back: template version %s, release %s, want 1, ami-custom1", ng.LaunchTemplate.Version, ng.ReleaseVersion)
	}
}

// TestEKSCreateToken: a CreateNodegroup repeating a clientRequestToken
// gets the first answer and makes nothing, as the API Reference's
// idempotency says; a new name under an old token is not made.
func TestEKSCreateToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, api := eksScene(t, ctx)
	create := func(name string) (*eks.CreateNodegroupOutput, error) {
		return api.CreateNodegroup(ctx, &eks.CreateNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String(name),
			NodeRole: aws.String("r"), Subnets: []string{Subnet(zones[0])}, ClientRequestToken: aws.String("t1"),
			ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(0), DesiredSize: aws.Int32(0), MaxSize: aws.Int32(1)}})
	}
	first, err := create("tok-a")
	if err != nil {
		t.Fatal(err)
	}
	again, err := create("tok-b")
	if err != nil || aws.ToString(again.Nodegroup.NodegroupName) != "tok-a" || aws.ToString(again.Nodegroup.NodegroupArn) != aws.ToString(first.Nodegroup.NodegroupArn) {
		t.Fatalf("repeated token: %+v, %v; want tok-a's answer", again, err)
	}
	if _, ok := s.Nodegroup("c1", "tok-b"); ok {
		t.Error("tok-b was made under tok-a's token")
	}
}

// TestEKSRemoteAccessRepairWarmPool: CreateNodegroup's remoteAccess,
// nodeRepairConfig and warmPoolConfig are kept and described (API
// Reference, Nodegroup); remoteAccess with a launch template, and both a
// count and a percentage of one repair limit, are refused.
func TestEKSRemoteAccessRepairWarmPool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, api := eksScene(t, ctx)
	lt := s.CreateLaunchTemplate("web", "ami-custom1", "m5.large")
	remote := &ekstypes.RemoteAccessConfig{Ec2SshKey: aws.String("ops"), SourceSecurityGroups: []string{"sg-1"}}
	repair := &ekstypes.NodeRepairConfig{Enabled: aws.Bool(true), MaxUnhealthyNodeThresholdPercentage: aws.Int32(20)}
	warm := &ekstypes.WarmPoolConfig{Enabled: aws.Bool(true), MinSize: aws.Int32(1), PoolState: ekstypes.WarmPoolStateStopped}
	for _, tc := range []struct {
		name, wantErr string
		in            eks.CreateNodegroupInput
	}{
		{"kept", "", eks.CreateNodegroupInput{RemoteAccess: remote, NodeRepairConfig: repair, WarmPoolConfig: warm}},
		{"remote access with a launch template", "launch template",
			eks.CreateNodegroupInput{RemoteAccess: remote, LaunchTemplate: &ekstypes.LaunchTemplateSpecification{Id: aws.String(lt)}}},
		{"a count and a percentage", "not both", eks.CreateNodegroupInput{NodeRepairConfig: &ekstypes.NodeRepairConfig{
			MaxParallelNodesRepairedCount: aws.Int32(1), MaxParallelNodesRepairedPercentage: aws.Int32(10)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.ClusterName, in.NodegroupName, in.NodeRole = aws.String("c1"), aws.String("ra"), aws.String("r")
			in.Subnets = []string{Subnet(zones[0])}
			in.ScalingConfig = &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(0), DesiredSize: aws.Int32(0), MaxSize: aws.Int32(1)}
			_, err := api.CreateNodegroup(ctx, &in)
			if tc.wantErr != "" {
				if apiCode(err) != "InvalidParameterException" || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want InvalidParameterException with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := api.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ra")})
			if err != nil {
				t.Fatal(err)
			}
			ng := out.Nodegroup
			if r := ng.RemoteAccess; r == nil || aws.ToString(r.Ec2SshKey) != "ops" || !slices.Equal(r.SourceSecurityGroups, []string{"sg-1"}) {
				t.Errorf("remoteAccess %+v", r)
			}
			if r := ng.NodeRepairConfig; r == nil || !aws.ToBool(r.Enabled) || aws.ToInt32(r.MaxUnhealthyNodeThresholdPercentage) != 20 {
				t.Errorf("nodeRepairConfig %+v", r)
			}
			if w := ng.WarmPoolConfig; w == nil || !aws.ToBool(w.Enabled) || aws.ToInt32(w.MinSize) != 1 || w.PoolState != ekstypes.WarmPoolStateStopped {
				t.Errorf("warmPoolConfig %+v", w)
			}
		})
	}
}

// TestKubeletVersion: the nodes of an EKS optimized AMI report its
// release's Kubernetes patch version; a custom AMI's, none of EKS's.
func TestKubeletVersion(t *testing.T) {
	tests := []struct {
		src  ltSource
		want string
	}{
		{ltSource{version: "1.30", release: "1.30.9-20250101", image: "ami-eks-130"}, "v1.30.9-eks"},
		{ltSource{version: "1.31", release: "1.31.2-20250201"}, "v1.31.2-eks"},
		{ltSource{version: "1.31", release: "ami-custom"}, "v1.31.0-eks"},
		{ltSource{image: "ami-custom", release: "ami-custom"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.src.release, func(t *testing.T) {
			if got := tc.src.kubeletVersion(); got != tc.want {
				t.Errorf("kubelet %q, want %q", got, tc.want)
			}
		})
	}
}
