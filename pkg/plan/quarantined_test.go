package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// TestQuarantinedNodesGoFirst: the nodes the last run left quarantined
// (labelled, cordoned) are in batch 1 of the next plan, whatever the
// seed put first, with the batches' sizes and zones as the strategy made
// them, and the plan says so.
func TestQuarantinedNodesGoFirst(t *testing.T) {
	surgeNodes := []corev1.Node{
		node("a1", "ng", "a", "ami-old"), node("a2", "ng", "a", "ami-old"),
		node("b1", "ng", "b", "ami-old"), node("b2", "ng", "b", "ami-old"),
		node("c1", "ng", "c", "ami-old"), node("c2", "ng", "c", "ami-old"),
	}
	for _, tc := range []struct {
		name        string
		nodes       []corev1.Node
		setup       func(*Input)
		quarantined []string
		// inFirst is how many batches come first with them.
		inFirst   int
		wantSizes []int
		wantNote  string // "" for none
	}{
		{name: "random order, two quarantined in batch 1", nodes: groupSnapshot().Nodes,
			setup:       func(in *Input) { in.Order = OrderRandom },
			quarantined: []string{"old-4", "old-5"}, wantSizes: []int{2, 2, 2},
			wantNote: `2 nodes quarantined by the last run ("old-4", "old-5"): batch 1 takes them first`},
		{name: "zone-balanced one at a time", nodes: groupSnapshot().Nodes,
			setup:       func(in *Input) { in.MaxUnavailable = "1" },
			quarantined: []string{"old-5"}, wantSizes: []int{1, 1, 1, 1, 1, 1},
			wantNote: `1 node quarantined by the last run ("old-5"): batch 1 takes it first`},
		{name: "surge keeps one zone per batch", nodes: surgeNodes,
			setup:       surgeInput,
			quarantined: []string{"c2"}, wantSizes: []int{1, 1, 1, 1, 1, 1},
			wantNote: `1 node quarantined by the last run ("c2"): batch 1 takes it first`},
		{name: "two zones quarantined under surge: one batch each, first", nodes: surgeNodes,
			setup:       surgeInput,
			quarantined: []string{"b2", "c2"}, inFirst: 2, wantSizes: []int{1, 1, 1, 1, 1, 1},
			wantNote: `2 nodes quarantined by the last run ("b2", "c2"): batches 1-2 take them first`},
		{name: "none quarantined: no note", nodes: groupSnapshot().Nodes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot.Cluster{Nodes: slices.Clone(tc.nodes)}
			for i := range snap.Nodes {
				n := &snap.Nodes[i]
				n.Labels = maps.Clone(n.Labels)
				if slices.Contains(tc.quarantined, n.Name) {
					n.Labels[check.LabelUpgradeStatus], n.Spec.Unschedulable = check.StatusQuarantined, true
				}
			}
			in := baseInput()
			if tc.setup != nil {
				tc.setup(&in)
			}
			// Every seed: the seed alone puts them first in some.
			for seed := int64(1); seed <= 8; seed++ {
				in.Seed = seed
				p, err := Build(snap, in)
				if err != nil {
					t.Fatal(err)
				}
				var sizes []int
				var first []string
				for i, b := range p.Batches {
					sizes = append(sizes, len(b.Nodes))
					for _, n := range b.Nodes {
						if n.Quarantined != slices.Contains(tc.quarantined, n.Name) {
							t.Errorf("seed %d: node %q quarantined %v", seed, n.Name, n.Quarantined)
						}
						if i < max(tc.inFirst, 1) && n.Quarantined {
							first = append(first, n.Name)
						}
						if p.Strategy == "surge" && n.Zone != b.Nodes[0].Zone {
							t.Errorf("seed %d: batch %d mixes zones", seed, b.Number)
						}
					}
				}
				if slices.Sort(first); !slices.Equal(first, tc.quarantined) {
					t.Errorf("seed %d: the first batches hold quarantined %v, want %v (batches %v)", seed, first, tc.quarantined, p.Batches)
				}
				if !slices.Equal(sizes, tc.wantSizes) && tc.wantSizes != nil {
					t.Errorf("seed %d: batch sizes %v, want %v", seed, sizes, tc.wantSizes)
				}
				notes := slices.DeleteFunc(slices.Clone(p.Notes), func(n string) bool { return !strings.Contains(n, "quarantined") })
				if want := tc.wantNote; want == "" && len(notes) > 0 || want != "" && !slices.Equal(notes, []string{want}) {
					t.Errorf("seed %d: notes %q, want %q", seed, notes, want)
				}
			}
		})
	}
}

// surgeInput plans surge 1/0 on a cloud group every node is a machine of.
func surgeInput(in *Input) {
	in.Strategy, in.MaxSurge, in.MaxUnavailable = "surge", 1, "0"
	in.Cloud = &CloudGroup{GroupID: GroupID{Provider: "aws", Group: "ng", Template: "lt"},
		Can: CapRemoveNodes | CapResize, Launches: Launches{TargetVersion: "1"}, Nodes: map[string]Machine{}}
	for _, z := range []string{"a", "b", "c"} {
		for _, i := range []string{"1", "2"} {
			in.Cloud.Nodes[z+i] = Machine{ID: "i-" + z + i, Zone: z, Template: "lt", Version: "1", State: MachineInService}
		}
	}
}
