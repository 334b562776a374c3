package awsfake

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Load balancers, as far as a node upgrade meets them: target groups of
// instance targets with a deregistration delay (Elastic Load Balancing
// v2) and Classic Load Balancers with connection draining, attached to
// Auto Scaling groups, which register every instance of the group that
// comes into service. A deregistered instance keeps draining for the
// delay, then is out (unused). Every termination is recorded with the
// load balancers that still held the instance then, so a test can prove
// that nothing was terminated while it still had traffic.

// lbState is the Server's load balancers; the zero value is empty.
type lbState struct {
	targetGroups map[string]*targetGroup // by ARN
	classic      map[string]*classicLB   // by name
	// attached are each group's target group ARNs and classic names.
	attachedTG, attachedCLB map[string][]string
	terminations            []Termination
}

// registration is an instance's place in one load balancer: registered
// since a time, or deregistered at one (draining until the delay passed).
type registration struct {
	port         int32
	deregistered time.Time // zero while registered
}

type targetGroup struct {
	arn, name string
	port      int32
	delay     time.Duration
	targets   map[string]*registration // by instance id
}

type classicLB struct {
	name     string
	draining bool
	timeout  time.Duration
	members  map[string]*registration
}

// Termination is an instance's termination as the fake saw it: when, and
// which load balancers still sent it traffic then (registered, or draining
// with the delay not yet passed).
type Termination struct {
	Instance, Group string
	At              time.Time
	// Held names the target groups and Classic Load Balancers that held
	// the instance; empty when it had left them all.
	Held []string
}

// held reports whether a registration still holds its instance at now,
// given the load balancer's delay.
func (r *registration) held(now time.Time, delay time.Duration) bool {
	return r.deregistered.IsZero() || now.Before(r.deregistered.Add(delay))
}

// draining is the delay in effect for a classic load balancer: none when
// connection draining is off.
func (c *classicLB) delay() time.Duration {
	if !c.draining {
		return 0
	}
	return c.timeout
}

// CreateTargetGroup makes a target group of instance targets on port with
// the given deregistration delay (deregistration_delay.timeout_seconds)
// and returns its ARN.
func (s *Server) CreateTargetGroup(name string, port int32, delay time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lb.targetGroups == nil {
		s.lb.targetGroups = map[string]*targetGroup{}
	}
	s.seq++
	arn := fmt.Sprintf("arn:aws:elasticloadbalancing:%s:123456789012:targetgroup/%s/%016x", s.opts.Region, name, s.idBase()+uint64(s.seq))
	s.lb.targetGroups[arn] = &targetGroup{arn: arn, name: name, port: port, delay: delay, targets: map[string]*registration{}}
	return arn
}

// CreateClassicLoadBalancer makes a Classic Load Balancer; a positive
// drainTimeout enables connection draining with that timeout.
func (s *Server) CreateClassicLoadBalancer(name string, drainTimeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lb.classic == nil {
		s.lb.classic = map[string]*classicLB{}
	}
	s.lb.classic[name] = &classicLB{name: name, draining: drainTimeout > 0, timeout: drainTimeout, members: map[string]*registration{}}
}

// AttachTargetGroups attaches target groups to an Auto Scaling group, as
// AttachLoadBalancerTargetGroups does: its instances in service are
// registered.
func (s *Server) AttachTargetGroups(group string, arns ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attachLocked(group, arns, nil)
}

// AttachLoadBalancers attaches Classic Load Balancers to an Auto Scaling
// group, as AttachLoadBalancers does.
func (s *Server) AttachLoadBalancers(group string, names ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attachLocked(group, nil, names)
}

func (s *Server) attachLocked(group string, arns, names []string) error {
	if s.groups[group] == nil {
		return validation("AutoScalingGroup name not found - AutoScalingGroup %s not found", group)
	}
	if err := s.attachableLocked(arns, names); err != nil {
		return err
	}
	if s.lb.attachedTG == nil {
		s.lb.attachedTG, s.lb.attachedCLB = map[string][]string{}, map[string][]string{}
	}
	for _, arn := range arns {
		if !slices.Contains(s.lb.attachedTG[group], arn) {
			s.lb.attachedTG[group] = append(s.lb.attachedTG[group], arn)
		}
	}
	for _, n := range names {
		if !slices.Contains(s.lb.attachedCLB[group], n) {
			s.lb.attachedCLB[group] = append(s.lb.attachedCLB[group], n)
		}
	}
	s.syncLBLocked()
	s.notify()
	return nil
}

// syncLBLocked registers the instances Auto Scaling would have registered
// by now: every instance in service of an attached group that its load
// balancers have not seen yet. One deregistered stays so.
func (s *Server) syncLBLocked() {
	for group, arns := range s.lb.attachedTG {
		for _, in := range s.inServiceLocked(group) {
			for _, arn := range arns {
				if tg := s.lb.targetGroups[arn]; tg != nil && tg.targets[in] == nil {
					tg.targets[in] = &registration{port: tg.port}
				}
			}
		}
	}
	for group, names := range s.lb.attachedCLB {
		for _, in := range s.inServiceLocked(group) {
			for _, n := range names {
				if c := s.lb.classic[n]; c != nil && c.members[in] == nil {
					c.members[in] = &registration{}
				}
			}
		}
	}
}

func (s *Server) inServiceLocked(group string) []string {
	g := s.groups[group]
	if g == nil {
		return nil
	}
	var out []string
	for _, id := range g.members {
		if in := s.instances[id]; in != nil && in.Lifecycle == LifecycleInService {
			out = append(out, id)
		}
	}
	return out
}

// lbTerminatingLocked records a termination with what still held the
// instance, then deregisters it everywhere, as Auto Scaling does.
func (s *Server) lbTerminatingLocked(in *instance) {
	if len(s.lb.targetGroups)+len(s.lb.classic) == 0 {
		return
	}
	s.syncLBLocked()
	now := time.Now()
	t := Termination{Instance: in.ID, Group: in.Group, At: now}
	for _, arn := range sortedKeys(s.lb.targetGroups) {
		tg := s.lb.targetGroups[arn]
		if r := tg.targets[in.ID]; r != nil && r.held(now, tg.delay) {
			t.Held = append(t.Held, "target group "+tg.name)
			if r.deregistered.IsZero() {
				r.deregistered = now
			}
		}
	}
	for _, name := range sortedKeys(s.lb.classic) {
		c := s.lb.classic[name]
		if r := c.members[in.ID]; r != nil && r.held(now, c.delay()) {
			t.Held = append(t.Held, "classic load balancer "+name)
			if r.deregistered.IsZero() {
				r.deregistered = now
			}
		}
	}
	s.lb.terminations = append(s.lb.terminations, t)
}

// Terminations lists the terminations of instances while load balancers
// existed, in order.
func (s *Server) Terminations() []Termination {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lb.terminations)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// attachedNodes lists a group's target groups and Classic Load Balancers
// for DescribeAutoScalingGroups.
func (s *Server) attachedNodes(g *group) []*node {
	var tgs, clbs []*node
	for _, arn := range s.lb.attachedTG[g.Name] {
		tgs = append(tgs, txt("member", arn))
	}
	for _, n := range s.lb.attachedCLB[g.Name] {
		clbs = append(clbs, txt("member", n))
	}
	return []*node{el("TargetGroupARNs", tgs...), el("LoadBalancerNames", clbs...)}
}

// lbAutoScaling answers the Auto Scaling calls about load balancers; ok is
// false for any other action.
func (s *Server) lbAutoScaling(action string, f form) (res []*node, ok bool, err error) {
	group := f.get("AutoScalingGroupName")
	switch action {
	// Both answer an empty result element, which the SDK expects.
	case "AttachLoadBalancerTargetGroups":
		return []*node{}, true, s.attachLocked(group, f.list("TargetGroupARNs.member"), nil)
	case "AttachLoadBalancers":
		return []*node{}, true, s.attachLocked(group, nil, f.list("LoadBalancerNames.member"))
	case "DescribeLoadBalancerTargetGroups", "DescribeLoadBalancers":
		if s.groups[group] == nil {
			return nil, true, validation("AutoScalingGroup name not found - AutoScalingGroup %s not found", group)
		}
		var items []*node
		if action == "DescribeLoadBalancerTargetGroups" {
			for _, arn := range s.lb.attachedTG[group] {
				items = append(items, el("member", txt("LoadBalancerTargetGroupARN", arn), txt("State", "InService")))
			}
			return []*node{el("LoadBalancerTargetGroups", items...)}, true, nil
		}
		for _, n := range s.lb.attachedCLB[group] {
			items = append(items, el("member", txt("LoadBalancerName", n), txt("State", "InService")))
		}
		return []*node{el("LoadBalancers", items...)}, true, nil
	}
	return nil, false, nil
}

// attachableLocked fails unless every target group and Classic Load
// Balancer exists.
func (s *Server) attachableLocked(arns, names []string) error {
	for _, arn := range arns {
		if s.lb.targetGroups[arn] == nil {
			return validation("Provided Target Groups may not be valid. Please ensure they exist and try again. Target group not found: %s", arn)
		}
	}
	for _, n := range names {
		if s.lb.classic[n] == nil {
			return validation("Provided Load Balancers may not be valid. Please ensure they exist and try again. Load balancer not found: %s", n)
		}
	}
	return nil
}
