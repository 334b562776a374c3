package awsfake

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
)

// TestAZRebalance leaves a group unbalanced by two terminations that lower
// the desired size in one zone: AZRebalance, where it runs, launches in
// the emptied zone and then terminates an instance in the fullest one.
func TestAZRebalance(t *testing.T) {
	for _, tc := range []struct {
		name string
		// model is Options.AZRebalance; suspend suspends the process
		// through the API before the terminations, resume resumes it
		// after them.
		model, suspend, resume bool
		wantRounds             int
	}{
		{name: "unbalanced group is rebalanced", model: true, wantRounds: 1},
		{name: "suspended: left unbalanced", model: true, suspend: true},
		{name: "resumed: rebalanced then", model: true, suspend: true, resume: true, wantRounds: 1},
		{name: "not modelled by default", model: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Start(ctx, Options{LaunchDelay: 20 * time.Millisecond, Logf: t.Logf, AZRebalance: tc.model})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			lt := s.CreateLaunchTemplate("ng1", "ami-old", "")
			if err := s.CreateGroup(GroupSpec{Name: "ng1", Min: 1, Max: 4, Desired: 4, Zones: []string{"z-a", "z-b"}, LaunchTemplateID: lt, LaunchTemplateVersion: "1"}); err != nil {
				t.Fatal(err)
			}
			if err := s.WaitStable(ctx, "ng1"); err != nil {
				t.Fatal(err)
			}
			asg := autoscaling.NewFromConfig(sdkConfig(s))
			if tc.suspend {
				if _, err := asg.SuspendProcesses(ctx, &autoscaling.SuspendProcessesInput{AutoScalingGroupName: aws.String("ng1"), ScalingProcesses: []string{AZRebalance}}); err != nil {
					t.Fatal(err)
				}
				ag := describeGroup(t, &fixture{asg: asg, ctx: ctx}, "ng1")
				if len(ag.SuspendedProcesses) != 1 || aws.ToString(ag.SuspendedProcesses[0].ProcessName) != AZRebalance {
					t.Fatalf("suspended processes %+v, want AZRebalance", ag.SuspendedProcesses)
				}
			}
			g, _ := s.Group("ng1")
			var inA []string
			for _, in := range g.Instances {
				if in.Zone == "z-a" {
					inA = append(inA, in.ID)
				}
			}
			for _, id := range inA {
				if _, err := asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(id), ShouldDecrementDesiredCapacity: aws.Bool(true)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.WaitFor(ctx, "ng1", func(g Group) bool { return Stable(g) && g.Desired == 2 }); err != nil {
				t.Fatal(err)
			}
			if tc.resume {
				if _, err := asg.ResumeProcesses(ctx, &autoscaling.ResumeProcessesInput{AutoScalingGroupName: aws.String("ng1"), ScalingProcesses: []string{AZRebalance}}); err != nil {
					t.Fatal(err)
				}
			}
			want := map[string]int{"z-b": 2}
			if tc.wantRounds > 0 {
				want = map[string]int{"z-a": 1, "z-b": 1}
				if err := s.WaitFor(ctx, "ng1", func(g Group) bool { return Stable(g) && zoneCounts(g)["z-a"] == 1 }); err != nil {
					t.Fatal(err)
				}
			} else {
				time.Sleep(300 * time.Millisecond) // long enough for a launch of 20ms and its termination
			}
			g, _ = s.Group("ng1")
			if got := zoneCounts(g); !maps.Equal(got, want) {
				t.Errorf("zones %v, want %v", got, want)
			}
			rounds := s.Rebalances()
			if len(rounds) != tc.wantRounds {
				t.Fatalf("rebalances %+v, want %d", rounds, tc.wantRounds)
			}
			for _, r := range rounds {
				launched, _ := s.Instance(r.Launched)
				gone, _ := s.Instance(r.Terminated)
				if launched.Zone != "z-a" || gone.Zone != "z-b" || slices.Contains(inA, gone.ID) {
					t.Errorf("rebalance launched in %s and terminated %s in %s; want a launch in z-a, a termination in z-b", launched.Zone, gone.ID, gone.Zone)
				}
			}
			if got := s.Suspended("ng1"); tc.suspend && !tc.resume != slices.Contains(got, AZRebalance) {
				t.Errorf("suspended %v", got)
			}
		})
	}
}

func TestSuspendProcessesValidates(t *testing.T) {
	f := start(t, 1)
	_, err := f.asg.SuspendProcesses(f.ctx, &autoscaling.SuspendProcessesInput{AutoScalingGroupName: aws.String("ng1"), ScalingProcesses: []string{"AZRebalancing"}})
	wantAPIError(t, err, "ValidationError", "AZRebalancing")
	_, err = f.asg.ResumeProcesses(f.ctx, &autoscaling.ResumeProcessesInput{AutoScalingGroupName: aws.String("nope")})
	wantAPIError(t, err, "ValidationError", "nope")
	// No process named: all of them.
	if _, err := f.asg.SuspendProcesses(f.ctx, &autoscaling.SuspendProcessesInput{AutoScalingGroupName: aws.String("ng1")}); err != nil {
		t.Fatal(err)
	}
	if got := f.s.Suspended("ng1"); len(got) != len(scalingProcesses) {
		t.Errorf("suspended %v, want every process", got)
	}
}
