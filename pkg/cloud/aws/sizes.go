package aws

import (
	"context"
	"errors"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/smithy-go"
)

// SetSize sets the group's desired capacity and max size in one call, so
// the pair is checked as a whole (min <= desired <= max).
func (p *Client) SetSize(ctx context.Context, group string, desired, max int32) error {
	_, err := p.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(group),
		DesiredCapacity:      sdkaws.Int32(desired),
		MaxSize:              sdkaws.Int32(max),
	})
	if err != nil {
		return wrap(err, "set Auto Scaling group %q to desired %d, max %d", group, desired, max)
	}
	return nil
}

// SetMax sets the group's max size alone, leaving desired capacity to
// whoever else changes it (the cluster autoscaler).
func (p *Client) SetMax(ctx context.Context, group string, max int32) error {
	_, err := p.asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: sdkaws.String(group),
		MaxSize:              sdkaws.Int32(max),
	})
	if err != nil {
		return wrap(err, "set Auto Scaling group %q to max %d", group, max)
	}
	return nil
}

// Sizes reads the group's min, desired and max with one call.
func (p *Client) Sizes(ctx context.Context, group string) (min, desired, max int32, err error) {
	out, err := p.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	if err != nil {
		return 0, 0, 0, wrap(err, "describe Auto Scaling group %q", group)
	}
	for _, g := range out.AutoScalingGroups {
		if sdkaws.ToString(g.AutoScalingGroupName) == group {
			return sdkaws.ToInt32(g.MinSize), sdkaws.ToInt32(g.DesiredCapacity), sdkaws.ToInt32(g.MaxSize), nil
		}
	}
	return 0, 0, 0, p.groupNotFound(group)
}

// AZRebalance is the group's process that, when its zones are unbalanced,
// launches in the emptiest zone and then terminates in the fullest one.
const AZRebalance = "AZRebalance"

// ProcessSuspended reports whether the group's process is suspended now.
func (p *Client) ProcessSuspended(ctx context.Context, group, process string) (bool, error) {
	ag, err := p.describeGroup(ctx, group)
	if err != nil {
		return false, err
	}
	if ag == nil {
		return false, p.groupNotFound(group)
	}
	return slices.ContainsFunc(ag.SuspendedProcesses, func(sp astypes.SuspendedProcess) bool {
		return sdkaws.ToString(sp.ProcessName) == process
	}), nil
}

// SuspendProcess suspends one process of the group; suspending it again
// changes nothing.
func (p *Client) SuspendProcess(ctx context.Context, group, process string) error {
	_, err := p.asg.SuspendProcesses(ctx, &autoscaling.SuspendProcessesInput{AutoScalingGroupName: sdkaws.String(group), ScalingProcesses: []string{process}})
	if err != nil {
		return wrap(err, "suspend process %s of Auto Scaling group %q", process, group)
	}
	return nil
}

// ResumeProcess resumes one process of the group; resuming one that runs
// changes nothing.
func (p *Client) ResumeProcess(ctx context.Context, group, process string) error {
	_, err := p.asg.ResumeProcesses(ctx, &autoscaling.ResumeProcessesInput{AutoScalingGroupName: sdkaws.String(group), ScalingProcesses: []string{process}})
	if err != nil {
		return wrap(err, "resume process %s of Auto Scaling group %q", process, group)
	}
	return nil
}

// TerminateShrink terminates an instance and lowers the desired capacity by
// one, so nothing replaces it: the scale-down, one node at a time.
func (p *Client) TerminateShrink(ctx context.Context, instanceID string) error {
	return p.terminate(ctx, instanceID, true)
}

// Terminate terminates an instance without decrementing the desired
// capacity, so the group launches a replacement from its current launch
// template version. An instance that is already gone counts as terminated,
// so a re-run after an interruption can repeat the call.
func (p *Client) Terminate(ctx context.Context, instanceID string) error {
	return p.terminate(ctx, instanceID, false)
}

func (p *Client) terminate(ctx context.Context, instanceID string, decrement bool) error {
	_, err := p.asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId:                     sdkaws.String(instanceID),
		ShouldDecrementDesiredCapacity: sdkaws.Bool(decrement),
	})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "not found") {
			return nil
		}
		return wrap(err, "terminate instance %q", instanceID)
	}
	return nil
}
