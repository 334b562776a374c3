package awsfake

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// lifeFixture is a stable group ng1 of desired instances in two zones,
// and an SDK client.
func lifeFixture(t *testing.T, desired int32) (context.Context, *Server, *autoscaling.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := Start(ctx, Options{LaunchDelay: 20 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	lt := s.CreateLaunchTemplate("ng1", "ami-old", "")
	if err := s.CreateGroup(GroupSpec{Name: "ng1", Min: 0, Max: desired + 2, Desired: desired, Zones: []string{"z-a", "z-b"}, LaunchTemplateID: lt, LaunchTemplateVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitStable(ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	return ctx, s, autoscaling.NewFromConfig(sdkConfig(s))
}

func lifecycleOf(t *testing.T, ctx context.Context, asg *autoscaling.Client, id string) string {
	t.Helper()
	out, err := asg.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.AutoScalingInstances) == 0 {
		return ""
	}
	return aws.ToString(out.AutoScalingInstances[0].LifecycleState)
}

// TestTerminatingHookHolds: a terminating hook holds the instance in
// Terminating:Wait (not capacity: the group replaces it) until the action
// is completed, or its heartbeat timeout passes (a heartbeat restarts
// it); then it terminates.
func TestTerminatingHookHolds(t *testing.T) {
	for _, tc := range []struct {
		name          string
		heartbeat     int32
		complete      bool
		wantTimedOut  bool
		defaultResult string
		wantResult    string
	}{
		{name: "completed by its owner", heartbeat: 300, complete: true, defaultResult: "ABANDON", wantResult: "CONTINUE"},
		{name: "timed out: the default result", heartbeat: 30, defaultResult: "CONTINUE", wantResult: "CONTINUE", wantTimedOut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, s, asg := lifeFixture(t, 2)
			// The fake's floor is AWS's (30 s): the timeout case shortens
			// the deadline in place rather than wait it out.
			if _, err := asg.PutLifecycleHook(ctx, &autoscaling.PutLifecycleHookInput{AutoScalingGroupName: aws.String("ng1"), LifecycleHookName: aws.String("drain"),
				LifecycleTransition: aws.String(TransitionTerminating), HeartbeatTimeout: aws.Int32(tc.heartbeat), DefaultResult: aws.String(tc.defaultResult)}); err != nil {
				t.Fatal(err)
			}
			hooks, err := asg.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String("ng1")})
			if err != nil {
				t.Fatal(err)
			}
			if len(hooks.LifecycleHooks) != 1 || aws.ToInt32(hooks.LifecycleHooks[0].HeartbeatTimeout) != tc.heartbeat || aws.ToString(hooks.LifecycleHooks[0].DefaultResult) != tc.defaultResult {
				t.Fatalf("hooks %+v", hooks.LifecycleHooks)
			}
			g, _ := s.Group("ng1")
			victim := g.Instances[0].ID
			if _, err := asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(false)}); err != nil {
				t.Fatal(err)
			}
			if got := lifecycleOf(t, ctx, asg, victim); got != LifecycleTerminatingWait {
				t.Fatalf("lifecycle %q, want %q", got, LifecycleTerminatingWait)
			}
			// Held, it is no capacity: the group launches its replacement.
			if err := s.WaitFor(ctx, "ng1", func(g Group) bool {
				n := 0
				for _, in := range g.Instances {
					if in.Lifecycle == LifecycleInService {
						n++
					}
				}
				return n == 2
			}); err != nil {
				t.Fatal(err)
			}
			if got := lifecycleOf(t, ctx, asg, victim); got != LifecycleTerminatingWait {
				t.Fatalf("lifecycle %q after the replacement, want still %q", got, LifecycleTerminatingWait)
			}
			if tc.complete {
				if _, err := asg.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String("ng1"), LifecycleHookName: aws.String("drain"),
					InstanceId: aws.String(victim), LifecycleActionResult: aws.String("CONTINUE")}); err != nil {
					t.Fatal(err)
				}
			} else {
				s.mu.Lock()
				for _, a := range s.life().actions[victim] {
					a.Deadline = time.Now()
				}
				s.notify()
				s.mu.Unlock()
			}
			if err := s.WaitFor(ctx, "ng1", func(g Group) bool {
				for _, in := range g.Instances {
					if in.ID == victim {
						return false
					}
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			acts := s.LifecycleActions()
			if len(acts) != 1 || acts[0].Instance != victim || acts[0].Result != tc.wantResult || acts[0].TimedOut != tc.wantTimedOut {
				t.Errorf("actions %+v, want one on %s ended %s (timed out %v)", acts, victim, tc.wantResult, tc.wantTimedOut)
			}
			// Nothing holds it any more.
			if _, err := asg.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String("ng1"), LifecycleHookName: aws.String("drain"),
				InstanceId: aws.String(victim), LifecycleActionResult: aws.String("CONTINUE")}); err == nil || !strings.Contains(err.Error(), "No active Lifecycle Action") {
				t.Errorf("completing again: %v, want no active action", err)
			}
		})
	}
}

// TestHeartbeatExtends: RecordLifecycleActionHeartbeat moves the deadline.
func TestHeartbeatExtends(t *testing.T) {
	ctx, s, asg := lifeFixture(t, 1)
	if err := s.PutLifecycleHook(LifecycleHook{Group: "ng1", Name: "drain", Transition: TransitionTerminating, HeartbeatTimeout: 60}); err != nil {
		t.Fatal(err)
	}
	g, _ := s.Group("ng1")
	victim := g.Instances[0].ID
	if err := s.TerminateInstance(victim, false); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.life().actions[victim][0].Deadline = time.Now().Add(time.Second)
	s.mu.Unlock()
	if _, err := asg.RecordLifecycleActionHeartbeat(ctx, &autoscaling.RecordLifecycleActionHeartbeatInput{AutoScalingGroupName: aws.String("ng1"), LifecycleHookName: aws.String("drain"), InstanceId: aws.String(victim)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if got := lifecycleOf(t, ctx, asg, victim); got != LifecycleTerminatingWait {
		t.Errorf("lifecycle %q after the old deadline, want %q: the heartbeat extends it", got, LifecycleTerminatingWait)
	}
}

// TestWarmPool: warm instances are no members, never nodes, keep their
// version, and cannot be terminated or protected through the group.
func TestWarmPool(t *testing.T) {
	ctx, s, asg := lifeFixture(t, 2)
	launched := 0
	s.mu.Lock()
	for _, in := range s.instances {
		if in.ok {
			launched++
		}
	}
	s.mu.Unlock()
	if _, err := asg.PutWarmPool(ctx, &autoscaling.PutWarmPoolInput{AutoScalingGroupName: aws.String("ng1"), MinSize: aws.Int32(1), MaxGroupPreparedCapacity: aws.Int32(4)}); err != nil {
		t.Fatal(err)
	}
	var warm []Instance
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		warm = s.WarmPool("ng1")
		if len(warm) == 2 && warm[0].Lifecycle == LifecycleWarmedStopped && warm[1].Lifecycle == LifecycleWarmedStopped {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(warm) != 2 { // max(min 1, prepared 4 - desired 2)
		t.Fatalf("warm pool %+v, want 2 instances", warm)
	}
	out, err := asg.DescribeWarmPool(ctx, &autoscaling.DescribeWarmPoolInput{AutoScalingGroupName: aws.String("ng1")})
	if err != nil {
		t.Fatal(err)
	}
	if out.WarmPoolConfiguration == nil || aws.ToInt32(out.WarmPoolConfiguration.MinSize) != 1 || string(out.WarmPoolConfiguration.PoolState) != "Stopped" || len(out.Instances) != 2 {
		t.Fatalf("DescribeWarmPool = %+v", out)
	}
	ag := describeGroup(t, &fixture{asg: asg, ctx: ctx}, "ng1")
	for _, in := range ag.Instances {
		if strings.HasPrefix(string(in.LifecycleState), "Warmed:") {
			t.Errorf("group member %s is %s", aws.ToString(in.InstanceId), in.LifecycleState)
		}
	}
	if got := lifecycleOf(t, ctx, asg, warm[0].ID); got != LifecycleWarmedStopped {
		t.Errorf("DescribeAutoScalingInstances says %q, want %q", got, LifecycleWarmedStopped)
	}
	s.mu.Lock()
	for _, w := range warm {
		if s.instances[w.ID].ok {
			t.Errorf("warm %s was launched as a node", w.ID)
		}
	}
	s.mu.Unlock()
	if _, err := asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(warm[0].ID), ShouldDecrementDesiredCapacity: aws.Bool(false)}); err == nil || !strings.Contains(err.Error(), "warm pool") {
		t.Errorf("terminating a warm instance: %v, want a ValidationError", err)
	}
	if err := s.SetProtected("ng1", true, warm[0].ID); err == nil {
		t.Error("protecting a warm instance succeeded")
	}
	// A new version does not touch the pool.
	lt := ag.LaunchTemplate
	v, err := s.AddLaunchTemplateVersion(aws.ToString(lt.LaunchTemplateId), "ami-new")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asg.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String("ng1"), LaunchTemplate: &astypes.LaunchTemplateSpecification{LaunchTemplateId: lt.LaunchTemplateId, Version: aws.String(strconv.FormatInt(v, 10))}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	for _, w := range s.WarmPool("ng1") {
		if w.LaunchTemplateVersion != "1" {
			t.Errorf("warm %s has version %s, want 1: a template change does not replace the pool", w.ID, w.LaunchTemplateVersion)
		}
	}
	// A scale-out draws the prepared instance of the zone it launches in
	// (z-a, the first of the emptiest), on the version it was launched
	// from, and makes it a node.
	if err := s.SetDesired("ng1", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitStable(ctx, "ng1"); err != nil {
		t.Fatal(err)
	}
	g, _ := s.Group("ng1")
	drawn := slices.IndexFunc(g.Instances, func(in Instance) bool { return in.ID == warm[0].ID })
	if drawn < 0 || g.Instances[drawn].LaunchTemplateVersion != "1" || g.Instances[drawn].Zone != "z-a" {
		t.Fatalf("group after the scale-out %+v: want warm %s (z-a, version 1) drawn into it", g.Instances, warm[0].ID)
	}
	s.mu.Lock()
	node := s.instances[warm[0].ID].ok
	s.mu.Unlock()
	if !node {
		t.Errorf("drawn %s was not launched as a node", warm[0].ID)
	}
	if left := s.WarmPool("ng1"); len(left) != 1 || left[0].ID != warm[1].ID { // max(min 1, 4 - 3)
		t.Errorf("warm pool after the draw %+v, want only %s", left, warm[1].ID)
	}
}

// TestScaleInProtection: the group's scale-in passes over protected
// instances, and stops with only those left; an explicit termination
// takes a protected one all the same.
func TestScaleInProtection(t *testing.T) {
	ctx, s, asg := lifeFixture(t, 3)
	g, _ := s.Group("ng1")
	keep := []string{g.Instances[0].ID, g.Instances[1].ID}
	if _, err := asg.SetInstanceProtection(ctx, &autoscaling.SetInstanceProtectionInput{AutoScalingGroupName: aws.String("ng1"), InstanceIds: keep, ProtectedFromScaleIn: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	ag := describeGroup(t, &fixture{asg: asg, ctx: ctx}, "ng1")
	protected := 0
	for _, in := range ag.Instances {
		if aws.ToBool(in.ProtectedFromScaleIn) {
			protected++
		}
	}
	if protected != 2 {
		t.Fatalf("%d instances described protected, want 2", protected)
	}
	if err := s.SetDesired("ng1", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFor(ctx, "ng1", func(g Group) bool { return len(g.Instances) == 2 }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	g, _ = s.Group("ng1")
	if len(g.Instances) != 2 || g.Instances[0].ID != keep[0] || g.Instances[1].ID != keep[1] {
		t.Fatalf("instances %+v, want the protected %v only: desired 1, but none left to scale in", g.Instances, keep)
	}
	if _, err := asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(keep[0]), ShouldDecrementDesiredCapacity: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFor(ctx, "ng1", func(g Group) bool { return len(g.Instances) == 1 && g.Instances[0].ID == keep[1] && g.Desired == 0 }); err != nil {
		t.Fatal(err)
	}
}
