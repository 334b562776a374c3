package awsfake

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Lifecycle hooks, warm pools and scale-in protection, as AWS documents
// them:
//   - A hook on autoscaling:EC2_INSTANCE_TERMINATING holds an instance the
//     group terminates in Terminating:Wait until CompleteLifecycleAction
//     or its heartbeat timeout (RecordLifecycleActionHeartbeat restarts
//     it); then Terminating:Proceed, and the instance shuts down. For a
//     terminating hook CONTINUE and ABANDON both end in the termination.
//     A force-deleted group's instances skip their hooks. Launching hooks
//     are kept and described, not applied.
//   - A warm pool's instances (Warmed:Pending, then Warmed:Stopped or
//     Warmed:Running) sit beside the group, are never nodes (OnLaunch is
//     not called for them) and are not members in DescribeAutoScalingGroups;
//     DescribeAutoScalingInstances and DescribeWarmPool describe them.
//     TerminateInstanceInAutoScalingGroup and SetInstanceProtection refuse
//     them. They keep the version they were launched from. The pool holds
//     max(MinSize, MaxGroupPreparedCapacity (else MaxSize) - desired)
//     instances. A scale-out draws on the pool first, as AWS does: a
//     prepared instance of the zone the launch goes to joins the group on
//     the version it was launched from, and the pool launches its
//     replacement from the group's version of the moment.
//   - ProtectedFromScaleIn keeps the group's own scale-in off an instance
//     (when every instance left is protected the desired size drops and
//     nothing is terminated); TerminateInstanceInAutoScalingGroup
//     terminates a protected instance all the same.

const (
	TransitionLaunching   = "autoscaling:EC2_INSTANCE_LAUNCHING"
	TransitionTerminating = "autoscaling:EC2_INSTANCE_TERMINATING"

	LifecycleTerminatingWait    = "Terminating:Wait"
	LifecycleTerminatingProceed = "Terminating:Proceed"
	LifecycleWarmedPending      = "Warmed:Pending"
	LifecycleWarmedStopped      = "Warmed:Stopped"
	LifecycleWarmedRunning      = "Warmed:Running"
	StateStopped                = "stopped"

	// defaultHeartbeat is a hook's HeartbeatTimeout unless set (AWS: 1 h).
	defaultHeartbeat = 3600
)

// LifecycleHook is a group's lifecycle hook.
type LifecycleHook struct {
	Name, Group, Transition string
	HeartbeatTimeout        int32 // seconds
	DefaultResult           string
}

// LifecycleAction is a hook's hold on one instance, and how it ended.
type LifecycleAction struct {
	Hook, Instance, Token string
	Deadline              time.Time
	// Result is "" while it holds; CONTINUE or ABANDON once completed;
	// TimedOut says the heartbeat timeout ended it with DefaultResult.
	Result   string
	TimedOut bool
}

// lifeState is the Server's hooks, holds, warm pools and protections.
type lifeState struct {
	hooks     map[string]map[string]*LifecycleHook // group -> name -> hook
	actions   map[string][]*LifecycleAction        // instance -> its hooks' actions
	ended     []LifecycleAction                    // every action that ended, in order
	warm      map[string]*warmPool                 // group -> pool
	protected map[string]bool                      // instance ids
}

type warmPool struct {
	minSize, maxPrepared int32 // maxPrepared -1: the group's max
	state                string
	members              []string
}

func (s *Server) life() *lifeState {
	if s.lifecycle.hooks == nil {
		s.lifecycle = lifeState{hooks: map[string]map[string]*LifecycleHook{}, actions: map[string][]*LifecycleAction{}, warm: map[string]*warmPool{}, protected: map[string]bool{}}
	}
	return &s.lifecycle
}

func (s *Server) lifecycleCall(action string, f form) ([]*node, bool, error) {
	// These answer an empty Result element, which the SDK expects.
	empty := []*node{}
	switch action {
	case "PutLifecycleHook":
		return empty, true, s.putLifecycleHook(f, false)
	case "DescribeLifecycleHooks":
		res, err := s.describeLifecycleHooks(f)
		return res, true, err
	case "CompleteLifecycleAction", "RecordLifecycleActionHeartbeat":
		return empty, true, s.lifecycleAction(f, action == "CompleteLifecycleAction")
	case "PutWarmPool":
		return empty, true, s.putWarmPool(f)
	case "DescribeWarmPool":
		res, err := s.describeWarmPool(f)
		return res, true, err
	case "DeleteWarmPool":
		return empty, true, s.deleteWarmPool(f)
	case "SetInstanceProtection":
		return empty, true, s.setInstanceProtection(f)
	}
	return nil, false, nil
}

// putLifecycleHook answers PutLifecycleHook; a scene (short) may set a
// heartbeat below AWS's 30 s floor, so tests need not wait that long.
func (s *Server) putLifecycleHook(f form, short bool) error {
	g, err := s.groupArg(f)
	if err != nil {
		return err
	}
	name, transition := f.get("LifecycleHookName"), f.get("LifecycleTransition")
	if name == "" {
		return validation("1 validation error detected: Value null at 'lifecycleHookName' failed to satisfy constraint: Member must not be null")
	}
	hooks := s.life().hooks[g.Name]
	old := hooks[name]
	if transition == "" && old != nil {
		transition = old.Transition
	}
	if transition != TransitionLaunching && transition != TransitionTerminating {
		return validation("Invalid Lifecycle Transition %q", transition)
	}
	beat, has, err := f.int32("HeartbeatTimeout")
	if err != nil {
		return err
	}
	if !has {
		beat = defaultHeartbeat
		if old != nil {
			beat = old.HeartbeatTimeout
		}
	}
	if (beat < 30 && !short) || beat < 1 || beat > 7200 {
		return validation("Heartbeat timeout must be between 30 and 7200 seconds")
	}
	result := f.get("DefaultResult")
	if result == "" {
		result = "ABANDON"
		if old != nil {
			result = old.DefaultResult
		}
	}
	if result != "CONTINUE" && result != "ABANDON" {
		return validation("Invalid default result %q", result)
	}
	if hooks == nil {
		hooks = map[string]*LifecycleHook{}
		s.life().hooks[g.Name] = hooks
	}
	hooks[name] = &LifecycleHook{Name: name, Group: g.Name, Transition: transition, HeartbeatTimeout: beat, DefaultResult: result}
	s.notify()
	return nil
}

func (s *Server) describeLifecycleHooks(f form) ([]*node, error) {
	name := f.get("AutoScalingGroupName")
	if s.groups[name] == nil {
		return nil, validation("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	want := f.list("LifecycleHookNames.member")
	hooks := s.life().hooks[name]
	var items []*node
	for _, n := range slices.Sorted(maps.Keys(hooks)) {
		if len(want) > 0 && !slices.Contains(want, n) {
			continue
		}
		h := hooks[n]
		items = append(items, el("member",
			txt("LifecycleHookName", h.Name),
			txt("AutoScalingGroupName", h.Group),
			txt("LifecycleTransition", h.Transition),
			num("HeartbeatTimeout", h.HeartbeatTimeout),
			num("GlobalTimeout", min(100*h.HeartbeatTimeout, 172800)),
			txt("DefaultResult", h.DefaultResult),
		))
	}
	return []*node{el("LifecycleHooks", items...)}, nil
}

// lifecycleAction answers CompleteLifecycleAction (complete) and
// RecordLifecycleActionHeartbeat: the action is found by instance or
// token.
func (s *Server) lifecycleAction(f form, complete bool) error {
	group, hook := f.get("AutoScalingGroupName"), f.get("LifecycleHookName")
	id, token := f.get("InstanceId"), f.get("LifecycleActionToken")
	var act *LifecycleAction
	for inst, acts := range s.life().actions {
		for _, a := range acts {
			if a.Hook == hook && a.Result == "" && (id != "" && inst == id || token != "" && a.Token == token) && s.instances[inst].Group == group {
				act = a
			}
		}
	}
	if act == nil {
		return validation("No active Lifecycle Action found with instance ID %s", cmpOr(id, token))
	}
	if !complete {
		act.Deadline = time.Now().Add(time.Duration(s.life().hooks[group][hook].HeartbeatTimeout) * time.Second)
		s.notify()
		return nil
	}
	result := f.get("LifecycleActionResult")
	if result != "CONTINUE" && result != "ABANDON" {
		return validation("Invalid lifecycle action result %q", result)
	}
	act.Result = result
	s.releaseIfDoneLocked(act.Instance)
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// holdLocked puts an instance the group terminates in Terminating:Wait
// when the group has terminating hooks (and is not being force-deleted),
// and reports whether it did.
func (s *Server) holdLocked(in *instance) bool {
	g := s.groups[in.Group]
	if g == nil || g.deleting || len(s.life().actions[in.ID]) > 0 {
		return false
	}
	var acts []*LifecycleAction
	for _, n := range slices.Sorted(maps.Keys(s.life().hooks[g.Name])) {
		h := s.life().hooks[g.Name][n]
		if h.Transition != TransitionTerminating {
			continue
		}
		acts = append(acts, &LifecycleAction{Hook: h.Name, Instance: in.ID, Token: requestID(),
			Deadline: time.Now().Add(time.Duration(h.HeartbeatTimeout) * time.Second)})
	}
	if len(acts) == 0 {
		return false
	}
	s.life().actions[in.ID] = acts
	in.Lifecycle = LifecycleTerminatingWait
	s.logf("awsfake: %s held in %s by %d lifecycle hooks", in.ID, LifecycleTerminatingWait, len(acts))
	s.notify()
	s.wg.Add(1)
	go s.timeOutHooks(in)
	return true
}

// timeOutHooks ends, at their deadlines, the actions nobody completed,
// with their hooks' DefaultResult.
func (s *Server) timeOutHooks(in *instance) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		acts := s.life().actions[in.ID]
		if in.Lifecycle != LifecycleTerminatingWait || len(acts) == 0 {
			s.mu.Unlock()
			return
		}
		next := time.Time{}
		now := time.Now()
		for _, a := range acts {
			if a.Result != "" {
				continue
			}
			if !now.Before(a.Deadline) {
				a.Result, a.TimedOut = s.life().hooks[in.Group][a.Hook].DefaultResult, true
				continue
			}
			if next.IsZero() || a.Deadline.Before(next) {
				next = a.Deadline
			}
		}
		s.releaseIfDoneLocked(in.ID)
		changed := s.changed
		s.mu.Unlock()
		if next.IsZero() {
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-changed: // a heartbeat may have moved a deadline
		case <-time.After(time.Until(next)):
		}
	}
}

// releaseIfDoneLocked lets an instance go on to terminate once every
// hook's action on it has ended.
func (s *Server) releaseIfDoneLocked(id string) {
	acts := s.life().actions[id]
	for _, a := range acts {
		if a.Result == "" {
			return
		}
	}
	delete(s.life().actions, id)
	for _, a := range acts {
		s.life().ended = append(s.life().ended, *a)
	}
	in := s.instances[id]
	if in == nil || in.Lifecycle != LifecycleTerminatingWait {
		return
	}
	s.shutDownLocked(in, LifecycleTerminatingProceed)
}

// LifecycleActions returns the actions of terminating hooks that ended,
// in order: who held which instance, and whether it timed out.
func (s *Server) LifecycleActions() []LifecycleAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.life().ended)
}

// PutLifecycleHook adds or replaces a hook, as the API call does, but
// takes a heartbeat timeout below AWS's 30 s floor (from 1 s).
func (s *Server) PutLifecycleHook(h LifecycleHook) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := form{"AutoScalingGroupName": {h.Group}, "LifecycleHookName": {h.Name}, "LifecycleTransition": {h.Transition}}
	if h.HeartbeatTimeout != 0 {
		f["HeartbeatTimeout"] = []string{fmt.Sprint(h.HeartbeatTimeout)}
	}
	if h.DefaultResult != "" {
		f["DefaultResult"] = []string{h.DefaultResult}
	}
	return s.putLifecycleHook(f, true)
}

// isWarm reports whether an instance is in a warm pool.
func isWarm(in *instance) bool { return strings.HasPrefix(in.Lifecycle, "Warmed:") }

func (s *Server) putWarmPool(f form) error {
	g, err := s.groupArg(f)
	if err != nil {
		return err
	}
	minSize, _, err := f.int32("MinSize")
	if err != nil {
		return err
	}
	maxPrepared, has, err := f.int32("MaxGroupPreparedCapacity")
	if err != nil {
		return err
	}
	if !has {
		maxPrepared = -1
	}
	state := cmpOr(f.get("PoolState"), "Stopped")
	if state != "Stopped" && state != "Running" && state != "Hibernated" {
		return validation("Invalid pool state %q", state)
	}
	wp := s.life().warm[g.Name]
	if wp == nil {
		wp = &warmPool{}
		s.life().warm[g.Name] = wp
	}
	wp.minSize, wp.maxPrepared, wp.state = minSize, maxPrepared, state
	s.notify()
	return nil
}

func (s *Server) deleteWarmPool(f form) error {
	g, err := s.groupArg(f)
	if err != nil {
		return err
	}
	wp := s.life().warm[g.Name]
	if wp == nil {
		return validation("No warm pool found for Auto Scaling group %s", g.Name)
	}
	for _, id := range wp.members {
		s.instances[id].State, s.instances[id].Lifecycle = StateTerminated, LifecycleTerminated
	}
	delete(s.life().warm, g.Name)
	s.notify()
	return nil
}

func (s *Server) describeWarmPool(f form) ([]*node, error) {
	name := f.get("AutoScalingGroupName")
	if s.groups[name] == nil {
		return nil, validation("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	wp := s.life().warm[name]
	if wp == nil {
		return []*node{el("Instances")}, nil
	}
	cfg := el("WarmPoolConfiguration", num("MinSize", wp.minSize), txt("PoolState", wp.state))
	if wp.maxPrepared >= 0 {
		cfg.add(num("MaxGroupPreparedCapacity", wp.maxPrepared))
	}
	var items []*node
	for _, id := range wp.members {
		in := s.instances[id]
		items = append(items, el("member",
			txt("InstanceId", in.ID),
			txt("InstanceType", in.InstanceType),
			txt("AvailabilityZone", in.Zone),
			txt("LifecycleState", in.Lifecycle),
			txt("HealthStatus", "Healthy"),
			ltSpec(in.LaunchTemplateID, in.LaunchTemplateName, in.GroupVersion),
		))
	}
	return []*node{cfg, el("Instances", items...)}, nil
}

// reconcileWarmLocked keeps the group's warm pool at its size, launching
// from the group's version of the moment, as AWS does.
func (s *Server) reconcileWarmLocked(g *group) {
	wp := s.life().warm[g.Name]
	if wp == nil || g.deleting {
		return
	}
	prepared := g.Max
	if wp.maxPrepared >= 0 {
		prepared = wp.maxPrepared
	}
	want := int(max(wp.minSize, prepared-g.Desired, 0))
	for len(wp.members) < want {
		zone := g.Zones[len(wp.members)%len(g.Zones)]
		in := s.newInstanceLocked(g, zone)
		in.State, in.Lifecycle = StatePending, LifecycleWarmedPending
		close(in.launched) // never a node: nothing to wait for
		s.instances[in.ID] = in
		wp.members = append(wp.members, in.ID)
		s.wg.Add(1)
		go s.warmUp(in, wp.state)
	}
	for len(wp.members) > want {
		in := s.instances[wp.members[len(wp.members)-1]]
		in.State, in.Lifecycle = StateTerminated, LifecycleTerminated
		wp.members = wp.members[:len(wp.members)-1]
	}
}

// drawWarmLocked moves a prepared warm-pool instance of zone into the
// group, where it starts as a fresh launch does (OnLaunch makes its node),
// or returns nil when the pool has none there. Instances still warming up
// are left: AWS draws those too, but a test then could not tell a draw from
// a launch by timing alone, and the pool refills either way.
func (s *Server) drawWarmLocked(g *group, zone string) *instance {
	wp := s.life().warm[g.Name]
	if wp == nil {
		return nil
	}
	i := slices.IndexFunc(wp.members, func(id string) bool {
		in := s.instances[id]
		return in.Zone == zone && (in.Lifecycle == LifecycleWarmedStopped || in.Lifecycle == LifecycleWarmedRunning)
	})
	if i < 0 {
		return nil
	}
	in := s.instances[wp.members[i]]
	wp.members = slices.Delete(wp.members, i, i+1)
	in.State, in.Lifecycle = StatePending, LifecyclePending
	in.launched = make(chan struct{})
	s.logf("awsfake: %s drew %s (version %s) from its warm pool in %s", g.Name, in.ID, in.LaunchTemplateVersion, zone)
	s.startLocked(g, in)
	return in
}

// warmUp brings a warm instance to the pool's state after the launch
// delay.
func (s *Server) warmUp(in *instance, state string) {
	defer s.wg.Done()
	select {
	case <-s.ctx.Done():
		return
	case <-time.After(s.opts.LaunchDelay):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.Lifecycle != LifecycleWarmedPending {
		return
	}
	in.State, in.Lifecycle = StateStopped, LifecycleWarmedStopped
	if state == "Running" {
		in.State, in.Lifecycle = StateRunning, LifecycleWarmedRunning
	}
	s.logf("awsfake: warm pool of %s: %s %s", in.Group, in.ID, in.Lifecycle)
	s.notify()
}

// PutWarmPool creates or changes a group's warm pool, as the API call does;
// maxPrepared -1 leaves MaxGroupPreparedCapacity unset.
func (s *Server) PutWarmPool(group string, minSize, maxPrepared int32, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := form{"AutoScalingGroupName": {group}, "MinSize": {fmt.Sprint(minSize)}, "PoolState": {state}}
	if maxPrepared >= 0 {
		f["MaxGroupPreparedCapacity"] = []string{fmt.Sprint(maxPrepared)}
	}
	return s.putWarmPool(f)
}

// DeleteWarmPool deletes a group's warm pool and terminates its
// instances, as the API call with ForceDelete does.
func (s *Server) DeleteWarmPool(group string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleteWarmPool(form{"AutoScalingGroupName": {group}})
}

// WarmPool returns a snapshot of a group's warm-pool instances.
func (s *Server) WarmPool(group string) []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Instance
	if wp := s.life().warm[group]; wp != nil {
		for _, id := range wp.members {
			out = append(out, s.instances[id].Instance)
		}
	}
	return out
}

func (s *Server) setInstanceProtection(f form) error {
	g, err := s.groupArg(f)
	if err != nil {
		return err
	}
	ids := f.list("InstanceIds.member")
	if len(ids) > 50 {
		return &apiError{status: 400, code: "LimitExceeded", message: "You can specify up to 50 instances."}
	}
	for _, id := range ids {
		in := s.instances[id]
		if in == nil || in.Group != g.Name || in.Lifecycle == LifecycleTerminated {
			return validation("The instance %s is not part of Auto Scaling group %s.", id, g.Name)
		}
		if isWarm(in) {
			return validation("The instance %s is in a warm pool: this operation cannot be called on instances in a warm pool.", id)
		}
	}
	on := f.boolean("ProtectedFromScaleIn")
	for _, id := range ids {
		if on {
			s.life().protected[id] = true
		} else {
			delete(s.life().protected, id)
		}
	}
	s.notify()
	return nil
}

// protectedLocked reports ProtectedFromScaleIn of an instance.
func (s *Server) protectedLocked(id string) bool { return s.life().protected[id] }

// SetProtected sets ProtectedFromScaleIn of group instances, as
// SetInstanceProtection does.
func (s *Server) SetProtected(group string, on bool, ids ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := form{"AutoScalingGroupName": {group}, "ProtectedFromScaleIn": {fmt.Sprint(on)}}
	for i, id := range ids {
		f[fmt.Sprintf("InstanceIds.member.%d", i+1)] = []string{id}
	}
	return s.setInstanceProtection(f)
}
