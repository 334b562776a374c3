package motobridge

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// NodeGroupSpec describes a node group to create on an endpoint.
type NodeGroupSpec struct {
	// Name names the Auto Scaling group and its launch template (whose
	// name is the nodes' node-group label value, see awsfake.NodeOptions).
	Name              string
	Zones             []string
	Min, Desired, Max int32
	InstanceType      string // default m5.large
	// VersionSpec is the launch template version the group launches:
	// "$Default" (the default), "$Latest" or a number.
	VersionSpec string
}

// NodeGroup is what CreateNodeGroup made.
type NodeGroup struct {
	Name             string
	LaunchTemplateID string
	// OldImage is launch template version 1's image, NewImage a second
	// registered image for the upgrade.
	OldImage, NewImage string
}

// CreateNodeGroup registers two images, creates a launch template (version
// 1 with the first) and an Auto Scaling group over the zones, through the
// AWS SDK, as someone would on AWS.
func CreateNodeGroup(ctx context.Context, cfg aws.Config, spec NodeGroupSpec) (NodeGroup, error) {
	if spec.InstanceType == "" {
		spec.InstanceType = "m5.large"
	}
	if spec.VersionSpec == "" {
		spec.VersionSpec = "$Default"
	}
	e, as := ec2.NewFromConfig(cfg), autoscaling.NewFromConfig(cfg)
	g := NodeGroup{Name: spec.Name}
	for i, image := range []*string{&g.OldImage, &g.NewImage} {
		out, err := e.RegisterImage(ctx, &ec2.RegisterImageInput{Name: aws.String(fmt.Sprintf("%s-node-v%d", spec.Name, i+1))})
		if err != nil {
			return g, fmt.Errorf("register an image: %w", err)
		}
		*image = aws.ToString(out.ImageId)
	}
	lt, err := e.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(spec.Name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:      aws.String(g.OldImage),
			InstanceType: ec2types.InstanceType(spec.InstanceType),
		},
	})
	if err != nil {
		return g, fmt.Errorf("create launch template %q: %w", spec.Name, err)
	}
	g.LaunchTemplateID = aws.ToString(lt.LaunchTemplate.LaunchTemplateId)
	_, err = as.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(spec.Name),
		MinSize:              aws.Int32(spec.Min),
		MaxSize:              aws.Int32(spec.Max),
		DesiredCapacity:      aws.Int32(spec.Desired),
		AvailabilityZones:    spec.Zones,
		LaunchTemplate: &astypes.LaunchTemplateSpecification{
			LaunchTemplateId: aws.String(g.LaunchTemplateID),
			Version:          aws.String(spec.VersionSpec),
		},
	})
	if err != nil {
		return g, fmt.Errorf("create Auto Scaling group %q: %w", spec.Name, err)
	}
	return g, nil
}

// WaitNodesReady waits until the group has its desired number of InService
// instances and each has a node with its provider ID that pods can be
// scheduled to (scenario.NodeUsable).
func WaitNodesReady(ctx context.Context, cfg aws.Config, c kubernetes.Interface, group string) error {
	as := autoscaling.NewFromConfig(cfg)
	var missing []string
	for {
		out, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
		if err != nil {
			return fmt.Errorf("describe Auto Scaling group %q: %w", group, err)
		}
		if len(out.AutoScalingGroups) != 1 {
			return fmt.Errorf("auto scaling group %q not found", group)
		}
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := map[string]bool{}
		for _, n := range nodes.Items {
			ready[n.Spec.ProviderID] = scenario.NodeUsable(&n)
		}
		g := out.AutoScalingGroups[0]
		missing = missing[:0]
		for _, in := range g.Instances {
			pid := awsfake.ProviderID(awsfake.Instance{Zone: aws.ToString(in.AvailabilityZone), ID: aws.ToString(in.InstanceId)})
			if in.LifecycleState != astypes.LifecycleStateInService || !ready[pid] {
				missing = append(missing, aws.ToString(in.InstanceId))
			}
		}
		if len(missing) == 0 && int32(len(g.Instances)) == aws.ToInt32(g.DesiredCapacity) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %q: %d instances for desired %d, not InService with a Ready node: %v: %w",
				group, len(g.Instances), aws.ToInt32(g.DesiredCapacity), missing, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
