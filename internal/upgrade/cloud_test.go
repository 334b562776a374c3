package upgrade

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

func readyNode(name, zone string) *corev1.Node {
	n := testNode(name, zone, "4")
	n.Labels["eks.amazonaws.com/nodegroup"] = "ng"
	return n
}

// plannedNodes are planned nodes of the names.
func plannedNodes(names []string) []plan.PlannedNode {
	var out []plan.PlannedNode
	for _, n := range names {
		out = append(out, plan.PlannedNode{Name: n})
	}
	return out
}

func TestScaleDown(t *testing.T) {
	for _, tc := range []struct {
		name            string
		sizes           plan.Sizes
		record          state.CloudRecord
		raiseAfterSizes int
		wantDesired     int32
		wantMax         int32
		wantShrunk      int
		wantNote        bool
		wantFirst       string // the node removed first, if it matters
		// deferred are the outdated nodes a rollback left to the
		// scale-down; wantNoteHas what the note says of them.
		deferred    []string
		wantNoteHas string
	}{
		{name: "back to the original sizes, one node at a time", sizes: plan.Sizes{Min: 1, Desired: 5, Max: 6},
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 5}},
			wantDesired: 3, wantMax: 4, wantShrunk: 2},
		// Desired above what the run set: the autoscaler scaled up; the
		// run stops at once and shrinks nothing.
		{name: "autoscaler raised desired before the scale-down", sizes: plan.Sizes{Min: 1, Desired: 6, Max: 6},
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 5}},
			wantDesired: 6, wantMax: 6, wantNote: true},
		// It raised desired while the first node was drained (after the
		// second look at the sizes): that node goes back in service.
		{name: "autoscaler raised desired during a drain", sizes: plan.Sizes{Min: 1, Desired: 5, Max: 6}, raiseAfterSizes: 1,
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 5}},
			wantDesired: 6, wantMax: 6, wantNote: true},
		// Killed after recording the next size, before terminating: the
		// desired size is one above the record, and the node is still
		// there; that is the run's own step, finished now.
		{name: "interrupted step is finished", sizes: plan.Sizes{Min: 1, Desired: 5, Max: 6},
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 4, Shrinking: "c", ShrinkTo: 4}},
			wantDesired: 3, wantMax: 4, wantShrunk: 2, wantFirst: "c"},
		// Killed after the termination, before the record was cleared:
		// the step is not done twice.
		{name: "interrupted after the termination", sizes: plan.Sizes{Min: 1, Desired: 4, Max: 6},
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 4, Shrinking: "c", ShrinkTo: 4}},
			wantDesired: 3, wantMax: 4, wantShrunk: 1},
		// Killed while draining the victim: it is drained again and removed.
		{name: "interrupted during the drain", sizes: plan.Sizes{Min: 1, Desired: 4, Max: 5},
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 4, Shrinking: "e"}},
			wantDesired: 3, wantMax: 4, wantShrunk: 1, wantFirst: "e"},
		// A rollback's deferred node goes first, from whatever zone.
		{name: "the nodes a rollback deferred go first", sizes: plan.Sizes{Min: 1, Desired: 5, Max: 6}, deferred: []string{"e"},
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{FromVersion: "1", Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 5}},
			wantDesired: 3, wantMax: 4, wantShrunk: 2, wantFirst: "e"},
		// Stopped by the autoscaler before it removed them: the note says
		// they stay outdated, and what replaces them.
		{name: "the autoscaler stops a rollback's scale-down", sizes: plan.Sizes{Min: 1, Desired: 6, Max: 6}, deferred: []string{"e"},
			record:      state.CloudRecord{GroupRecord: state.GroupRecord{FromVersion: "1", Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}}, ScaleRecord: state.ScaleRecord{LastDesired: 5}},
			wantDesired: 6, wantMax: 6, wantNote: true, wantNoteHas: `the outdated nodes "e", left to the scale-down by the rollback, stay: a run back to version 1 replaces them`},
		{name: "nothing was scaled up", sizes: plan.Sizes{Min: 1, Desired: 5, Max: 6},
			record:      state.CloudRecord{},
			wantDesired: 5, wantMax: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := fake.NewClientset(readyNode("a", "z1"), readyNode("b", "z1"), readyNode("c", "z2"), readyNode("d", "z2"), readyNode("e", "z3"))
			group := newFakeGroup(client, tc.sizes)
			if all, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
				for i := range all.Items {
					group.addMachine(&all.Items[i])
				}
			}
			group.raiseAfterSizes = tc.raiseAfterSizes
			rec := &state.Record{Cloud: &tc.record}
			e, err := New(Config{
				Client:   client,
				Plan:     &plan.Plan{NodeGroup: "ng", NodeGroupLabel: "eks.amazonaws.com/nodegroup", Deferred: plannedNodes(tc.deferred)},
				Provider: group,
				Drain:    drain.Options{Timeout: 10 * time.Second},
				Record:   rec,
				Out:      io.Discard,
				Start:    plan.PhaseScaleDown,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if group.sizes.Desired != tc.wantDesired || group.sizes.Max != tc.wantMax {
				t.Errorf("sizes %v, want desired %d max %d", group.sizes, tc.wantDesired, tc.wantMax)
			}
			var shrunk []string
			for _, c := range group.calls {
				if n, ok := strings.CutPrefix(c, "Shrink "); ok {
					shrunk = append(shrunk, n)
				}
			}
			if len(shrunk) != tc.wantShrunk {
				t.Errorf("shrunk %v, want %d nodes", shrunk, tc.wantShrunk)
			}
			if tc.wantFirst != "" && (len(shrunk) == 0 || shrunk[0] != tc.wantFirst) {
				t.Errorf("shrunk %v, want %q first", shrunk, tc.wantFirst)
			}
			if (e.Note() != "") != tc.wantNote || !strings.Contains(e.Note(), tc.wantNoteHas) {
				t.Errorf("note %q, want one: %v, saying %q", e.Note(), tc.wantNote, tc.wantNoteHas)
			}
			nodes, _ := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			for _, n := range nodes.Items {
				if n.Spec.Unschedulable {
					t.Errorf("node %q left cordoned", n.Name)
				}
				if _, ok := n.Annotations[ScaleDownDisabledAnnotation]; ok {
					t.Errorf("node %q left annotated", n.Name)
				}
				// The node a stopped scale-down keeps serves again.
				if _, ok := n.Labels[ExcludeLBLabel]; ok {
					t.Errorf("node %q left out of load balancers", n.Name)
				}
			}
			if rec.Cloud.Shrinking != "" {
				t.Errorf("record still shrinking %q", rec.Cloud.Shrinking)
			}
			// Zones stay balanced: the first node removed comes from a
			// zone with the most nodes.
			if tc.wantFirst == "" && len(shrunk) > 0 && !slices.Contains([]string{"a", "b", "c", "d"}, shrunk[0]) {
				t.Errorf("first node removed %q is from the zone with one node", shrunk[0])
			}
		})
	}
}
