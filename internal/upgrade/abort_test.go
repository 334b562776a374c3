package upgrade

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// errKilled stops a run as a kill -9 would: before the step of a phase,
// with the record written up to it.
var errKilled = errors.New("killed")

// killAt is an OnProgress that keeps the record as "run" does and kills
// the run when it enters the state named like phaseName ("Remove 1").
func killAt(rec *state.Record, p *plan.Plan, at string) func(context.Context, plan.State, []string) error {
	return func(_ context.Context, s plan.State, done []string) error {
		rec.Phase, rec.Batch, rec.Done, rec.InFlight = string(s.Phase), s.Batch+1, slices.Clone(done), nil
		if plan.BatchPhase(s.Phase) && s.Batch < len(p.Batches) {
			for _, n := range p.Batches[s.Batch].Nodes {
				if !slices.Contains(done, n.Name) {
					rec.InFlight = append(rec.InFlight, n.Name)
				}
			}
		}
		if phaseName(s) == at {
			return errKilled
		}
		return nil
	}
}

// abortRun runs abort on the record, with the plan "abort" makes from the
// recorded request.
func abortRun(t *testing.T, cfg Config, groups ...*fakeGroup) (string, *Engine, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := &lockedBuffer{}
	cfg.Out, cfg.Taint, cfg.Drain = out, testTaint, drainOpts()
	cfg.PollInterval, cfg.OnProgress = 10*time.Millisecond, nil
	if cfg.NodeReadyTimeout == 0 {
		cfg.NodeReadyTimeout = 20 * time.Second
	}
	if cfg.RecoverTimeout == 0 {
		cfg.RecoverTimeout = 20 * time.Second
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		g.engine = e
	}
	err = e.Abort(ctx)
	return out.String(), e, err
}

func TestAbortEKSOnACloudGroup(t *testing.T) {
	t.Parallel()
	before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
	for _, tc := range []struct {
		name   string
		killAt string     // the state the first run is killed entering
		launch launchMode // what the scale-up's machines do
		// wantUntainted are the nodes abort takes the taint or cordon off.
		wantUntainted []string
		wantDone      int
	}{
		{name: "abort after ScaleUp", killAt: "Taint"},
		{name: "abort after Taint", killAt: "WaitForRoom 1", wantUntainted: []string{"old-a1", "old-a2", "old-b1"}},
		{name: "abort mid-batch, drained and cordoned", killAt: "Remove 1", wantUntainted: []string{"old-a1", "old-a2", "old-b1"}},
		{name: "abort mid-batch, after the first batch", killAt: "WaitForRoom 2", wantUntainted: []string{"old-b1"}, wantDone: 2},
		{name: "abort in ScaleDown", killAt: "ScaleDown", wantDone: 3},
		// The scale-up's nodes never became Ready: the run stopped with
		// NodeCreationFailure, the group raised.
		{name: "abort after a failed ScaleUp", launch: launchNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, group := cloudCluster(before, threeOldNodes()...)
			group.launch = tc.launch
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup()})
			cfg := cloudRun(p, client, group)
			cfg.Drain = drainOpts()
			rec := cfg.Record
			cfg.OnProgress = killAt(rec, p, tc.killAt)
			if tc.launch == launchNotReady {
				cfg.NodeReadyTimeout = 300 * time.Millisecond
			}
			first := runEngine(t, cfg, nil, group)
			var creation *NodeCreationFailure
			if !errors.Is(first.err, errKilled) && !errors.As(first.err, &creation) {
				t.Fatalf("first run: %v, want it killed or failed\n%s", first.err, first.out)
			}
			if len(rec.Done) != tc.wantDone {
				t.Fatalf("first run did %v, want %d nodes", rec.Done, tc.wantDone)
			}
			if s := group.sizesNow(); s == before {
				t.Fatalf("first run left the sizes at %s: nothing to restore", s)
			}

			// abort plans again from the record, as the command does.
			again := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
			acfg := cloudRun(again, client, group)
			acfg.Record = rec
			out, e, err := abortRun(t, acfg, group)
			if err != nil {
				t.Fatalf("abort: %v\n%s", err, out)
			}
			if s := group.sizesNow(); s != before {
				t.Errorf("sizes after abort %s, want %s\n%s", s, before, out)
			}
			wantNoMarks(t, client)
			if len(tc.wantUntainted) > 0 && !strings.Contains(out, ": "+quoteAll(tc.wantUntainted)+"\n") {
				t.Errorf("output does not name the nodes %v put back in service:\n%s", tc.wantUntainted, out)
			}
			// Abort does not go on with the upgrade: nothing of the plan
			// left is replaced.
			if got := group.callsLike("RemoveNode"); len(got) != tc.wantDone {
				t.Errorf("removed %v, want only the %d nodes the run did", got, tc.wantDone)
			}
			if n := e.Note(); tc.wantDone < 3 && !strings.Contains(n, `still launches launch template lt version 2`) {
				t.Errorf("note %q does not say the group still launches the target", n)
			}
			// The way back is the provider's own flag (gce's is
			// --instance-template, not aws's --launch-template-version).
			if n := e.Note(); tc.wantDone > 0 && tc.wantDone < 3 && !strings.Contains(n, "a run with --"+fakeVersionFlag+" 1 brings the upgraded nodes back") {
				t.Errorf("note %q does not name the provider's flag for the way back", n)
			}
		})
	}
}

// TestAbortUndoesTheScaleUp: abort of an in-place run that stopped
// before its first drain leaves the group as it was before the run, its
// old nodes and only them, on the old default; where every node left runs
// the target, the target is the default, whatever the look before the
// scale-down found (issue 32).
func TestAbortUndoesTheScaleUp(t *testing.T) {
	t.Parallel()
	before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
	old := []string{"old-a1", "old-a2", "old-b1"}
	for _, tc := range []struct {
		name   string
		killAt string     // the state the run is killed entering; "" a failed scale-up
		launch launchMode // what the scale-up's machines do during the run
		// joinAfter has the machines that never joined join that long
		// into abort; defaultNow is the default abort finds.
		joinAfter  time.Duration
		defaultNow string
		// abortTimeout is abort's --node-ready-timeout, if not the usual.
		abortTimeout time.Duration
		wantOnTarget bool // the nodes left run the target; else they are the old ones
		wantDefault  string
		wantNote     string
		wantErr      string
	}{
		{name: "killed with the new nodes Ready: they go, the old ones stay", killAt: "Taint",
			wantDefault: "1", wantNote: "launches launch template lt version 1 again, the default before the run, which every node of it runs"},
		// The machines of the scale-up have no node yet when abort starts:
		// removing old nodes in their place would leave only new ones
		// behind, with the group launching the old version.
		{name: "the new machines' nodes join during abort: abort waits and removes them", launch: launchNeverJoins, joinAfter: 300 * time.Millisecond,
			wantDefault: "1", wantNote: "which every node of it runs"},
		{name: "the new machines never get a node: abort stops, no old node removed", launch: launchNeverJoins, abortTimeout: 500 * time.Millisecond,
			wantDefault: "1", wantErr: `have no node after 500ms`},
		// An abort killed after it put the old default back, in a run
		// stopped in its scale-down: every node runs the target.
		{name: "every node left on the target: the target is the default again", killAt: "ScaleDown", defaultNow: "1",
			wantOnTarget: true, wantDefault: "2", wantNote: "runs launch template lt version 2, which stays the default (it was 1 before the run)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, fg := cloudCluster(before, threeOldNodes()...)
			fg.launch = tc.launch
			group := &defaultGroup{fakeGroup: fg, follows: true, def: "1"}
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: fg.cloudGroup()})
			cfg := cloudRun(p, client, group)
			cfg.Drain, cfg.NodeReadyTimeout = drainOpts(), 300*time.Millisecond
			rec := cfg.Record
			group.rec = rec
			cfg.OnProgress = killAt(rec, p, tc.killAt)
			first := runEngine(t, cfg, nil, fg)
			var creation *NodeCreationFailure
			if !errors.Is(first.err, errKilled) && !errors.As(first.err, &creation) {
				t.Fatalf("first run: %v, want it killed or failed\n%s", first.err, first.out)
			}
			if tc.defaultNow != "" {
				group.def = tc.defaultNow
			}
			fg.launch = launchReady
			if tc.joinAfter > 0 {
				time.AfterFunc(tc.joinAfter, func() { _ = fg.joinPending(context.Background()) })
			}
			again := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: fg.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
			acfg := cloudRun(again, client, group)
			acfg.Record, acfg.NodeReadyTimeout = rec, tc.abortTimeout
			out, e, err := abortRun(t, acfg, fg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("abort: %v\n%s", err, out)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("abort: %v, want an error with %q\n%s", err, tc.wantErr, out)
			case tc.wantErr == "":
				if s := fg.sizesNow(); s != before {
					t.Errorf("sizes after abort %s, want %s\n%s", s, before, out)
				}
				if n := e.Note(); !strings.Contains(n, tc.wantNote) {
					t.Errorf("note %q, want it to say %q", n, tc.wantNote)
				}
			}
			left := fg.machineNodes()
			if !tc.wantOnTarget && !slices.Equal(left, old) || tc.wantOnTarget && (len(left) != 3 || slices.ContainsFunc(left, func(n string) bool { return slices.Contains(old, n) })) {
				t.Errorf("the group's machines after abort: %v, want the old ones %v (or, on the target, three new ones: %v)\n%s", left, old, tc.wantOnTarget, out)
			}
			for _, c := range fg.callsLike("Shrink") {
				if slices.Contains(old, strings.TrimPrefix(c, "Shrink ")) {
					t.Errorf("abort removed old node: %s\n%s", c, out)
				}
			}
			if group.def != tc.wantDefault {
				t.Errorf("default %s, want %s", group.def, tc.wantDefault)
			}
		})
	}
}

func TestAbortBlueGreen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		killAt string
		// green is a group given with --green-asg rather than made.
		green string
	}{
		{name: "abort in Soak", killAt: "Soak"},
		{name: "abort after CordonBlue", killAt: "WaitForRoom 1"},
		{name: "abort in a batch soak", killAt: "BatchSoak 1"},
		{name: "abort in Soak, green given", killAt: "Soak", green: "given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newBGRun(t)
			if tc.green != "" {
				r.givenGreen(tc.green)
				r.in.GreenGroup = tc.green
			}
			r.planAndConfigure("blue-green")
			rec := r.cfg.Record
			r.cfg.OnProgress = killAt(rec, r.plan, tc.killAt)
			if first := r.run(nil); !errors.Is(first.err, errKilled) {
				t.Fatalf("first run: %v\n%s", first.err, first.out)
			}
			again := buildPlan(t, r.client, plan.Input{Strategy: "blue-green", BlueGreen: r.in, Cloud: r.blue.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
			acfg := cloudRun(again, r.client, r.blue)
			acfg.Record = rec
			r.blue.UseGreen(rec.Cloud.Green)
			groups := []*fakeGroup{r.blue.fakeGroup}
			if r.blue.green != nil {
				groups = append(groups, r.blue.green)
			}
			out, e, err := abortRun(t, acfg, groups...)
			if err != nil {
				t.Fatalf("abort: %v\n%s", err, out)
			}
			wantCordoned(t, "blue", r.nodesOf("old-"), false, 3)
			if s := r.blue.sizesNow(); s != blueSizes {
				t.Errorf("blue sizes %s, want %s", s, blueSizes)
			}
			wantNoMarks(t, r.client)
			if tc.green == "" {
				// Made by the run: drained and deleted, like rollback.
				if got := r.blue.callsLike("DeleteGroup"); !slices.Equal(got, []string{"DeleteGroup asg-v2"}) {
					t.Errorf("deleted %v, want the green the run made", got)
				}
				return
			}
			if got := r.blue.callsLike("DeleteGroup"); len(got) != 0 {
				t.Errorf("deleted %v: a given green is left as it is", got)
			}
			wantCordoned(t, "green", r.nodesOf("green-"), false, 3)
			if !strings.Contains(e.Note(), `green "given" was given`) {
				t.Errorf("note %q does not name the green left", e.Note())
			}
		})
	}
}

// A first run killed before it recorded anything (or whose record is
// gone): abort finds the run's marks by the taint alone.
func TestAbortWithNoRecord(t *testing.T) {
	t.Parallel()
	annotated := func(n *corev1.Node) { n.Annotations = map[string]string{ScaleDownDisabledAnnotation: "true"} }
	client := newTestClient(
		imageNode("old-1", "z1", "old", tainted), imageNode("old-2", "z2", "old", tainted, cordoned),
		imageNode("new-1", "z1", "new", annotated),
		// Cordoned by someone else, without the run's taint: left alone.
		imageNode("theirs", "z2", "old", cordoned),
		appPod("web-1", "old-1", "1"),
	)
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy)}
	rec := &state.Record{}
	out, _, err := abortRun(t, Config{Client: client, Plan: p, Provider: &cloud.None{Client: client}, Record: rec})
	if err != nil {
		t.Fatalf("abort: %v\n%s", err, out)
	}
	for name, n := range client.nodes(t) {
		if slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == testTaint.Key }) {
			t.Errorf("node %q left tainted", name)
		}
		if n.Spec.Unschedulable != (name == "theirs") {
			t.Errorf("node %q cordoned: %v", name, n.Spec.Unschedulable)
		}
		if _, ok := n.Annotations[ScaleDownDisabledAnnotation]; ok {
			t.Errorf("node %q left with %s", name, ScaleDownDisabledAnnotation)
		}
	}
	if len(client.podNames(t)) != 1 {
		t.Errorf("pods %v: abort evicts nothing without a scale-down", client.podNames(t))
	}
	if !strings.Contains(out, `untainted and uncordoned 2 nodes: "old-1", "old-2"`) {
		t.Errorf("output:\n%s", out)
	}
}

// Blue being deleted cannot be undone: abort refuses and changes nothing.
func TestAbortRefusedWhileBlueIsDeleted(t *testing.T) {
	t.Parallel()
	client := newTestClient(imageNode("old-1", "z1", "old", tainted))
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: "blue-green"}
	out, _, err := abortRun(t, Config{Client: client, Plan: p, Provider: &cloud.None{Client: client}, Record: &state.Record{Phase: string(plan.PhaseDeleteBlue)}})
	if err == nil || !strings.Contains(err.Error(), "cannot abort") {
		t.Fatalf("abort: %v, want it refused\n%s", err, out)
	}
	if n := client.nodes(t)["old-1"]; len(n.Spec.Taints) != 1 {
		t.Errorf("taints %v changed", n.Spec.Taints)
	}
}

// TestAbortWaitsForTheWorkloadsTheRunDisturbed: the record lists "slow" as
// evicted and not Ready again; abort says the group is back in service
// only once it is, within the recovery timeout, so a run right after is
// not refused for a workload still recovering (issue 32).
func TestAbortWaitsForTheWorkloadsTheRunDisturbed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		back    bool
		wantErr string
	}{
		{name: "back after a while", back: true},
		{name: "never back", wantErr: `workloads the run evicted pods of are not Ready again within 500ms (the run's --drain-timeout): Deployment "ns/slow" has 1/2 available`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := newTestClient(imageNode("old-1", "z1", "old", tainted),
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "slow", Generation: 1},
					Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
					Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, AvailableReplicas: 1}},
				&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "slow-1", Generation: 1,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "slow", Controller: ptr.To(true)}}},
					Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}})
			var cameBack atomic.Bool
			if tc.back {
				time.AfterFunc(300*time.Millisecond, func() {
					obj, err := client.Tracker().Get(deploymentsResource, "ns", "slow")
					if err == nil {
						d := obj.(*appsv1.Deployment).DeepCopy()
						d.Status.AvailableReplicas = 2
						cameBack.Store(true)
						err = client.Tracker().Update(deploymentsResource, d, "ns")
					}
					if err != nil {
						t.Error(err)
					}
				})
			}
			p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy)}
			rec := &state.Record{Phase: string(plan.PhaseDrain), Recovering: []state.Workload{{Kind: "ReplicaSet", Namespace: "ns", Name: "slow-1"}}}
			cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client}, Record: rec, RecoverTimeout: 500 * time.Millisecond}
			if tc.back {
				cfg.RecoverTimeout = 20 * time.Second
			}
			out, _, err := abortRun(t, cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("abort: %v, want %q\n%s", err, tc.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("abort: %v\n%s", err, out)
			}
			if !cameBack.Load() {
				t.Errorf("abort ended before the workload was Ready again:\n%s", out)
			}
			if len(rec.Recovering) != 0 {
				t.Errorf("the record still lists recovering workloads: %v", rec.Recovering)
			}
		})
	}
}

// managedFake is a service's group whose update abort reads: Configure
// records the settings set.
type managedFake struct {
	cloud.None
	state cloud.UpdateState
	set   []plan.UpdateSettings
}

func (m *managedFake) GroupName() string { return "pool" }
func (m *managedFake) Settings(context.Context) (plan.UpdateSettings, error) {
	return plan.UpdateSettings{}, nil
}
func (m *managedFake) Configure(_ context.Context, s plan.UpdateSettings) error {
	m.set = append(m.set, s)
	return nil
}
func (m *managedFake) StartUpdate(context.Context, bool) (string, error) { return "op-1", nil }
func (m *managedFake) Progress(_ context.Context, id string) (cloud.UpdateProgress, error) {
	return cloud.UpdateProgress{ID: id, State: m.state}, nil
}

// TestAbortPutsTheServiceSettingsBack: abort puts the update settings from
// before the run back once the service's update is not running (not
// started, or ended); while it runs they stay, and abort says so.
func TestAbortPutsTheServiceSettingsBack(t *testing.T) {
	t.Parallel()
	before := plan.UpdateSettings{Strategy: "SURGE", MaxUnavailable: "1"}
	for _, tc := range []struct {
		name, id string
		state    cloud.UpdateState
		restored bool
	}{
		{"update not started", "", cloud.UpdateInProgress, true},
		{"update cancelled", "op-1", cloud.UpdateCancelled, true},
		{"update succeeded", "op-1", cloud.UpdateSucceeded, true},
		{"update running", "op-1", cloud.UpdateInProgress, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newTestClient(imageNode("old-1", "z1", "old"))
			svc := &managedFake{None: cloud.None{Client: client}, state: tc.state}
			p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy), Managed: &plan.ManagedPlan{Service: "GKE node pool", Before: before}}
			rec := &state.Record{Phase: string(plan.PhaseUpdate), Managed: &state.ManagedRecord{Group: "pool", Before: before, Configured: true, UpdateID: tc.id}}
			out, e, err := abortRun(t, Config{Client: client, Plan: p, Provider: svc, Record: rec})
			if err != nil {
				t.Fatalf("abort: %v\n%s", err, out)
			}
			restored := len(svc.set) == 1 && svc.set[0].Equal(before) && !rec.Managed.Configured
			if restored != tc.restored {
				t.Errorf("settings set %v, record configured %v; want restored %v\n%s", svc.set, rec.Managed.Configured, tc.restored, out)
			}
			if !tc.restored && !strings.Contains(e.Note(), "still runs") {
				t.Errorf("note %q must say the update still runs", e.Note())
			}
		})
	}
}
