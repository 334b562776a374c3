package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// joined is n created at t and Ready after took.
func joined(n corev1.Node, t time.Time, took time.Duration) corev1.Node {
	n.CreationTimestamp = metav1.NewTime(t)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t.Add(took))}}
	return n
}

// TestBuildTakesTheGroupsPace: the estimates take the pace the command
// measured, else the group's nodes' creation to Ready, else the defaults;
// and the phases' assumptions say which.
func TestBuildTakesTheGroupsPace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	timed := func() snapshot.Cluster {
		s := groupSnapshot()
		for i, took := range []time.Duration{4, 9, 5, 5, 300, 6, 4, 5, 5} {
			s.Nodes[i] = joined(s.Nodes[i], t0, took*time.Second)
		}
		return s
	}
	tests := []struct {
		name    string
		snap    snapshot.Cluster
		given   *Pace
		join    time.Duration
		drain   time.Duration
		assumes string
	}{
		{name: "nothing measured: the defaults", snap: groupSnapshot(), join: NodeLaunchEstimate, drain: DrainEstimate,
			assumes: "a new node Ready in 3m, a drain in 1m, post-drain wait 10s"},
		{name: "the nodes' median, rounded up a second", snap: timed(), join: 6 * time.Second, drain: DrainEstimate,
			assumes: "nodes Ready in 6s (from the creation to Ready of the group's 9 nodes), a drain in 1m, post-drain wait 10s"},
		{name: "the command's measure first, the nodes' for what it lacks", snap: timed(),
			given: &Pace{Drain: Duration(3 * time.Second), DrainFrom: "the last run on this group, 4 batches"},
			join:  6 * time.Second, drain: 3 * time.Second,
			assumes: "nodes Ready in 6s (from the creation to Ready of the group's 9 nodes), a drain in 3s (from the last run on this group, 4 batches), post-drain wait 10s"},
		{name: "the command's join over the nodes'", snap: timed(),
			given: &Pace{Join: Duration(14 * time.Second), JoinFrom: "the last run on this group"},
			join:  14 * time.Second, drain: DrainEstimate,
			assumes: "nodes Ready in 14s (from the last run on this group), a drain in 1m, post-drain wait 10s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.PostDrainWait = 10 * time.Second
			in.Pace = tc.given
			p, err := Build(tc.snap, in)
			if err != nil {
				t.Fatal(err)
			}
			if p.JoinTime() != tc.join || p.DrainTime() != tc.drain {
				t.Errorf("join %s, drain %s; want %s, %s", p.JoinTime(), p.DrainTime(), tc.join, tc.drain)
			}
			if got := p.EstimateAssumptions(); got != tc.assumes {
				t.Errorf("assumes %q\nwant    %q", got, tc.assumes)
			}
			// provider none: one Upgrade step of the batches, each a
			// drain and the post-drain wait.
			want := time.Duration(len(p.Batches)) * (tc.drain + 10*time.Second)
			if got := p.BatchEstimate(); got != want {
				t.Errorf("the batches' estimate %s, want %s", got, want)
			}
		})
	}
}

// TestEKSScaleUpTakesTheJoinTime: the scale-up waits one join.
func TestEKSScaleUpTakesTheJoinTime(t *testing.T) {
	p := &Plan{Cloud: &CloudPlan{ScaleUp: 2, Before: Sizes{Desired: 3, Max: 3}, During: Sizes{Desired: 5, Max: 5}}, Pace: &Pace{Join: Duration(12 * time.Second), JoinFrom: "x"}}
	for _, st := range (eks{}).Steps(p) {
		if st.Phase == "ScaleUp" && time.Duration(st.Estimate) != 12*time.Second {
			t.Errorf("ScaleUp estimated %s, want 12s", time.Duration(st.Estimate))
		}
	}
}

// TestScaleDownEstimate: the scale-down removes its nodes one at a time,
// each waiting the post-drain wait; only as many drains as there are pods
// the batches moved (or deferred nodes) to hold, one round each, and no
// join: a batch's time per node made the scale-down of 6 mostly empty
// nodes 54s planned for 31s run.
func TestScaleDownEstimate(t *testing.T) {
	batch := func(pods ...int) Batch {
		var b Batch
		for _, n := range pods {
			b.Nodes = append(b.Nodes, PlannedNode{Pods: make([]string, n)})
		}
		return b
	}
	for _, tc := range []struct {
		name     string
		batches  []Batch
		deferred []PlannedNode
		want     time.Duration
	}{
		{"6 nodes, 3 pods moved: 3 drains", []Batch{batch(1, 1), batch(1)}, nil, 6*5*time.Second + 3*2*time.Second},
		{"6 nodes, 10 pods moved: a drain each", []Batch{batch(4, 4), batch(2)}, nil, 6*5*time.Second + 6*2*time.Second},
		{"no pods: the waits alone", []Batch{batch(0, 0)}, nil, 6 * 5 * time.Second},
		{"deferred nodes drain", nil, []PlannedNode{{}, {Pods: []string{"a"}}}, 6*5*time.Second + 2*2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{MaxUnavailable: 2, DrainRounds: 2, PostDrainWait: Duration(5 * time.Second), Batches: tc.batches, Deferred: tc.deferred,
				Pace:  &Pace{Join: Duration(2 * time.Second), JoinFrom: "x", Drain: Duration(2 * time.Second), DrainFrom: "y"},
				Cloud: &CloudPlan{ScaleUp: 6, Before: Sizes{Desired: 3, Max: 4}, During: Sizes{Desired: 9, Max: 10}}}
			for _, st := range (eks{}).Steps(p) {
				if st.Phase == "ScaleDown" && time.Duration(st.Estimate) != tc.want {
					t.Errorf("ScaleDown estimated %s, want %s", time.Duration(st.Estimate), tc.want)
				}
			}
		})
	}
}

// TestRemovalAwaitingReplacement: where a removal returns once the
// group launched the replacement (Karpenter), each node of a batch adds
// a join to the batch's estimate, the cloud's launch pace preferred to
// the nodes' creation to Ready.
func TestRemovalAwaitingReplacement(t *testing.T) {
	pace := &Pace{Join: Duration(4 * time.Second), JoinFrom: "the cloud", Drain: Duration(7 * time.Second), DrainFrom: "x"}
	for _, tc := range []struct {
		name   string
		awaits bool
		want   time.Duration
	}{
		{"removal alone", false, 7*time.Second + 5*time.Second},
		{"removal awaiting the replacement", true, 7*time.Second + 5*time.Second + 3*4*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{MaxUnavailable: 3, PostDrainWait: Duration(5 * time.Second), Pace: pace, Cloud: &CloudPlan{Removal: Removal{AwaitsReplacement: tc.awaits}}}
			if got := perBatchEstimate(p); got != tc.want {
				t.Errorf("per batch %s, want %s", got, tc.want)
			}
		})
	}
	launch := Pace{Join: Duration(9 * time.Second), JoinFrom: "the pool's NodeClaims"}
	if got := measuredPace(nil, &CloudGroup{Removal: Removal{LaunchPace: launch}}, nil); got == nil || *got != launch {
		t.Errorf("measured %+v, want the cloud's launch pace %+v", got, launch)
	}
}

// TestPodStartPace: the median of the Ready pods' binding (else
// creation) to Ready, a second more; none Ready, none measured.
func TestPodStartPace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// pod was bound bound after its creation and Ready took after that.
	pod := func(bound, took time.Duration, status corev1.ConditionStatus) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0.Add(bound + took))}}}}
		if bound > 0 {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(bound))})
		}
		return p
	}
	tests := []struct {
		name string
		pods []corev1.Pod
		want Pace
	}{
		{"created with room: from creation", []corev1.Pod{pod(0, time.Second, corev1.ConditionTrue), pod(0, 2*time.Second, corev1.ConditionTrue), pod(0, time.Hour, corev1.ConditionTrue), pod(0, time.Hour, corev1.ConditionFalse)},
			Pace{Drain: Duration(3 * time.Second), DrainFrom: "the scheduling to Ready of 3 pods of the group"}},
		{"waited for a node: from the binding", []corev1.Pod{pod(5*time.Second, time.Second, corev1.ConditionTrue), pod(6*time.Second, time.Second, corev1.ConditionTrue)},
			Pace{Drain: Duration(2 * time.Second), DrainFrom: "the scheduling to Ready of 2 pods of the group"}},
		{"none Ready", []corev1.Pod{pod(0, time.Second, corev1.ConditionFalse)}, Pace{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodStartPace(tc.pods); got != tc.want {
				t.Errorf("pace %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestServiceRunAssumesNoPostDrainWait: where the service drains, the
// run's --post-drain-wait is in no estimate, and the plan does not say
// it assumes one.
func TestServiceRunAssumesNoPostDrainWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		managed *ManagedPlan
		want    string
	}{
		{"the run's drains", nil, "a new node Ready in 3m, a drain in 1m, post-drain wait 10s"},
		{"the service's drains", &ManagedPlan{Service: "AKS agent pool"}, "a new node Ready in 3m, a drain in 1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{PostDrainWait: Duration(10 * time.Second), Managed: tc.managed}
			if got := p.EstimateAssumptions(); got != tc.want {
				t.Errorf("assumes %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMachineJoinPace: where the cloud says when it launched each
// machine, a join is from the launch to the node's Ready, boot included,
// ahead of the node's own creation to Ready; machines without a launch
// time and nodes not Ready are left out.
func TestMachineJoinPace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := func(name string, created, ready time.Duration, status corev1.ConditionStatus) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(created))},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(t0.Add(ready))}}}}
	}
	// Each machine launched at t0, its node made 40s later, Ready 10s after.
	nodes := []corev1.Node{node("a", 40*time.Second, 50*time.Second, corev1.ConditionTrue), node("b", 40*time.Second, 50*time.Second, corev1.ConditionTrue),
		node("c", 40*time.Second, time.Hour, corev1.ConditionFalse)}
	launched := map[string]Machine{"a": {ID: "i-a", Launched: t0}, "b": {ID: "i-b", Launched: t0}, "c": {ID: "i-c", Launched: t0}}
	for _, tc := range []struct {
		name     string
		machines map[string]Machine
		want     Pace
	}{
		{"launch times known", launched, Pace{Join: Duration(51 * time.Second), JoinFrom: "the launch to Ready of the group's 2 machines"}},
		{"no launch time: the nodes' own", map[string]Machine{"a": {ID: "i-a"}, "b": {ID: "i-b"}}, Pace{Join: Duration(11 * time.Second), JoinFrom: "the creation to Ready of the group's 2 nodes"}},
		// Compute's creationTimestamp keeps the fraction of a second the
		// API server's Ready time drops: a node Ready within the second
		// of its launch still counts, not as Ready before its launch.
		{"launched within the second of Ready", map[string]Machine{"a": {ID: "i-a", Launched: t0.Add(50*time.Second + 700*time.Millisecond)}},
			Pace{Join: Duration(time.Second), JoinFrom: "the launch to Ready of the group's 1 machine"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := measuredPace(nil, &CloudGroup{Nodes: tc.machines}, nodes)
			if got == nil || *got != tc.want {
				t.Errorf("measured %+v, want %+v", got, tc.want)
			}
		})
	}
}
