package upgrade

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestSurelyPlaced(t *testing.T) {
	t.Parallel()
	zones := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name    string
		perZone map[string]int
		n       int
		want    []string
	}{
		{name: "balanced, one per zone", perZone: map[string]int{"a": 2, "b": 2, "c": 2}, n: 3, want: zones},
		{name: "balanced, fewer than zones: AWS picks among the tied", perZone: map[string]int{"a": 2, "b": 2, "c": 2}, n: 2, want: nil},
		{name: "unbalanced: the emptiest zones first, the fullest gets none", perZone: map[string]int{"a": 3, "b": 1, "c": 1}, n: 2, want: []string{"b", "c"}},
		{name: "unbalanced, enough to reach the fullest", perZone: map[string]int{"a": 3, "b": 1, "c": 1}, n: 7, want: zones},
		{name: "an empty zone is filled first", perZone: map[string]int{"a": 2, "b": 2}, n: 1, want: []string{"c"}},
		{name: "nothing added", perZone: map[string]int{"a": 1}, n: 0, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := surelyPlaced(tc.perZone, zones, tc.n); !slices.Equal(got, tc.want) {
				t.Errorf("surelyPlaced(%v, %d) = %v, want %v", tc.perZone, tc.n, got, tc.want)
			}
		})
	}
}

// A run whose new nodes came too late is run again with the group already
// raised: the re-run waits for a new node in the zones the raise surely
// launched in, recorded before it, not in every outdated zone. Six nodes
// in z1 and one in z2, raised by four: the group launches all four in
// z2, so a wait for one in z1 would end only at --node-ready-timeout.
func TestResumedScaleUpWaitsForTheRecordedZones(t *testing.T) {
	t.Parallel()
	nodes := []*corev1.Node{groupNode("old-b1", "z2", "1")}
	for i := range 6 {
		nodes = append(nodes, groupNode(fmt.Sprintf("old-a%d", i), "z1", "1"))
	}
	before := plan.Sizes{Min: 1, Desired: 7, Max: 8}
	client, fg := cloudCluster(before, nodes...)
	fg.emptiestFirst, fg.launch = true, launchNeverJoins
	p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Cloud: fg.cloudGroup()})
	cfg := cloudRun(p, client, fg)
	cfg.Drain, cfg.NodeReadyTimeout = drainOpts(), 200*time.Millisecond
	first := runEngine(t, cfg, nil, fg)
	wantNodeCreationFailure(t, first.err)
	rec := cfg.Record
	if !slices.Equal(rec.Cloud.ScaleUpZones, []string{"z2"}) {
		t.Fatalf("recorded scale-up zones %v, want [z2]", rec.Cloud.ScaleUpZones)
	}
	if z := fg.zoneCounts(); !slices.Equal(z, []int{6, 5}) {
		t.Fatalf("machines per zone %v, want [6 5]: every new one in z2", z)
	}
	if err := fg.joinPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	fg.launch = launchReady
	again := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Cloud: fg.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
	rcfg := cloudRun(again, client, fg)
	rcfg.Record, rcfg.Drain, rcfg.Start, rcfg.NodeReadyTimeout = rec, drainOpts(), plan.PhaseScaleUp, 2*time.Second
	if got := runEngine(t, rcfg, nil, fg); got.err != nil {
		t.Fatalf("re-run: %v\n%s", got.err, got.out)
	}
	if s := fg.sizesNow(); s != before {
		t.Errorf("sizes %s, want %s", s, before)
	}
}

// TestScaleUpOfAOneNodeGroupWaitsInItsEmptyZones: a group of one node in
// z1 over three zones launches its scale-up in z2 and z3, the emptiest;
// a run that waited for a new node in z1, the only zone of its nodes,
// would wait for one that never comes.
func TestScaleUpOfAOneNodeGroupWaitsInItsEmptyZones(t *testing.T) {
	t.Parallel()
	before := plan.Sizes{Min: 1, Desired: 1, Max: 2}
	client, fg := cloudCluster(before, groupNode("old-a1", "z1", "1"))
	fg.zones, fg.emptiestFirst = []string{"z1", "z2", "z3"}, true
	rg := &rebalancingGroup{fakeGroup: fg}
	p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Cloud: fg.cloudGroup()})
	cfg := cloudRun(p, client, fg)
	cfg.Provider, cfg.Drain, cfg.NodeReadyTimeout = rg, drainOpts(), 2*time.Second
	got := runEngine(t, cfg, nil, fg)
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	if z := cfg.Record.Cloud.ScaleUpZones; slices.Contains(z, "z1") {
		t.Errorf("recorded scale-up zones %v: z1 gets no new node", z)
	}
	if s := fg.sizesNow(); s != before {
		t.Errorf("sizes %s, want %s", s, before)
	}
}
