package upgrade

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// bgRun is a blue/green run: blue is Auto Scaling group "asg" of three
// nodes of version 1 in two zones (min 1, desired 3, max 4), each running a
// pod.
type bgRun struct {
	t       *testing.T
	client  *testClient
	blue    *fakeBlueGreen
	control *fakeControl
	in      plan.BlueGreenInput
	plan    *plan.Plan
	cfg     Config
}

var (
	blueSizes = plan.Sizes{Min: 1, Desired: 3, Max: 4}
	// soakStart is the clock of the runs that record when a soak ends.
	soakStart = time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
)

func newBGRun(t *testing.T, objs ...runtime.Object) *bgRun {
	nodes := threeOldNodes()
	for _, n := range nodes {
		objs = append(objs, n, appPod("pod-"+n.Name, n.Name, "500m"))
	}
	client := newTestClient(objs...)
	r := &bgRun{t: t, client: client, blue: newFakeBlueGreen(newFakeGroup(client, blueSizes, nodes...)), control: newFakeControl(),
		// No batch soak: the watches of requests counted are the node-pool soak's.
		in: plan.BlueGreenInput{BatchNodes: 2, NodePoolSoak: time.Hour}}
	return r
}

// givenGreen is a green group someone else made: three Ready nodes of
// version 2 carrying node group "ng"'s labels.
func (r *bgRun) givenGreen(name string) {
	green := &fakeGroup{client: r.client, name: name, version: "2", sizes: blueSizes, machines: map[string]plan.Machine{}}
	for _, n := range []*corev1.Node{groupNode("green-1", "z1", "2"), groupNode("green-2", "z1", "2"), groupNode("green-3", "z2", "2")} {
		if _, err := r.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			r.t.Fatal(err)
		}
		green.addMachine(n)
	}
	r.blue.green = green
}

// keptGreen is the blue of a finished run kept at 0 nodes (--keep-blue),
// green of its rollback: the run scales it up, launching version 2.
func (r *bgRun) keptGreen(name string) {
	b := r.blue.fakeGroup
	r.blue.green = &fakeGroup{client: r.client, name: name, version: b.version, zones: b.zones, launch: b.launch, machines: map[string]plan.Machine{}, engine: b.engine}
	r.in.GreenGroup, r.in.Kept = name, true
}

// planAndConfigure plans the run as "plan" would, for the strategy.
func (r *bgRun) planAndConfigure(strategy plan.StrategyName) {
	r.planAndConfigureWith(plan.Input{Strategy: strategy})
}

// planAndConfigureWith plans the run as "plan" would, with in's flags
// (blue-green when in names no strategy).
func (r *bgRun) planAndConfigureWith(in plan.Input) {
	if in.Strategy == "" {
		in.Strategy = plan.StrategyBlueGreen
	}
	in.BlueGreen, in.Cloud = r.in, r.blue.cloudGroup()
	r.plan = buildPlan(r.t, r.client, in)
	r.cfg = cloudRun(r.plan, r.client, r.blue)
	r.cfg.Drain, r.cfg.Control = drainOpts(), r.control
}

func (r *bgRun) run(at func(plan.State)) outcome {
	groups := []*fakeGroup{r.blue.fakeGroup}
	if r.blue.green != nil {
		groups = append(groups, r.blue.green)
	}
	return runEngine(r.t, r.cfg, at, groups...)
}

// nodesOf returns the names of the cluster's nodes of a group, by their
// name's prefix, with whether each is cordoned.
func (r *bgRun) nodesOf(prefix string) map[string]bool {
	out := map[string]bool{}
	for name, n := range r.client.nodes(r.t) {
		if strings.HasPrefix(name, prefix) {
			out[name] = n.Spec.Unschedulable
		}
	}
	return out
}

func wantCordoned(t *testing.T, what string, nodes map[string]bool, want bool, count int) {
	t.Helper()
	if len(nodes) != count {
		t.Errorf("%d %s nodes, want %d: %v", len(nodes), what, count, nodes)
	}
	for name, c := range nodes {
		if c != want {
			t.Errorf("%s node %q cordoned: %v, want %v", what, name, c, want)
		}
	}
}

var (
	blueGreenStart = []string{"PrepareTarget", "CreateGreen", "CordonBlue"}
	twoBatches     = []string{"WaitForRoom 1", "Drain 1", "Recover 1", "BatchSoak 1", "WaitForRoom 2", "Drain 2", "Recover 2"}
	greenCreated   = []string{"PrepareTarget", "CheckQuota", "SetGroupSizes asg min 3, desired 3, max 3", "CreateGreen asg-v2 2 min 1, desired 3, max 4", "UseGreen asg-v2"}
)

func TestBlueGreen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// setup changes the run before it is planned; at acts at a state.
		setup      func(*bgRun)
		configure  func(*bgRun)
		at         func(*bgRun, plan.State)
		wantPhases []string
		check      func(*testing.T, *bgRun, outcome)
	}{
		{name: "green beside blue, blue drained in batches, complete ends the soak, blue deleted",
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					// A pod that landed on blue after its drain is deleted
					// with blue, not evicted.
					late := appPod("late", "old-a1", "100m")
					if _, err := r.client.CoreV1().Pods("ns").Create(context.Background(), late, metav1.CreateOptions{}); err != nil {
						r.t.Error(err)
					}
					r.control.sendWhenWatched(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantBlueDeleted(t, r, got)
				if !slices.Equal(r.client.deletedPods(), []string{"late"}) || len(r.client.evictedPods()) != 3 {
					t.Errorf("deleted %v and evicted %v: want the blue pods evicted in batches and the late one deleted", r.client.deletedPods(), r.client.evictedPods())
				}
				if r.control.clearedNow() != 1 || r.control.watches != 1 {
					t.Errorf("complete: cleared %d, watched %d times", r.control.clearedNow(), r.control.watches)
				}
				if !strings.Contains(got.out, "node pool soak ended by complete") {
					t.Errorf("output:\n%s", got.out)
				}
			}},
		{name: "complete asked before the soak ends it at once",
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.leave(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantBlueDeleted(t, r, got)
				if r.control.clearedNow() != 1 || r.control.watches != 0 {
					t.Errorf("complete: cleared %d, watched %d times", r.control.clearedNow(), r.control.watches)
				}
			}},
		{name: "the watch of requests ends during the soak and is watched again",
			setup: func(r *bgRun) { r.control.endFirstWatch = true },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.sendWhenWatched(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantBlueDeleted(t, r, got)
				if r.control.watches != 2 {
					t.Errorf("watched %d times, want 2", r.control.watches)
				}
			}},
		{name: "cancel during the soak pauses the run",
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.sendWhenWatched(state.RequestCancel)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				var paused *PausedError
				if !errors.As(got.err, &paused) || paused.Phase != plan.PhaseSoak {
					t.Fatalf("error %v, want PausedError in Soak", got.err)
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), true, 3)
				wantCordoned(t, "green", r.nodesOf("asg-v2-"), false, 3)
				if calls := r.blue.callsLike("DeleteGroup"); len(calls) != 0 {
					t.Errorf("deleted %v", calls)
				}
			}},
		// The record's phase is BatchSoak: the error says so too.
		{name: "cancel during a batch soak pauses the run in BatchSoak",
			setup: func(r *bgRun) { r.in.BatchSoak = time.Hour },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseBatchSoak {
					r.control.sendWhenWatched(state.RequestCancel)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches[:4]),
			check: func(t *testing.T, r *bgRun, got outcome) {
				var paused *PausedError
				if !errors.As(got.err, &paused) || paused.Phase != plan.PhaseBatchSoak {
					t.Errorf("error %v, want PausedError in BatchSoak", got.err)
				}
			}},
		{name: "rollback during the soak: blue serves again, green is drained and deleted",
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.sendWhenWatched(state.RequestRollback)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "Rollback", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantRolledBack(t, r, got)
			}},
		{name: "rollback asked between batches turns the run around",
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseRoom && s.Batch == 1 {
					r.control.leave(state.RequestRollback)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches[:5], []string{"Rollback", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantRolledBack(t, r, got)
			}},
		{name: "a given green group is rolled back to drained and cordoned, not deleted",
			setup: func(r *bgRun) {
				r.givenGreen("green-asg")
				r.in.GreenGroup = "green-asg"
			},
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.sendWhenWatched(state.RequestRollback)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "Rollback", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				want := []string{"PrepareTarget", "SetGroupSizes asg min 3, desired 3, max 3", "UseGreen green-asg", "SetGroupSizes asg min 1, desired 3, max 4"}
				if calls := r.blue.callsNow(); !slices.Equal(calls, want) {
					t.Errorf("calls %v, want %v", calls, want)
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
				wantCordoned(t, "green", r.nodesOf("green-"), true, 3)
				if cr := r.cfg.Record.Cloud; cr.Green != "green-asg" || cr.GreenCreated {
					t.Errorf("record %+v", cr)
				}
				if !strings.Contains(got.engine.Note(), `green "green-asg" was given, so it is left drained and cordoned`) {
					t.Errorf("note %q", got.engine.Note())
				}
			}},
		{name: "--keep-blue: blue scaled to 0 nodes and kept, not deleted",
			setup: func(r *bgRun) { r.in.KeepBlue = 10 * time.Minute },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.leave(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				if calls := r.blue.callsNow(); !slices.Equal(calls, append(slices.Clone(greenCreated), "SetGroupSizes asg min 0, desired 0, max 0")) {
					t.Errorf("calls %v", calls)
				}
				cr := r.cfg.Record.Cloud
				if until := cr.BlueKeptUntil; until == nil || until.Sub(*cr.SoakUntil) < 10*time.Minute-time.Hour || until.Sub(*cr.SoakUntil) > 10*time.Minute-time.Hour+time.Minute {
					t.Errorf("record %+v, want blue kept 10m from the soak's end, ended at once by complete", cr)
				}
				if want := `blue "asg" is kept at 0 nodes until ` + cr.BlueKeptUntil.Format(time.RFC3339) + ` (--keep-blue)`; !strings.Contains(got.engine.Note(), want) {
					t.Errorf("note %q, want %q", got.engine.Note(), want)
				}
			}},
		{name: "a kept blue as green: scaled back up, no group made, the current group deleted",
			setup: func(r *bgRun) { r.keptGreen("asg-kept") },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.leave(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				want := []string{"PrepareTarget", "SetGroupSizes asg min 3, desired 3, max 3", "SetGroupSizes asg-kept min 1, desired 3, max 4", "UseGreen asg-kept", "DeleteGroup asg"}
				if calls := r.blue.callsNow(); !slices.Equal(calls, want) {
					t.Errorf("calls %v, want %v", calls, want)
				}
				wantOnlyVersion(t, r.client, "2", 3)
			}},
		{name: "a kept blue as green, rolled back: back at 0 nodes, not deleted",
			setup: func(r *bgRun) { r.keptGreen("asg-kept") },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.sendWhenWatched(state.RequestRollback)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "Rollback", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				want := []string{"PrepareTarget", "SetGroupSizes asg min 3, desired 3, max 3", "SetGroupSizes asg-kept min 1, desired 3, max 4", "UseGreen asg-kept", "SetGroupSizes asg min 1, desired 3, max 4", "SetGroupSizes asg-kept min 0, desired 0, max 0"}
				if calls := r.blue.callsNow(); !slices.Equal(calls, want) {
					t.Errorf("calls %v, want %v", calls, want)
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
				if !strings.Contains(got.engine.Note(), `"asg-kept" is back at 0 nodes, as the finished run kept it`) {
					t.Errorf("note %q", got.engine.Note())
				}
			}},
		{name: "green given by a selector: its nodes take blue's pods, blue is deleted",
			setup: func(r *bgRun) {
				for _, n := range []*corev1.Node{testNode("theirs-1", "z1", "4"), testNode("theirs-2", "z2", "4")} {
					n.Labels["pool"] = "green"
					if _, err := r.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
						r.t.Fatal(err)
					}
				}
				r.in.GreenSelector = "pool=green"
			},
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.leave(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				if got.err != nil {
					t.Fatalf("run: %v\n%s", got.err, got.out)
				}
				want := []string{"PrepareTarget", "SetGroupSizes asg min 3, desired 3, max 3", "DeleteGroup asg"}
				if calls := r.blue.callsNow(); !slices.Equal(calls, want) {
					t.Errorf("calls %v, want %v", calls, want)
				}
				if got.engine.Note() != `node group now runs on the nodes of pool=green; Auto Scaling group "asg" was deleted` {
					t.Errorf("note %q", got.engine.Note())
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), false, 0)
				wantCordoned(t, "green", r.nodesOf("theirs-"), false, 2)
			}},
		{name: "green selected in one zone of two: NodeCreationFailure",
			setup: func(r *bgRun) {
				n := testNode("theirs-1", "z1", "4")
				n.Labels["pool"] = "green"
				if _, err := r.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
					r.t.Fatal(err)
				}
				r.in.GreenSelector = "pool=green"
			},
			configure:  func(r *bgRun) { r.cfg.NodeReadyTimeout = 200 * time.Millisecond },
			wantPhases: []string{"PrepareTarget", "CreateGreen"},
			check: func(t *testing.T, r *bgRun, got outcome) {
				var f *NodeCreationFailure
				if !errors.As(got.err, &f) || f.GroupKind != "green" || f.Group != "pool=green" || !slices.Equal(f.Zones, []string{"z2"}) {
					t.Fatalf("error %v, want a NodeCreationFailure of zone z2", got.err)
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
			}},
		{name: "green's nodes never become Ready: NodeCreationFailure, blue untouched",
			setup:      func(r *bgRun) { r.blue.launch = launchNotReady },
			configure:  func(r *bgRun) { r.cfg.NodeReadyTimeout = 200 * time.Millisecond },
			wantPhases: []string{"PrepareTarget", "CreateGreen"},
			check: func(t *testing.T, r *bgRun, got outcome) {
				f := wantNodeCreationFailure(t, got.err)
				if len(f.Instances) != 3 || f.Launched != 6 || f.Wanted != 6 {
					t.Errorf("failure %+v", f)
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
				if len(r.client.evictedPods()) != 0 {
					t.Errorf("evicted %v", r.client.evictedPods())
				}
			}},
		{name: "the account's quota has no room for green",
			setup:      func(r *bgRun) { r.blue.quotaErr = errors.New("quota of 200 Auto Scaling groups reached") },
			wantPhases: []string{"PrepareTarget", "CreateGreen"},
			check: func(t *testing.T, r *bgRun, got outcome) {
				if got.err == nil || !strings.Contains(got.err.Error(), "quota") {
					t.Errorf("error %v", got.err)
				}
				if calls := r.blue.callsNow(); !slices.Equal(calls, []string{"PrepareTarget", "CheckQuota"}) {
					t.Errorf("calls %v: nothing may change", calls)
				}
			}},
		{name: "--no-wait leaves the run soaking; a later run goes on once the soak is over",
			configure: func(r *bgRun) {
				r.cfg.NoWait = true
				r.cfg.Now = func() time.Time { return soakStart }
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				var soaking *SoakingError
				until := soakStart.Add(time.Hour)
				if !errors.As(got.err, &soaking) || !soaking.Until.Equal(until) {
					t.Fatalf("error %v, want SoakingError until %s", got.err, until)
				}
				if cr := r.cfg.Record.Cloud; cr.SoakUntil == nil || !cr.SoakUntil.Equal(until) {
					t.Errorf("record soaks until %v, want %s", cr.SoakUntil, until)
				}
				if calls := r.blue.callsLike("DeleteGroup"); len(calls) != 0 {
					t.Errorf("deleted %v while soaking", calls)
				}
				// The next run, after the soak, starts where this one
				// stopped, as resume does.
				r.cfg.Start = plan.PhaseSoak
				r.cfg.Now = func() time.Time { return until.Add(time.Minute) }
				next := r.run(nil)
				wantPhases(t, next.phases, "Soak", "DeleteBlue", "Done")
				wantBlueDeleted(t, r, next)
			}},
		{name: "killed once blue's group is gone, before the run saw it: the next run counts blue's nodes done",
			setup: func(r *bgRun) { r.blue.deletedErr = context.Canceled },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.leave(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				if !errors.Is(got.err, context.Canceled) || len(got.done) != 0 {
					t.Fatalf("error %v, done %v: want the kill before blue was counted", got.err, got.done)
				}
				r.blue.deletedErr = nil
				r.cfg.Start, r.cfg.BlueDeleted = plan.PhaseDeleteBlue, "asg"
				next := r.run(nil)
				wantPhases(t, next.phases, "DeleteBlue", "Done")
				if !slices.Equal(sorted(next.done), []string{"old-a1", "old-a2", "old-b1"}) {
					t.Errorf("the next run counts %v done, want blue's 3 nodes", next.done)
				}
			}},
		{name: "--no-wait with complete asked ends the soak",
			configure: func(r *bgRun) { r.cfg.NoWait = true },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.leave(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, twoBatches, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				wantBlueDeleted(t, r, got)
			}},
		// --batch-node-count 0 drains no batch: blue is still cordoned, so
		// nothing new lands on it, and its pods go with it.
		{name: "batch size 0: blue is cordoned, soaked and deleted with its pods",
			setup: func(r *bgRun) { r.in.BatchNodes = 0 },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					wantCordoned(r.t, "blue at the soak", r.nodesOf("old-"), true, 3)
					r.control.leave(state.RequestComplete)
				}
			},
			wantPhases: concat(blueGreenStart, []string{"Soak", "DeleteBlue", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				if got.err != nil {
					t.Fatalf("run: %v\n%s", got.err, got.out)
				}
				if want := []string{"pod-old-a1", "pod-old-a2", "pod-old-b1"}; !slices.Equal(r.client.deletedPods(), want) {
					t.Errorf("deleted %v, want blue's pods %v", r.client.deletedPods(), want)
				}
			}},
		// Rolled back, blue serves again: only green is drained.
		{name: "batch size 0 rolled back: blue is not drained",
			setup: func(r *bgRun) { r.in.BatchNodes = 0 },
			at: func(r *bgRun, s plan.State) {
				if s.Phase == plan.PhaseSoak {
					r.control.sendWhenWatched(state.RequestRollback)
				}
			},
			wantPhases: concat(blueGreenStart, []string{"Soak", "Rollback", "Done"}),
			check: func(t *testing.T, r *bgRun, got outcome) {
				if got.err != nil {
					t.Fatalf("run: %v\n%s", got.err, got.out)
				}
				wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
				if ev := r.client.evictedPods(); len(ev) != 0 {
					t.Errorf("evicted blue's pods %v", ev)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newBGRun(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			r.planAndConfigure("blue-green")
			if tc.configure != nil {
				tc.configure(r)
			}
			got := r.run(func(s plan.State) {
				if tc.at != nil {
					tc.at(r, s)
				}
			})
			wantPhases(t, got.phases, tc.wantPhases...)
			tc.check(t, r, got)
		})
	}
}

// wantBlueDeleted checks the end of a blue/green run: blue's group and
// nodes gone, green's three nodes serving, unmarked.
func wantBlueDeleted(t *testing.T, r *bgRun, got outcome) {
	t.Helper()
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	if calls := r.blue.callsNow(); !slices.Equal(calls, append(slices.Clone(greenCreated), "DeleteGroup asg")) {
		t.Errorf("calls %v", calls)
	}
	wantOnlyVersion(t, r.client, "2", 3)
	wantNoMarks(t, r.client)
	if !slices.Equal(sorted(got.done), []string{"old-a1", "old-a2", "old-b1"}) {
		t.Errorf("done %v", got.done)
	}
	cr := r.cfg.Record.Cloud
	if cr.Green != "asg-v2" || !cr.GreenCreated || cr.TargetVersion != "2" || cr.Original == nil || *cr.Original != blueSizes || cr.SoakUntil == nil {
		t.Errorf("record %+v", cr)
	}
	if got.engine.Note() != `node group now runs in Auto Scaling group "asg-v2"; "asg" was deleted` {
		t.Errorf("note %q", got.engine.Note())
	}
}

// wantRolledBack checks a rolled-back blue/green run: blue in service at
// its own sizes, the green the run created deleted.
func wantRolledBack(t *testing.T, r *bgRun, got outcome) {
	t.Helper()
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	want := append(slices.Clone(greenCreated), "SetGroupSizes asg min 1, desired 3, max 4", "DeleteGroup asg-v2")
	if calls := r.blue.callsNow(); !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
	wantCordoned(t, "green", r.nodesOf("asg-v2-"), false, 0)
	wantNoMarks(t, r.client)
	if r.control.clearedNow() != 1 {
		t.Errorf("the rollback request was cleared %d times, want once", r.control.clearedNow())
	}
	if got.engine.Note() != `rolled back: blue (Auto Scaling group "asg") serves again` {
		t.Errorf("note %q", got.engine.Note())
	}
	lines := strings.Split(strings.TrimSpace(got.out), "\n")
	if last, want := lines[len(lines)-1], " rolled back: 3 nodes of blue serve again, 3 nodes of green drained"; !strings.HasSuffix(last, want) {
		t.Errorf("final line %q, want it to end %q", last, want)
	}
}

func TestBlueGreenNeedsAProviderThatCreatesGroups(t *testing.T) {
	t.Parallel()
	r := newBGRun(t)
	r.planAndConfigure("blue-green")
	r.cfg.Provider = r.blue.fakeGroup // resizes its group, creates none
	got := runEngine(t, r.cfg, nil, r.blue.fakeGroup)
	want := `cannot run --strategy blue-green: provider "fake" cannot create node groups`
	if got.err == nil || got.err.Error() != want {
		t.Fatalf("error %v, want %q", got.err, want)
	}
	wantPhases(t, got.phases, "PrepareTarget")
}

// TestAutoscaledBlueGreen: green starts at zero and the cluster autoscaler
// grows it while blue, cordoned, may shrink; after the wait period what is
// left of blue is drained and blue deleted.
func TestAutoscaledBlueGreen(t *testing.T) {
	t.Parallel()
	r := newBGRun(t)
	r.in = plan.BlueGreenInput{WaitPeriod: time.Hour}
	r.planAndConfigure("autoscaled-blue-green")
	got := r.run(func(s plan.State) {
		if s.Phase != plan.PhaseSoak {
			return
		}
		// The autoscaler, during the wait period: green grows for blue's
		// pods, and an under-used blue node goes.
		green := r.blue.green
		green.mu.Lock()
		green.sizes.Desired = 2
		if err := green.fill(context.Background()); err != nil {
			t.Error(err)
		}
		green.mu.Unlock()
		r.blue.mu.Lock()
		r.blue.sizes.Desired--
		if err := r.blue.remove(context.Background(), "old-b1"); err != nil {
			t.Error(err)
		}
		r.blue.mu.Unlock()
		r.control.sendWhenWatched(state.RequestComplete)
	})
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	wantPhases(t, got.phases, "PrepareTarget", "CreateGreen", "CordonBlue", "Soak", "Drain 1", "Recover 1", "DeleteBlue", "Done")
	want := []string{"PrepareTarget", "CheckQuota", "SetGroupSizes asg min 0, desired 3, max 4", "CreateGreen asg-v2 2 min 0, desired 0, max 4", "UseGreen asg-v2", "DeleteGroup asg"}
	if calls := r.blue.callsNow(); !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if !strings.Contains(got.out, "wait period ended by complete") {
		t.Errorf("output:\n%s", got.out)
	}
	wantOnlyVersion(t, r.client, "2", 2)
	wantNoMarks(t, r.client)
	if ev := r.client.evictedPods(); !slices.Equal(ev, []string{"pod-old-a1", "pod-old-a2"}) {
		t.Errorf("evicted %v, want the pods of the blue nodes left", ev)
	}
	if !slices.Equal(sorted(got.done), []string{"old-a1", "old-a2"}) {
		t.Errorf("done %v", got.done)
	}
}
