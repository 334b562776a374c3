package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Since Kubernetes 1.19 the service controller leaves cordoned nodes in
// instance-target load balancers, and Auto Scaling's own termination
// deregisters an instance only as it terminates it: a drained node keeps
// its traffic until someone deregisters it. The run does, from the target
// groups and Classic Load Balancers attached to the group, and terminates
// the instance only once none sends it traffic (the deregistration delay
// or connection draining timeout has passed).

// deregistrationPoll is how often a wait for deregistration asks again:
// the ELB APIs have no events, and the delays are minutes.
const deregistrationPoll = 5 * time.Second

// Kinds of load balancer, as the plan and messages name them.
const (
	kindTargetGroup = "target group"
	kindClassic     = "classic load balancer"
)

// Traffic source types of DescribeAutoScalingGroups' TrafficSources.
const (
	sourceELB   = "elb"
	sourceELBv2 = "elbv2"
)

// attached reads the target groups and Classic Load Balancers attached to
// a group, whether by AttachLoadBalancerTargetGroups / AttachLoadBalancers
// or by AttachTrafficSources (DescribeAutoScalingGroups reports both, so
// no call more is needed; VPC Lattice target groups are not ELB's and are
// left out).
func attached(ag *astypes.AutoScalingGroup) (targetGroups, classic []string) {
	add := func(list []string, v string) []string {
		if v == "" || slices.Contains(list, v) {
			return list
		}
		return append(list, v)
	}
	for _, arn := range ag.TargetGroupARNs {
		targetGroups = add(targetGroups, arn)
	}
	for _, name := range ag.LoadBalancerNames {
		classic = add(classic, name)
	}
	for _, ts := range ag.TrafficSources {
		id := sdkaws.ToString(ts.Identifier)
		switch t := sdkaws.ToString(ts.Type); {
		case t == sourceELBv2 || t == "" && strings.Contains(id, ":targetgroup/"):
			targetGroups = add(targetGroups, id)
		case t == sourceELB || t == "" && !strings.HasPrefix(id, "arn:"):
			classic = add(classic, id)
		}
	}
	return targetGroups, classic
}

// targetGroupName is the name part of a target group's ARN
// (arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID), for
// messages; the ARN itself when it has no such part.
func targetGroupName(arn string) string {
	_, rest, ok := strings.Cut(arn, ":targetgroup/")
	if !ok {
		return arn
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// LoadBalancers lists the group's load balancers with the delay each
// imposes on a deregistered instance: a target group's
// deregistration_delay.timeout_seconds, a Classic Load Balancer's
// connection draining timeout (0 when draining is off). It only reads.
func (p *Client) LoadBalancers(ctx context.Context, g *AutoScalingGroup) ([]plan.LoadBalancer, error) {
	var out []plan.LoadBalancer
	for _, arn := range g.TargetGroups {
		attrs, err := p.elbv2.DescribeTargetGroupAttributes(ctx, &elasticloadbalancingv2.DescribeTargetGroupAttributesInput{TargetGroupArn: sdkaws.String(arn)})
		if err != nil {
			return nil, wrap(err, "describe target group %q", targetGroupName(arn))
		}
		// AWS's default, should the attribute be missing.
		delay := 300 * time.Second
		for _, a := range attrs.Attributes {
			if sdkaws.ToString(a.Key) == "deregistration_delay.timeout_seconds" {
				if s, err := strconv.Atoi(sdkaws.ToString(a.Value)); err == nil {
					delay = time.Duration(s) * time.Second
				}
			}
		}
		out = append(out, plan.LoadBalancer{Kind: kindTargetGroup, Name: targetGroupName(arn), Delay: plan.Duration(delay)})
	}
	for _, name := range g.LoadBalancers {
		attrs, err := p.elb.DescribeLoadBalancerAttributes(ctx, &elasticloadbalancing.DescribeLoadBalancerAttributesInput{LoadBalancerName: sdkaws.String(name)})
		if err != nil {
			return nil, wrap(err, "describe classic load balancer %q", name)
		}
		var delay time.Duration
		if a := attrs.LoadBalancerAttributes; a != nil && a.ConnectionDraining != nil && a.ConnectionDraining.Enabled {
			delay = time.Duration(sdkaws.ToInt32(a.ConnectionDraining.Timeout)) * time.Second
		}
		out = append(out, plan.LoadBalancer{Kind: kindClassic, Name: name, Delay: plan.Duration(delay)})
	}
	return out, nil
}

// held is an instance a load balancer still sends traffic to, or may.
type held struct {
	kind, lb, instance, state string
}

// Deregister takes the instances out of the target groups and Classic Load
// Balancers and returns once none holds them: a target is out when it is
// unused or no longer listed, a classic instance when it is no longer
// listed or out of service. Each load balancer is read before anything is
// asked of it, so a repeat after an interruption deregisters only what is
// still registered. After timeout it fails naming what still holds an
// instance; nothing is terminated.
func (p *Client) Deregister(ctx context.Context, targetGroups, classic, instances []string, timeout time.Duration, waiting func(string)) error {
	if len(instances) == 0 || len(targetGroups)+len(classic) == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	first := true
	throttled := 0 // transient errors in a row
	for {
		hold, err := p.deregisterOnce(ctx, targetGroups, classic, instances)
		pause := p.pollEvery
		switch {
		case err != nil && cloud.Transient(err) && time.Now().Before(deadline):
			// Throttling passes: look again later; only the timeout ends
			// the wait.
			throttled++
			pause = cloud.Backoff(p.pollEvery, throttled)
		case err != nil:
			return err
		default:
			throttled = 0
		}
		if err != nil {
			if !sleepUntil(ctx, min(pause, time.Until(deadline))) {
				return ctx.Err()
			}
			continue
		}
		if len(hold) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			h := hold[0]
			return fmt.Errorf("cannot terminate instance %q: %s %q still holds it (%s) after %s; run again to keep waiting, or raise --deregistration-timeout",
				h.instance, h.kind, h.lb, h.state, plan.FormatDuration(timeout))
		}
		if first && waiting != nil {
			waiting(waitingLine(hold, deadline))
			first = false
		}
		if !sleepUntil(ctx, min(pause, time.Until(deadline))) {
			return ctx.Err()
		}
	}
}

// sleepUntil pauses for d; false when ctx ends first.
func sleepUntil(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// waitingLine says which load balancers the wait is for, and until when.
func waitingLine(hold []held, deadline time.Time) string {
	var lbs, ids []string
	for _, h := range hold {
		if lb := h.kind + " " + strconv.Quote(h.lb); !slices.Contains(lbs, lb) {
			lbs = append(lbs, lb)
		}
		if !slices.Contains(ids, h.instance) {
			ids = append(ids, h.instance)
		}
	}
	return fmt.Sprintf("%s to deregister %s (at most until %s)", strings.Join(lbs, ", "), strings.Join(ids, ", "), deadline.Format("15:04:05"))
}

// deregisterOnce reads every load balancer once, deregisters the
// instances still registered, and returns what still holds them.
func (p *Client) deregisterOnce(ctx context.Context, targetGroups, classic, instances []string) ([]held, error) {
	var hold []held
	for _, arn := range targetGroups {
		h, err := p.deregisterTargets(ctx, arn, instances)
		if err != nil {
			return nil, err
		}
		hold = append(hold, h...)
	}
	for _, name := range classic {
		h, err := p.deregisterClassic(ctx, name, instances)
		if err != nil {
			return nil, err
		}
		hold = append(hold, h...)
	}
	return hold, nil
}

// deregisterTargets handles one target group: one DescribeTargetHealth for
// all its targets (the registered ports come with them), one
// DeregisterTargets for those of the instances still registered.
func (p *Client) deregisterTargets(ctx context.Context, arn string, instances []string) ([]held, error) {
	name := targetGroupName(arn)
	out, err := p.elbv2.DescribeTargetHealth(ctx, &elasticloadbalancingv2.DescribeTargetHealthInput{TargetGroupArn: sdkaws.String(arn)})
	if err != nil {
		if isGone(err, "TargetGroupNotFound") {
			return nil, nil // deleted meanwhile: it holds nothing
		}
		return nil, wrap(err, "describe target health of target group %q", name)
	}
	var hold []held
	var registered []elbv2types.TargetDescription
	for _, d := range out.TargetHealthDescriptions {
		if d.Target == nil || !slices.Contains(instances, sdkaws.ToString(d.Target.Id)) {
			continue
		}
		state := elbv2types.TargetHealthStateEnumUnused
		if d.TargetHealth != nil {
			state = d.TargetHealth.State
		}
		switch state {
		case elbv2types.TargetHealthStateEnumUnused:
			continue
		case elbv2types.TargetHealthStateEnumDraining:
			// Deregistered already (by this run before an interruption,
			// or by someone else): waiting is all there is to do.
		default:
			registered = append(registered, elbv2types.TargetDescription{Id: d.Target.Id, Port: d.Target.Port})
			state = elbv2types.TargetHealthStateEnumDraining
		}
		hold = append(hold, held{kind: kindTargetGroup, lb: name, instance: sdkaws.ToString(d.Target.Id), state: string(state)})
	}
	if len(registered) > 0 {
		_, err := p.elbv2.DeregisterTargets(ctx, &elasticloadbalancingv2.DeregisterTargetsInput{TargetGroupArn: sdkaws.String(arn), Targets: registered})
		if err != nil && !isGone(err, "TargetGroupNotFound") {
			return nil, wrap(err, "deregister %s from target group %q", targetIDs(registered), name)
		}
	}
	return hold, nil
}

func targetIDs(ts []elbv2types.TargetDescription) string {
	ids := make([]string, 0, len(ts))
	for _, t := range ts {
		if id := sdkaws.ToString(t.Id); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return quoteList(ids)
}

// classicDeregistering is how DescribeInstanceHealth describes an instance
// whose connections are draining after its deregistration.
const classicDeregistering = "deregistration currently in progress"

// deregisterClassic handles one Classic Load Balancer: an instance listed
// InService still gets traffic, or drains its connections when its
// description says deregistration is in progress.
func (p *Client) deregisterClassic(ctx context.Context, name string, instances []string) ([]held, error) {
	out, err := p.elb.DescribeInstanceHealth(ctx, &elasticloadbalancing.DescribeInstanceHealthInput{LoadBalancerName: sdkaws.String(name)})
	if err != nil {
		if isGone(err, "LoadBalancerNotFound") {
			return nil, nil
		}
		return nil, wrap(err, "describe instance health of classic load balancer %q", name)
	}
	var hold []held
	var registered []elbtypes.Instance
	for _, s := range out.InstanceStates {
		id := sdkaws.ToString(s.InstanceId)
		if !slices.Contains(instances, id) || sdkaws.ToString(s.State) != "InService" {
			continue
		}
		if !strings.Contains(sdkaws.ToString(s.Description), classicDeregistering) {
			registered = append(registered, elbtypes.Instance{InstanceId: s.InstanceId})
		}
		hold = append(hold, held{kind: kindClassic, lb: name, instance: id, state: "connection draining"})
	}
	if len(registered) > 0 {
		_, err := p.elb.DeregisterInstancesFromLoadBalancer(ctx, &elasticloadbalancing.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: sdkaws.String(name), Instances: registered})
		if err != nil && !isGone(err, "LoadBalancerNotFound") {
			return nil, wrap(err, "deregister instances from classic load balancer %q", name)
		}
	}
	return hold, nil
}

// isGone reports an API error whose code contains what (a load balancer
// deleted while the run waits).
func isGone(err error, what string) bool {
	var ae interface{ ErrorCode() string }
	return errors.As(err, &ae) && strings.Contains(ae.ErrorCode(), what)
}

var _ cloud.Deregisterer = (*NodeGroup)(nil)

// Deregister implements cloud.Deregisterer for the nodes' instances, from
// the load balancers attached to the group (and to blue/green's green
// group, whose nodes a rollback removes).
func (n *NodeGroup) Deregister(ctx context.Context, nodes []string, timeout time.Duration, waiting func(string)) error {
	var ids []string
	for _, node := range nodes {
		id, err := n.instanceOf(ctx, node)
		if err != nil {
			return err
		}
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var tgs, classic []string
	for _, name := range []string{n.ASG, n.green} {
		if name == "" {
			continue
		}
		ag, err := n.API.describeGroup(ctx, name)
		if err != nil {
			return err
		}
		if ag == nil {
			continue // deleted: its instances went with it
		}
		t, c := attached(ag)
		tgs, classic = appendNew(tgs, t...), appendNew(classic, c...)
	}
	return n.API.Deregister(ctx, tgs, classic, ids, timeout, waiting)
}

func appendNew(list []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}
