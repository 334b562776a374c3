package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// cloudCluster is node group "ng": the given nodes, each running a pod of
// 500m, in Auto Scaling group "asg" at the given sizes.
func cloudCluster(sizes plan.Sizes, nodes ...*corev1.Node) (*testClient, *fakeGroup) {
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n, appPod("pod-"+n.Name, n.Name, "500m"))
	}
	client := newTestClient(objs...)
	return client, newFakeGroup(client, sizes, nodes...)
}

// threeOldNodes are three nodes of version 1 in two zones.
func threeOldNodes() []*corev1.Node {
	return []*corev1.Node{groupNode("old-a1", "z1", "1"), groupNode("old-a2", "z1", "1"), groupNode("old-b1", "z2", "1")}
}

func wantPhases(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("phases\n  %s\nwant\n  %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

// batchPhases are the phases of the shared batch loop for batches 1..n.
func batchPhases(n int, phases ...plan.Phase) []string {
	var out []string
	for b := 1; b <= n; b++ {
		for _, p := range phases {
			out = append(out, fmt.Sprintf("%s %d", p, b))
		}
	}
	return out
}

var eksBatch = []plan.Phase{plan.PhaseRoom, plan.PhaseDrain, plan.PhaseCordon, plan.PhaseRemove, plan.PhaseRecover}

func concat(parts ...[]string) []string { return slices.Concat(parts...) }

// wantNoMarks fails for a node the run left cordoned, tainted or
// protected from the autoscaler.
func wantNoMarks(t *testing.T, client *testClient) {
	t.Helper()
	for name, n := range client.nodes(t) {
		if n.Spec.Unschedulable {
			t.Errorf("node %q left cordoned", name)
		}
		if slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == testTaint.Key }) {
			t.Errorf("node %q left tainted", name)
		}
		if _, ok := n.Annotations[ScaleDownDisabledAnnotation]; ok {
			t.Errorf("node %q left with %s", name, ScaleDownDisabledAnnotation)
		}
	}
}

// wantOnlyVersion fails unless every node left runs version.
func wantOnlyVersion(t *testing.T, client *testClient, version string, count int) {
	t.Helper()
	nodes := client.nodes(t)
	for name, n := range nodes {
		if v := n.Labels[versionLabel]; v != version {
			t.Errorf("node %q runs version %q, want %q", name, v, version)
		}
	}
	if len(nodes) != count {
		t.Errorf("%d nodes left, want %d", len(nodes), count)
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// wantDeferredRemoved checks that a rollback deferred every node on the
// version it rolls back beyond the recorded sizes to the scale-down, which
// removed them untainted and unreplaced.
func wantDeferredRemoved(t *testing.T, client *testClient, p *plan.Plan, rollbackFrom string) {
	t.Helper()
	if rollbackFrom == "" {
		if len(p.Deferred) != 0 {
			t.Errorf("deferred %v, want none", p.DeferredNames())
		}
		return
	}
	if surplus := int(p.Cloud.During.Desired - p.Cloud.Before.Desired); len(p.Deferred) != surplus || p.Nodes.Deferred != surplus {
		t.Errorf("deferred %v (counted %d), want the %d nodes above the recorded sizes", p.DeferredNames(), p.Nodes.Deferred, surplus)
	}
	for _, n := range p.DeferredNames() {
		if ev := sorted(client.eventsOf(t, "Node", n)); !slices.Equal(ev, []string{"NodeUpgradeDrained", "NodeUpgradeRemoved"}) {
			t.Errorf("events of deferred node %q: %v, want it drained once and removed, never tainted", n, ev)
		}
	}
}

func TestEKSOnACloudGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// the group's nodes, and the sizes and record the run starts from
		nodes  []*corev1.Node
		sizes  plan.Sizes
		record *state.CloudRecord
		// recorded are the sizes an interrupted run recorded, as the
		// planner is given them.
		recorded *plan.Sizes
		// rescaleFrom is the version the planner found the recorded
		// scale-up made for, when its nodes are outdated too.
		rescaleFrom string
		// rollbackFrom is the version the planner found the recorded
		// scale-up made for, when the run rolls that version back.
		rollbackFrom  string
		wantBatches   int
		wantRaise     []string
		wantRemoved   int
		wantShrunk    int
		wantScaledFor string
		wantLog       string
	}{
		{name: "scaled up, tainted, drained in batches, replaced, scaled back down",
			nodes: threeOldNodes(), sizes: plan.Sizes{Min: 1, Desired: 3, Max: 4},
			wantRaise: []string{"SetDesiredAndMax 7 8"}, wantBatches: 2, wantRemoved: 3, wantShrunk: 4, wantScaledFor: "2",
			wantLog: `scaling Auto Scaling group "asg" up by 4: desired 3 -> 7, max 4 -> 8`},
		// A rollback of a run from version 2 towards 3: that run scaled the
		// group up for 3, whose nodes are outdated now; the recorded sizes
		// have no room for them, so the scale-down removes them, each
		// drained once, rather than a batch replacing them first. Nothing
		// new is awaited and the group is not raised again.
		{name: "rollback finds the group scaled up for the version it undoes",
			nodes: []*corev1.Node{groupNode("v2-a", "z1", "2"), groupNode("v2-b", "z1", "2"), groupNode("v2-c", "z2", "2"),
				groupNode("v3-a", "z1", "3"), groupNode("v3-b", "z2", "3")},
			sizes:    plan.Sizes{Min: 1, Desired: 5, Max: 6},
			recorded: &plan.Sizes{Min: 1, Desired: 3, Max: 4}, rollbackFrom: "3",
			record:      &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "fake", Group: "asg", TargetVersion: "3", FromVersion: "2", Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{ScaleUp: 2, LastDesired: 5, ScaledFor: "3"}},
			wantBatches: 0, wantRemoved: 0, wantShrunk: 2, wantScaledFor: "3",
			wantLog: `"asg" was scaled up for version 3 by an earlier run; the scale-down removes 2 outdated nodes without replacing them`},
		// The same, killed after its first batch: v3-c replaced v2-c. Only
		// v3-c is replaced; the scale-down removes the two surplus nodes:
		// three drains, where replacing all three and then scaling down
		// drained five.
		{name: "rollback after a batch replaces the upgraded nodes and leaves the surplus to the scale-down",
			nodes: []*corev1.Node{groupNode("v2-a", "z1", "2"), groupNode("v2-b", "z1", "2"), groupNode("v3-c", "z2", "3"),
				groupNode("v3-x", "z1", "3"), groupNode("v3-y", "z2", "3")},
			sizes:    plan.Sizes{Min: 1, Desired: 5, Max: 6},
			recorded: &plan.Sizes{Min: 1, Desired: 3, Max: 4}, rollbackFrom: "3",
			record:      &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "fake", Group: "asg", TargetVersion: "3", FromVersion: "2", Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{ScaleUp: 2, LastDesired: 5, ScaledFor: "3"}},
			wantBatches: 1, wantRemoved: 1, wantShrunk: 2, wantScaledFor: "3",
			wantLog: `the scale-down removes 2 outdated nodes without replacing them`},
		// The interrupted run aimed at version 1 (what the group already
		// launched): its two extra nodes are outdated for version 2 as
		// much as the others, so this run needs a scale-up of its own.
		{name: "a re-run for another target scales up again",
			nodes: []*corev1.Node{groupNode("a", "z1", "1"), groupNode("b", "z1", "1"), groupNode("c", "z2", "1"),
				groupNode("extra-a", "z1", "1"), groupNode("extra-b", "z2", "1")},
			sizes:    plan.Sizes{Min: 1, Desired: 5, Max: 6},
			recorded: &plan.Sizes{Min: 1, Desired: 3, Max: 4}, rescaleFrom: "1",
			record:    &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "fake", Group: "asg", TargetVersion: "1", FromVersion: "1", Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{ScaleUp: 2, LastDesired: 5, ScaledFor: "1"}},
			wantRaise: []string{"SetDesiredAndMax 9 10"}, wantBatches: 3, wantRemoved: 5, wantShrunk: 6, wantScaledFor: "2",
			wantLog: `"asg" was scaled up for version 1 by an interrupted run; its nodes are outdated too: scaling up again for version 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, group := cloudCluster(tc.sizes, tc.nodes...)
			resume := plan.Resume{Recorded: tc.recorded, RescaleFrom: tc.rescaleFrom, RollbackFrom: tc.rollbackFrom}
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup(), Resume: resume})
			if len(p.Batches) != tc.wantBatches {
				t.Fatalf("plan has %d batches, want %d", len(p.Batches), tc.wantBatches)
			}
			cfg := cloudRun(p, client, group)
			cfg.Drain = drainOpts()
			cfg.Record.Cloud = tc.record
			var saves int
			cfg.Save = func(context.Context) error { saves++; return nil }
			got := runEngine(t, cfg, nil, group)
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			wantPhases(t, got.phases, concat([]string{"Setup", "ScaleUp", "Taint"}, batchPhases(tc.wantBatches, eksBatch...), []string{"ScaleDown", "Done"})...)
			if s := group.sizesNow(); s != tc.sizes && tc.recorded == nil || tc.recorded != nil && s != *tc.recorded {
				t.Errorf("sizes at the end %s, want those before the run", s)
			}
			if got := group.callsLike("SetDesiredAndMax"); !slices.Equal(got, tc.wantRaise) {
				t.Errorf("raised %v, want %v", got, tc.wantRaise)
			}
			if got := group.callsLike("RemoveNode"); len(got) != tc.wantRemoved {
				t.Errorf("removed %v, want %d nodes", got, tc.wantRemoved)
			}
			if got := group.callsLike("Shrink"); len(got) != tc.wantShrunk {
				t.Errorf("shrunk %v, want %d nodes", got, tc.wantShrunk)
			}
			if calls := group.callsNow(); calls[0] != "Setup" || calls[len(calls)-1] != "SetMax 4" {
				t.Errorf("calls %v: want Setup first and max restored last", calls)
			}
			wantOnlyVersion(t, client, "2", 3)
			wantNoMarks(t, client)
			for _, pod := range client.podNames(t) {
				if slices.Contains(p.OutdatedNames(), strings.TrimPrefix(pod, "pod-")) {
					t.Errorf("pod %q of an outdated node left", pod)
				}
			}
			if want := sorted(p.OutdatedNames()); !slices.Equal(sorted(got.done), want) {
				t.Errorf("done %v, want %v", got.done, want)
			}
			cr := cfg.Record.Cloud
			if cr.TargetVersion != "2" || cr.ScaledFor != tc.wantScaledFor || cr.LastDesired != cr.Original.Desired || cr.Shrinking != "" || cr.Provider != "fake" || cr.Group != "asg" {
				t.Errorf("record %+v", cr)
			}
			if tc.record == nil && (cr.FromVersion != "1" || *cr.Original != tc.sizes || cr.ScaleUp != 4) {
				t.Errorf("record %+v: want the version and sizes before the run and the scale-up", cr)
			}
			if saves == 0 {
				t.Error("the record was never saved")
			}
			if !strings.Contains(got.out, tc.wantLog) {
				t.Errorf("output lacks %q:\n%s", tc.wantLog, got.out)
			}
			for _, n := range p.OutdatedNames() {
				if ev := sorted(client.eventsOf(t, "Node", n)); !slices.Equal(ev, []string{"NodeUpgradeCordoned", "NodeUpgradeDrained", "NodeUpgradeDraining", "NodeUpgradeRemoved", "NodeUpgradeTainted"}) {
					t.Errorf("events of node %q: %v", n, ev)
				}
			}
			wantDeferredRemoved(t, client, p, tc.rollbackFrom)
			// Each node leaves drained once: by a batch or the scale-down.
			if drains := client.eventCount(t, "NodeUpgradeDrained"); drains != tc.wantRemoved+tc.wantShrunk {
				t.Errorf("%d drains, want %d", drains, tc.wantRemoved+tc.wantShrunk)
			}
		})
	}
}

func TestEKSWithProviderNone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		deleteNode bool
	}{
		{name: "drained nodes are deleted", deleteNode: true},
		{name: "drained nodes are left cordoned and labelled done", deleteNode: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newTestClient(
				imageNode("old-1", "z1", "old"), imageNode("old-2", "z2", "old"), imageNode("old-3", "z1", "old"),
				imageNode("new-1", "z1", "new"),
				// Left tainted and cordoned by a run towards another
				// target: it serves again.
				imageNode("released", "z2", "new", tainted, cordoned),
				// Cordoned by someone else: not the run's business.
				imageNode("theirs", "z2", "new", cordoned),
				appPod("web-1", "old-1", "1"), appPod("web-2", "old-2", "1"), appPod("web-3", "old-3", "1"),
				appPod("stays", "new-1", "1"),
			)
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: tc.deleteNode}, Drain: drainOpts(), Events: NewRecorder(client, nil), Record: &state.Record{}}
			got := runEngine(t, cfg, nil)
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			wantPhases(t, got.phases, concat([]string{"Taint"}, batchPhases(2, eksBatch...), []string{"Done"})...)
			nodes := client.nodes(t)
			for _, name := range []string{"old-1", "old-2", "old-3"} {
				n, ok := nodes[name]
				switch {
				case tc.deleteNode && ok:
					t.Errorf("node %q not deleted", name)
				case !tc.deleteNode && (!ok || !n.Spec.Unschedulable || n.Labels[plan.StateLabel] != plan.StateDone):
					t.Errorf("node %q: want it cordoned and labelled %s=%s, got %+v", name, plan.StateLabel, plan.StateDone, n.ObjectMeta.Labels)
				}
			}
			if n := nodes["released"]; n.Spec.Unschedulable || len(n.Spec.Taints) != 0 {
				t.Errorf("current node %q still held off: %+v", n.Name, n.Spec)
			}
			if n := nodes["theirs"]; !n.Spec.Unschedulable {
				t.Errorf("node %q cordoned by someone else was uncordoned", n.Name)
			}
			if n := nodes["new-1"]; n.Spec.Unschedulable || len(n.Spec.Taints) != 0 {
				t.Errorf("current node %q touched: %+v", n.Name, n.Spec)
			}
			if pods := client.podNames(t); !slices.Equal(pods, []string{"stays"}) {
				t.Errorf("pods left %v, want only the current node's", pods)
			}
			if !slices.Equal(sorted(got.done), []string{"old-1", "old-2", "old-3"}) {
				t.Errorf("done %v", got.done)
			}
			if cfg.Record.Cloud != nil {
				t.Errorf("provider none wrote a cloud record: %+v", cfg.Record.Cloud)
			}
		})
	}
}

func TestShortLivedOnlyPointsTheGroupAtTheTarget(t *testing.T) {
	t.Parallel()
	client, group := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
	p := buildPlan(t, client, plan.Input{Strategy: "short-lived", Cloud: group.cloudGroup()})
	cfg := cloudRun(p, client, group)
	got := runEngine(t, cfg, nil, group)
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	wantPhases(t, got.phases, "Setup", "Done")
	if calls := group.callsNow(); !slices.Equal(calls, []string{"Setup"}) {
		t.Errorf("calls %v, want only Setup", calls)
	}
	if cr := cfg.Record.Cloud; cr == nil || cr.TargetVersion != "2" || cr.FromVersion != "1" || cr.Original != nil {
		t.Errorf("record %+v: want the versions and no sizes", cr)
	}
	if !strings.Contains(got.out, `Auto Scaling group "asg" launches launch template lt version 2`) {
		t.Errorf("output:\n%s", got.out)
	}
	wantNoMarks(t, client)
	if pods := client.podNames(t); len(pods) != 3 {
		t.Errorf("pods %v: nothing is drained", pods)
	}
}

// TestRunStops covers the ways a run ends early with an error, and what
// it leaves behind.
func TestRunStops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// setup changes the run before it starts.
		setup func(*stopRun)
		// at acts at a state.
		at         func(*stopRun, plan.State)
		wantLast   string // the last phase entered
		check      func(*testing.T, *stopRun, error)
		wantTaints int // outdated nodes left tainted
	}{
		{name: "new machines never join: NodeCreationFailure after --node-ready-timeout",
			setup:    func(r *stopRun) { r.group.launch = launchNeverJoins },
			wantLast: "ScaleUp",
			check: func(t *testing.T, r *stopRun, err error) {
				f := wantNodeCreationFailure(t, err)
				if f.Launched != 7 || f.Wanted != 7 || len(f.Instances) != 4 || !slices.Equal(f.Zones, []string{"z1", "z2"}) ||
					!strings.Contains(f.Instances[0], "pending, no node has joined") || f.Original != (plan.Sizes{Min: 1, Desired: 3, Max: 4}) {
					t.Errorf("failure %+v", f)
				}
				if cr := r.cfg.Record.Cloud; cr.Original == nil || cr.LastDesired != 7 {
					t.Errorf("record %+v: want the sizes to restore", cr)
				}
			}},
		{name: "new nodes join and stay NotReady",
			setup:    func(r *stopRun) { r.group.launch = launchNotReady },
			wantLast: "ScaleUp",
			check: func(t *testing.T, r *stopRun, err error) {
				f := wantNodeCreationFailure(t, err)
				if len(f.Instances) != 4 || !strings.Contains(f.Instances[0], "not Ready") || len(f.Zones) != 2 {
					t.Errorf("failure %+v", f)
				}
			}},
		{name: "the group launches nothing",
			setup:    func(r *stopRun) { r.group.launch = launchNothing },
			wantLast: "ScaleUp",
			check: func(t *testing.T, r *stopRun, err error) {
				f := wantNodeCreationFailure(t, err)
				if f.Launched != 3 || f.Wanted != 7 || !strings.Contains(err.Error(), "3 of 7 instances launched") {
					t.Errorf("failure %+v: %v", f, err)
				}
			}},
		// The wait's progress calls them Ready, and says why they do not
		// count (--ignore-check unreachable-target's case).
		{name: "new nodes join labelled with the old version",
			setup:    func(r *stopRun) { r.group.launch, r.cfg.Live = launchWrongVersion, true },
			wantLast: "ScaleUp",
			check: func(t *testing.T, r *stopRun, err error) {
				wantNodeCreationFailure(t, err)
				if !strings.Contains(err.Error(), "label "+versionLabel+"=1, want 2") {
					t.Errorf("error %v", err)
				}
				if want := "4/4 new nodes Ready, 4 of them not usable (node "; !strings.Contains(r.out, want) || strings.Contains(r.out, "0/4 new nodes Ready") {
					t.Errorf("progress does not say %q:\n%s", want, r.out)
				}
			}},
		// Ready nodes of another version do not count, and the failure
		// names each with what it runs. The group runs all it wants, so
		// the wait ends at once rather than at its timeout.
		{name: "new machines run the old version",
			setup:    func(r *stopRun) { r.group.launch = launchOldVersion },
			wantLast: "ScaleUp",
			check: func(t *testing.T, r *stopRun, err error) {
				f := wantNodeCreationFailure(t, err)
				if !f.Settled || len(f.Others) != 4 || !strings.Contains(f.Others[0], "Ready, but launched from launch template lt version 1, not lt version 2") || len(f.Instances) != 0 ||
					!strings.Contains(err.Error(), "instances of another version, not counted: ") {
					t.Errorf("failure %+v: %v", f, err)
				}
			}},
		{name: "the group cannot be pointed at the target",
			setup:    func(r *stopRun) { r.group.setupErr = errors.New("launch template version 2 not found") },
			wantLast: "Setup",
			check: func(t *testing.T, r *stopRun, err error) {
				if err == nil || !strings.Contains(err.Error(), "not found") {
					t.Errorf("error %v", err)
				}
				if calls := r.group.callsNow(); !slices.Equal(calls, []string{"Setup"}) {
					t.Errorf("calls %v", calls)
				}
			}},
		// The record is written before the group changes: if it cannot
		// be, nothing changes.
		{name: "the record cannot be saved before the group changes",
			setup: func(r *stopRun) {
				r.cfg.Save = func(context.Context) error { return errors.New("configmaps is forbidden") }
			},
			wantLast: "Setup",
			check: func(t *testing.T, r *stopRun, err error) {
				if err == nil || !strings.Contains(err.Error(), "forbidden") {
					t.Errorf("error %v", err)
				}
				if calls := r.group.callsNow(); len(calls) != 0 {
					t.Errorf("the group was changed: %v", calls)
				}
			}},
		{name: "cancel between batches pauses the run",
			at: func(r *stopRun, s plan.State) {
				if s.Phase == plan.PhaseRoom && s.Batch == 1 {
					r.control.leave(state.RequestCancel)
				}
			},
			wantLast: "WaitForRoom 2", wantTaints: 1,
			check: func(t *testing.T, r *stopRun, err error) {
				var paused *PausedError
				if !errors.As(err, &paused) || paused.Phase != plan.PhaseRoom {
					t.Fatalf("error %v, want PausedError in %s", err, plan.PhaseRoom)
				}
				if err.Error() != "paused by cancel in phase "+string(plan.PhaseRoom) {
					t.Errorf("error %q", err)
				}
				// The first batch is replaced; the second is untouched.
				if removed := r.group.callsLike("RemoveNode"); len(removed) != len(r.plan.Batches[0].Nodes) {
					t.Errorf("removed %v, want the first batch", removed)
				}
				if pods := r.client.podNames(t); len(pods) != len(r.plan.Batches[1].Nodes) {
					t.Errorf("pods left %v, want the second batch's", pods)
				}
			}},
		// eks is rolled back once stopped, by a run towards the old
		// version: a live run does not take the request.
		{name: "rollback asked of a run rolled back in place is left for later",
			at: func(r *stopRun, s plan.State) {
				if s.Phase == plan.PhaseTaint {
					r.control.leave(state.RequestRollback)
				}
			},
			wantLast: "Done",
			check: func(t *testing.T, r *stopRun, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if pending, _ := r.control.Pending(context.Background()); r.control.clearedNow() != 0 || pending != state.RequestRollback {
					t.Errorf("the request was taken: cleared %d, pending %q", r.control.clearedNow(), pending)
				}
			}},
		{name: "a pod no controller recreates stops the drain",
			setup: func(r *stopRun) {
				pod := testPod("bare", r.plan.Batches[0].Nodes[0].Name, "100m", func(p *corev1.Pod) { p.UID = "uid-bare" })
				if _, err := r.client.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
					r.t.Fatal(err)
				}
			},
			wantLast: "Drain 1", wantTaints: 3,
			check: func(t *testing.T, r *stopRun, err error) {
				var failure *drain.PodEvictionFailure
				if !errors.As(err, &failure) {
					t.Fatalf("error %v, want a PodEvictionFailure", err)
				}
				if ev := r.client.eventsOf(t, "Node", failure.Node); !slices.Contains(ev, "PodEvictionFailure") {
					t.Errorf("events of node %q: %v", failure.Node, ev)
				}
				if removed := r.group.callsLike("RemoveNode"); len(removed) != 0 {
					t.Errorf("removed %v", removed)
				}
			}},
		{name: "a PodDisruptionBudget blocks an eviction until the drain timeout",
			setup: func(r *stopRun) {
				r.cfg.Drain.Timeout = 300 * time.Millisecond
				r.client.refuseEviction("pod-"+r.plan.Batches[0].Nodes[0].Name, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0))
			},
			wantLast: "Drain 1", wantTaints: 3,
			check: func(t *testing.T, r *stopRun, err error) {
				var failure *drain.PodEvictionFailure
				if !errors.As(err, &failure) {
					t.Fatalf("error %v, want a PodEvictionFailure", err)
				}
				pod := "pod-" + r.plan.Batches[0].Nodes[0].Name
				if ev := r.client.eventsOf(t, "Pod", pod); !slices.Contains(ev, "EvictionBlocked") {
					t.Errorf("events of pod %q: %v", pod, ev)
				}
				if !strings.Contains(r.out, fmt.Sprintf("eviction of pod %q blocked", "ns/"+pod)) {
					t.Errorf("output:\n%s", r.out)
				}
			}},
		// --undrainable cordon: the held node stays cordoned, tainted
		// and labelled, its machine kept; the others are replaced.
		{name: "a PodDisruptionBudget holds a node past the drain timeout: quarantined, the others replaced",
			setup:    holdFirstNode(0),
			wantLast: "Done",
			check: func(t *testing.T, r *stopRun, err error) {
				held := wantQuarantined(t, r, err, false)
				if removed := r.group.callsLike("RemoveNode"); len(removed) != 2 {
					t.Errorf("removed %v, want the two other nodes", removed)
				}
				// Neither a batch nor the scale-down took its machine.
				if calls := r.group.callsNow(); slices.ContainsFunc(calls, func(c string) bool { return strings.Contains(c, held) }) {
					t.Errorf("calls %v name the quarantined node %q", calls, held)
				}
			}},
		// Its owner's label: skipped without a drain, whatever --undrainable.
		{name: "a node labelled hold=true is skipped without draining and quarantined",
			setup: func(r *stopRun) {
				node := r.plan.Batches[0].Nodes[0].Name
				patch := []byte(`{"metadata":{"labels":{"nodeupgrade.dev/hold":"true"}}}`)
				if _, err := r.client.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
					r.t.Fatal(err)
				}
			},
			wantLast: "Done",
			check: func(t *testing.T, r *stopRun, err error) {
				node := r.plan.Batches[0].Nodes[0].Name
				var q *QuarantinedError
				if !errors.As(err, &q) || len(q.Nodes) != 1 || q.Nodes[0].Node != node || !q.Nodes[0].Hold ||
					!strings.Contains(err.Error(), "labelled nodeupgrade.dev/hold=true by its owner") {
					t.Fatalf("error %v, want node %q quarantined on its owner's hold", err, node)
				}
				if pods := r.client.podNames(t); !slices.Contains(pods, "pod-"+node) {
					t.Errorf("pods %v: the held node was drained", pods)
				}
				if calls := r.group.callsNow(); slices.ContainsFunc(calls, func(c string) bool { return strings.Contains(c, node) }) {
					t.Errorf("calls %v name the held node %q", calls, node)
				}
				n, _ := r.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
				if n == nil || n.Labels[UpgradeStatusLabel] != StatusQuarantined || !n.Spec.Unschedulable {
					t.Errorf("node %+v: want it labelled quarantined and cordoned", n)
				}
			}},
		{name: "--max-blocked-nodes 1 stops the run at the first quarantined node",
			setup:    holdFirstNode(1),
			wantLast: "Drain 1", wantTaints: 3,
			check: func(t *testing.T, r *stopRun, err error) {
				wantQuarantined(t, r, err, true)
				if removed := r.group.callsLike("RemoveNode"); len(removed) != 0 {
					t.Errorf("removed %v", removed)
				}
			}},
		// Nothing was drained: the run gives the group back (its taints
		// off), keeping only the recorded scale-up a re-run finishes.
		{name: "no room for the first batch: the taints come off again",
			setup: func(r *stopRun) {
				huge := appPod("huge", r.plan.Batches[0].Nodes[0].Name, "5")
				if _, err := r.client.CoreV1().Pods("ns").Create(context.Background(), huge, metav1.CreateOptions{}); err != nil {
					r.t.Fatal(err)
				}
			},
			wantLast: "WaitForRoom 1", wantTaints: 0,
			check: func(t *testing.T, r *stopRun, err error) {
				if err == nil || !strings.Contains(err.Error(), "not enough room for batch 1") {
					t.Fatalf("error %v, want no room", err)
				}
				if !strings.Contains(r.out, "3 outdated nodes are schedulable again") {
					t.Errorf("output:\n%s", r.out)
				}
				if len(r.client.evictedPods()) != 0 {
					t.Errorf("evicted %v", r.client.evictedPods())
				}
			}},
		{name: "a run stops when its progress cannot be recorded",
			setup: func(r *stopRun) {
				r.cfg.OnProgress = func(_ context.Context, s plan.State, _ []string) error {
					if s.Phase == plan.PhaseTaint {
						return errors.New("cannot record the progress: configmaps is forbidden")
					}
					return nil
				}
			},
			wantLast: "Taint",
			check: func(t *testing.T, r *stopRun, err error) {
				if err == nil || !strings.Contains(err.Error(), "cannot record") {
					t.Errorf("error %v", err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, group := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
			r := &stopRun{t: t, client: client, group: group, control: newFakeControl()}
			r.plan = buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup()})
			r.cfg = cloudRun(r.plan, client, group)
			r.cfg.Drain, r.cfg.Control = drainOpts(), r.control
			r.cfg.NodeReadyTimeout = 200 * time.Millisecond
			if tc.setup != nil {
				tc.setup(r)
			}
			got := r.run(func(s plan.State) {
				if tc.at != nil {
					tc.at(r, s)
				}
			})
			if last := got.phases[len(got.phases)-1]; last != tc.wantLast {
				t.Errorf("stopped in %q, want %q (phases %v)", last, tc.wantLast, got.phases)
			}
			tc.check(t, r, got.err)
			if tc.wantLast == "Done" {
				return
			}
			taints := 0
			for _, n := range client.nodes(t) {
				if slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == testTaint.Key }) {
					taints++
				}
			}
			if taints != tc.wantTaints {
				t.Errorf("%d nodes left tainted, want %d", taints, tc.wantTaints)
			}
		})
	}
}

// holdFirstNode runs with --undrainable cordon and --max-blocked-nodes
// max, and a PodDisruptionBudget refusing the eviction of the first
// node's pod.
func holdFirstNode(max int) func(*stopRun) {
	return func(r *stopRun) {
		r.cfg.Undrainable, r.cfg.MaxBlockedNodes = UndrainableCordon, max
		r.cfg.Drain.Timeout = 300 * time.Millisecond
		r.client.refuseEviction("pod-"+r.plan.Batches[0].Nodes[0].Name, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0))
	}
}

// wantQuarantined checks err names the first node quarantined with its
// pod, that the record holds it, and that the node is left cordoned,
// tainted and labelled; it returns the node.
func wantQuarantined(t *testing.T, r *stopRun, err error, stopped bool) string {
	t.Helper()
	node := r.plan.Batches[0].Nodes[0].Name
	var q *QuarantinedError
	if !errors.As(err, &q) || q.Stopped != stopped || len(q.Nodes) != 1 || q.Nodes[0].Node != node {
		t.Fatalf("error %v, want node %q quarantined (stopped %v)", err, node, stopped)
	}
	if want := fmt.Sprintf("node %q (pod %q", node, "ns/pod-"+node); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if got := r.cfg.Record.Quarantined; len(got) != 1 || got[0].Node != node || got[0].Held[0].Pod != "ns/pod-"+node {
		t.Errorf("record's quarantined %+v", got)
	}
	n, gerr := r.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if n.Labels[UpgradeStatusLabel] != StatusQuarantined || !n.Spec.Unschedulable ||
		!slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == testTaint.Key }) {
		t.Errorf("node %q: labels %v, unschedulable %v, taints %v", node, n.Labels, n.Spec.Unschedulable, n.Spec.Taints)
	}
	return node
}

// stopRun is one case of TestRunStops.
type stopRun struct {
	t       *testing.T
	client  *testClient
	group   *fakeGroup
	control *fakeControl
	plan    *plan.Plan
	cfg     Config
	out     string
}

func (r *stopRun) run(at func(plan.State)) outcome {
	got := runEngine(r.t, r.cfg, at, r.group)
	r.out = got.out
	return got
}

func wantNodeCreationFailure(t *testing.T, err error) *NodeCreationFailure {
	t.Helper()
	var f *NodeCreationFailure
	if !errors.As(err, &f) {
		t.Fatalf("error %v, want a NodeCreationFailure", err)
	}
	if f.Group != "asg" || f.GroupKind != "Auto Scaling group" || f.Timeout != 200*time.Millisecond {
		t.Errorf("failure %+v", f)
	}
	// A group that launches no more is not helped by a longer wait.
	advice := map[bool]string{false: "--node-ready-timeout", true: "launches no more"}[f.Settled]
	if !strings.Contains(err.Error(), "nothing was drained") || !strings.Contains(err.Error(), advice) {
		t.Errorf("error %q, want it to say %q", err, advice)
	}
	return f
}

// TestWaitForRoom holds a batch until its pods fit on the nodes that stay
// schedulable: here the only current node is full.
func TestWaitForRoom(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// autoscaler runs a cluster autoscaler's pod; capacity arrives
		// once the batch waits for room.
		autoscaler, capacity bool
		wantErr              string
	}{
		{name: "nothing can add a node: the run stops at once", wantErr: `not enough room for batch 1: pods "ns/big" (requests cpu 3) fit on no schedulable node, and nothing will add a node (no machine of the group is on its way, no cluster autoscaler or Karpenter runs); add capacity or lower --max-unavailable, then run again, or put the group back in service with "kubectl nodeupgrade abort"`},
		{name: "no room until --node-ready-timeout", autoscaler: true, wantErr: `not enough room for batch 1 after 300ms: pods "ns/big" (requests cpu 3) fit on no schedulable node; add capacity or lower --max-unavailable, then run again, or put the group back in service with "kubectl nodeupgrade abort"`},
		{name: "room appears while the batch waits", autoscaler: true, capacity: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			objs := []runtime.Object{imageNode("old", "z1", "old"), imageNode("full", "z1", "new"), appPod("big", "old", "3"), appPod("busy", "full", "2")}
			if tc.autoscaler {
				ca := testPod("cluster-autoscaler-7d9f", "", "0", func(p *corev1.Pod) { p.Namespace = "kube-system" })
				objs = append(objs, ca)
			}
			client := newTestClient(objs...)
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			out := &lockedBuffer{}
			cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: true}, Drain: drainOpts(), Record: &state.Record{}, Out: out}
			if !tc.capacity {
				cfg.NodeReadyTimeout = 300 * time.Millisecond
			}
			got := runEngine(t, cfg, func(s plan.State) {
				if s.Phase != plan.PhaseRoom || !tc.capacity {
					return
				}
				// The cluster autoscaler adds a node once the run waits.
				go func() {
					for !strings.Contains(out.String(), "waiting up to") {
						time.Sleep(time.Millisecond)
					}
					if _, err := client.CoreV1().Nodes().Create(context.Background(), imageNode("added", "z1", "new"), metav1.CreateOptions{}); err != nil {
						t.Error(err)
					}
				}()
			})
			if tc.wantErr != "" {
				if got.err == nil || got.err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", got.err, tc.wantErr)
				}
				if pods := slices.DeleteFunc(client.podNames(t), func(p string) bool { return strings.HasPrefix(p, "cluster-autoscaler") }); !slices.Equal(pods, []string{"big", "busy"}) {
					t.Errorf("pods %v: nothing may be evicted", pods)
				}
				return
			}
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			wantPhases(t, got.phases, concat([]string{"Taint"}, batchPhases(1, eksBatch...), []string{"Done"})...)
			if !slices.Equal(client.evictedPods(), []string{"big"}) {
				t.Errorf("evicted %v", client.evictedPods())
			}
		})
	}
}
