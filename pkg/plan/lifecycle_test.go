package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

func TestLifecycleNotes(t *testing.T) {
	base := func() *CloudGroup {
		return &CloudGroup{GroupID: GroupID{
			Group:        "ng1",
			GroupKind:    "Auto Scaling group",
			MachineKind:  "instance",
			Template:     "lt-1",
			TemplateKind: "launch template",
		}, Launches: Launches{TargetVersion: "3"}}
	}
	for _, tc := range []struct {
		name     string
		change   func(cg *CloudGroup)
		outdated map[string]bool
		timeout  time.Duration
		want     []string
		notWant  []string
	}{
		{name: "nothing of the kind", change: func(*CloudGroup) {}, notWant: []string{"hook", "warm", "protected"}},
		{name: "a hook within the timeout", timeout: 15 * time.Minute,
			change: func(cg *CloudGroup) {
				cg.LeaveHooks = []LeaveHook{{Name: "drain", Timeout: Duration(300 * time.Second)}}
			},
			want:    []string{`holds every instance it terminates for lifecycle hooks "drain" (heartbeat 300 s): the run waits for each removed instance to be gone, up to --terminate-timeout (15m), and never completes another system's hook`},
			notWant: []string{"may hold longer"}},
		{name: "a hook longer than the timeout", timeout: 15 * time.Minute,
			change: func(cg *CloudGroup) { cg.LeaveHooks = []LeaveHook{{Name: "drain", Timeout: Duration(time.Hour)}} },
			want:   []string{"a hook may hold longer (1h) than that: raise --terminate-timeout"}},
		{name: "a warm pool on the target version",
			change: func(cg *CloudGroup) {
				cg.Reserve = &Reserve{Kind: "warm pool", State: "Stopped", MinSize: 1, Machines: []Machine{{ID: "i-9", Template: "lt-1", Version: "3"}}}
			},
			want:    []string{`Auto Scaling group "ng1" has a warm pool of 1 instances (Stopped, min size 1): they are not nodes, so the run neither counts, awaits nor terminates them`},
			notWant: []string{"old image"}},
		{name: "a warm pool on the old version",
			change: func(cg *CloudGroup) {
				cg.Reserve = &Reserve{Kind: "warm pool", State: "Running", Machines: []Machine{{ID: "i-8", Template: "lt-1", Version: "2"}, {ID: "i-9", Template: "lt-1", Version: "3"}}}
			},
			want: []string{"1 of them were launched from another launch template version and join later, on the old image"}},
		{name: "a warm pool, the target a new version",
			change: func(cg *CloudGroup) {
				cg.TargetVersion = NewVersion
				cg.Reserve = &Reserve{Kind: "warm pool", Machines: []Machine{{ID: "i-9", Template: "lt-1", Version: "3"}}}
			},
			want: []string{"1 of them were launched from another launch template version"}},
		{name: "protected, outdated and not", outdated: map[string]bool{"i-1": true},
			change:  func(cg *CloudGroup) { cg.Protected = []string{"i-1", "i-2"} },
			want:    []string{"outdated instances i-1 of Auto Scaling group \"ng1\" are protected from scale-in: the run terminates each explicitly, which the protection does not prevent"},
			notWant: []string{"i-2"}},
		{name: "protected, none outdated", outdated: map[string]bool{"i-3": true},
			change: func(cg *CloudGroup) { cg.Protected = []string{"i-1"} }, notWant: []string{"protected"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := base()
			tc.change(cg)
			got := strings.Join(cg.LifecycleNotes(tc.timeout, tc.outdated), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("notes:\n%s\nwant %q", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("notes:\n%s\nwant no %q", got, w)
				}
			}
		})
	}
}

func TestLeaveHooksLine(t *testing.T) {
	if got := leaveHooksLine(&CloudPlan{}); got != "" {
		t.Errorf("no hooks: %q", got)
	}
	c := &CloudPlan{Removal: Removal{LeaveHooks: []LeaveHook{{Name: "a", Timeout: Duration(time.Hour)}, {Name: "b", Timeout: Duration(30 * time.Second)}}}}
	if got, want := leaveHooksLine(c), `held by lifecycle hooks "a" (heartbeat 3600 s), "b" (heartbeat 30 s); the run waits, never completes them`; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// A run that scales the group out while its warm pool holds instances of
// another version is blocked: they would join on the old image.
func TestOutdatedWarmPool(t *testing.T) {
	pool := func(versions ...string) *Reserve {
		r := &Reserve{Kind: "warm pool", State: "Stopped"}
		for i, v := range versions {
			r.Machines = append(r.Machines, Machine{ID: fmt.Sprintf("i-%d", i), Template: "lt-1", Version: v})
		}
		return r
	}
	for _, tc := range []struct {
		name        string
		reserve     *Reserve
		target      string
		scaleUp     int32
		surge       int32
		wantBlocker string
	}{
		{name: "no pool", scaleUp: 6, target: "3"},
		{name: "pool on the target", reserve: pool("3", "3"), scaleUp: 6, target: "3"},
		{name: "old pool, eks scale-up", reserve: pool("2", "3"), scaleUp: 6, target: "3",
			wantBlocker: `the warm pool of Auto Scaling group "ng1" holds 1 instances launched from another launch template version (i-0): the scale-up of 6 takes them first and they join on the old image, so the run would stop there (NodeCreationFailure: the group launches no more)`},
		{name: "pool, a new version to make", reserve: pool("2", "2", "2", "2"), scaleUp: 2, target: NewVersion,
			wantBlocker: `holds 4 instances launched from another launch template version (i-0, i-1, i-2, and 1 more): the scale-up of 2`},
		{name: "old pool, surge", reserve: pool("2"), surge: 1, target: "3", wantBlocker: "the scale-up of 1 takes them first"},
		{name: "old pool, nothing launches (blue/green)", reserve: pool("2"), target: "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := &CloudGroup{GroupID: GroupID{
				Group:        "ng1",
				GroupKind:    "Auto Scaling group",
				MachineKind:  "instance",
				Template:     "lt-1",
				TemplateKind: "launch template",
			}, Launches: Launches{TargetVersion: tc.target}, Removal: Removal{Reserve: tc.reserve}}
			p := &Plan{Cloud: &CloudPlan{ScaleUp: tc.scaleUp, Before: Sizes{Desired: 3}, During: Sizes{Desired: 3 + tc.scaleUp + tc.surge}}}
			got := outdatedWarmPool(cg, p, "ng1")
			if tc.wantBlocker == "" {
				if len(got) != 0 {
					t.Fatalf("want no finding, got %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Check != check.CheckOutdatedWarmPool || got[0].Severity != check.Blocker || !strings.Contains(got[0].Message, tc.wantBlocker) {
				t.Fatalf("want one %s blocker saying %q, got %+v", check.CheckOutdatedWarmPool, tc.wantBlocker, got)
			}
		})
	}
}
