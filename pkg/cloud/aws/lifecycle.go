package aws

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Lifecycle hooks, warm pools and scale-in protection, as AWS documents
// them:
//   - A lifecycle hook on EC2_INSTANCE_TERMINATING keeps a terminating
//     instance in Terminating:Wait until its owner calls
//     CompleteLifecycleAction or HeartbeatTimeout passes (3600 s unless
//     set), then Terminating:Proceed, then Terminated.
//   - Warm-pool instances (DescribeWarmPool, lifecycle states Warmed:*)
//     sit beside the group: not in service, not capacity, and
//     TerminateInstanceInAutoScalingGroup is not for them. A launch
//     template change does not replace them; a scale-out draws on them.
//   - Scale-in protection (ProtectedFromScaleIn) keeps the group's own
//     scale-in off an instance; TerminateInstanceInAutoScalingGroup
//     terminates it all the same.

const (
	// terminatingTransition is the transition of a hook that holds
	// terminating instances.
	terminatingTransition = "autoscaling:EC2_INSTANCE_TERMINATING"
	// defaultHeartbeat is HeartbeatTimeout when a hook does not set it.
	defaultHeartbeat = 3600 * time.Second
	// warmedPrefix starts every lifecycle state of a warm-pool instance.
	warmedPrefix = "Warmed:"
	// WarmPoolKind is what the plan calls the reserve.
	WarmPoolKind = "warm pool"
)

// isWarm reports whether a lifecycle state is a warm pool's.
func isWarm(lifecycle string) bool { return strings.HasPrefix(lifecycle, warmedPrefix) }

// TerminatingHooks lists the group's lifecycle hooks on termination, by
// name.
func (p *Client) TerminatingHooks(ctx context.Context, group string) ([]plan.LeaveHook, error) {
	out, err := p.asg.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: sdkaws.String(group)})
	if err != nil {
		return nil, wrap(err, "describe the lifecycle hooks of Auto Scaling group %q", group)
	}
	var hooks []plan.LeaveHook
	for _, h := range out.LifecycleHooks {
		if sdkaws.ToString(h.LifecycleTransition) != terminatingTransition {
			continue
		}
		beat := defaultHeartbeat
		if h.HeartbeatTimeout != nil {
			beat = time.Duration(*h.HeartbeatTimeout) * time.Second
		}
		hooks = append(hooks, plan.LeaveHook{Name: sdkaws.ToString(h.LifecycleHookName), Timeout: plan.Duration(beat), DefaultResult: sdkaws.ToString(h.DefaultResult)})
	}
	sort.Slice(hooks, func(i, j int) bool { return hooks[i].Name < hooks[j].Name })
	return hooks, nil
}

// WarmPool describes the group's warm pool and its instances; nil when the
// group has none.
func (p *Client) WarmPool(ctx context.Context, group string) (*plan.Reserve, error) {
	var r *plan.Reserve
	in := &autoscaling.DescribeWarmPoolInput{AutoScalingGroupName: sdkaws.String(group)}
	for {
		out, err := p.asg.DescribeWarmPool(ctx, in)
		if err != nil {
			return nil, wrap(err, "describe the warm pool of Auto Scaling group %q", group)
		}
		if out.WarmPoolConfiguration == nil {
			return nil, nil
		}
		if r == nil {
			c := out.WarmPoolConfiguration
			r = &plan.Reserve{Kind: WarmPoolKind, State: string(c.PoolState), MinSize: sdkaws.ToInt32(c.MinSize), Machines: []plan.Machine{}}
		}
		for _, i := range out.Instances {
			m := plan.Machine{ID: sdkaws.ToString(i.InstanceId), Zone: sdkaws.ToString(i.AvailabilityZone), State: plan.MachinePending, Lifecycle: string(i.LifecycleState)}
			if i.LaunchTemplate != nil {
				m.Template, m.Version = sdkaws.ToString(i.LaunchTemplate.LaunchTemplateId), sdkaws.ToString(i.LaunchTemplate.Version)
			}
			r.Machines = append(r.Machines, m)
		}
		if sdkaws.ToString(out.NextToken) == "" {
			return r, nil
		}
		in.NextToken = out.NextToken
	}
}

// instanceStates describes instances in Auto Scaling's terms, by ID; an
// instance that belongs to no group any more is not in it.
func (p *Client) instanceStates(ctx context.Context, ids []string) (map[string]astypes.AutoScalingInstanceDetails, error) {
	out := make(map[string]astypes.AutoScalingInstanceDetails, len(ids))
	err := p.describeASGInstances(ctx, ids, "describe", func(in astypes.AutoScalingInstanceDetails) {
		out[sdkaws.ToString(in.InstanceId)] = in
	})
	return out, err
}

// refuseWarm refuses to terminate a warm-pool instance: it is no node of
// the group, and TerminateInstanceInAutoScalingGroup is not for it.
func (p *Client) refuseWarm(ctx context.Context, id, node string) error {
	states, err := p.instanceStates(ctx, []string{id})
	in, found := states[id]
	lifecycle, group := sdkaws.ToString(in.LifecycleState), sdkaws.ToString(in.AutoScalingGroupName)
	if err != nil || !found || !isWarm(lifecycle) {
		return err
	}
	return fmt.Errorf("cannot terminate instance %q of node %q: it is in the warm pool of Auto Scaling group %q (%s), not in service; take the node out of the group's selection (--selector) or the instance out of the warm pool", id, node, group, lifecycle)
}

var _ cloud.Departures = (*NodeGroup)(nil)

// MachineOf implements cloud.Departures.
func (n *NodeGroup) MachineOf(ctx context.Context, node string) (string, error) {
	return n.instanceOf(ctx, node)
}

// Leaving implements cloud.Departures: an instance is gone once Auto
// Scaling no longer describes it, or describes it Terminated; in
// Terminating:Wait its group's terminating hooks hold it. One
// DescribeAutoScalingInstances per 50 instances, and each group's hooks
// read once.
func (n *NodeGroup) Leaving(ctx context.Context, ids []string) (map[string]cloud.Departure, error) {
	states, err := n.API.instanceStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	hooks := map[string][]plan.LeaveHook{} // by group
	out := make(map[string]cloud.Departure, len(ids))
	for _, id := range ids {
		in, found := states[id]
		lifecycle := sdkaws.ToString(in.LifecycleState)
		if !found || lifecycle == "Terminated" {
			out[id] = cloud.Departure{Gone: true}
			continue
		}
		d := cloud.Departure{Lifecycle: lifecycle}
		if lifecycle == "Terminating:Wait" {
			group := sdkaws.ToString(in.AutoScalingGroupName)
			held, ok := hooks[group]
			if !ok {
				if held, err = n.API.TerminatingHooks(ctx, group); err != nil {
					return nil, err
				}
				hooks[group] = held
			}
			d.HeldBy = held
		}
		out[id] = d
	}
	return out, nil
}

// openLifecycle adds to the plan's view what of the group's own life a run
// meets: its terminating hooks, its warm pool, its protected instances.
func (p *Client) openLifecycle(ctx context.Context, g *AutoScalingGroup, cg *plan.CloudGroup) error {
	hooks, err := p.TerminatingHooks(ctx, g.Name)
	if err != nil {
		return err
	}
	cg.LeaveHooks = hooks
	if cg.Reserve, err = p.WarmPool(ctx, g.Name); err != nil {
		return err
	}
	if cg.Reserve != nil {
		if err := p.warmVersions(ctx, cg.Reserve.Machines); err != nil {
			return err
		}
	}
	for _, in := range g.Instances {
		if in.Protected && machineState(in.Lifecycle) != plan.MachineLeaving {
			cg.Protected = append(cg.Protected, in.ID)
		}
	}
	return nil
}

// warmVersions reads the launch template version of warm-pool instances
// as groupFrom does for members: EC2's tag, else Auto Scaling's word
// resolved now.
func (p *Client) warmVersions(ctx context.Context, machines []plan.Machine) error {
	ids := make([]string, len(machines))
	for i, m := range machines {
		ids[i] = m.ID
	}
	ec2s, err := p.describeInstances(ctx, ids)
	if err != nil {
		return err
	}
	res := resolver{p: p, cache: map[[2]string]ec2types.LaunchTemplateVersion{}}
	for i := range machines {
		m := &machines[i]
		if e, ok := ec2s[m.ID]; ok {
			m.Image = sdkaws.ToString(e.ImageId)
			id, v := launchedFrom(e)
			m.Template, m.Version = cmp.Or(id, m.Template), cmp.Or(v, m.Version)
		}
		if m.Template != "" && m.Version != "" && !isNumber(m.Version) {
			v, err := res.version(ctx, m.Template, "", m.Version)
			if err != nil {
				return err
			}
			m.Version = strconv.FormatInt(sdkaws.ToInt64(v.VersionNumber), 10)
		}
	}
	return nil
}
