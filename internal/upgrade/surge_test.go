package upgrade

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

var surgeBatch = []plan.Phase{plan.PhaseSurge, plan.PhaseRoom, plan.PhaseDrain, plan.PhaseCordon, plan.PhaseRemove, plan.PhaseRecover}

// callKinds are a group's calls without the node they name.
func callKinds(calls []string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c
		if k, _, _ := strings.Cut(c, " "); k == "Shrink" || k == "RemoveNode" {
			out[i] = k
		}
	}
	return out
}

func TestSurge(t *testing.T) {
	t.Parallel()
	oneBatch := func(calls ...string) []string { return calls }
	for _, tc := range []struct {
		name           string
		maxSurge       int
		maxUnavailable string
		// none runs with provider none: no group, nodes deleted.
		none       bool
		launch     launchMode
		wantPhases []string
		wantCalls  []string
		wantErr    bool
		// wantProblem is what the failure says of the one surge machine.
		wantProblem string
		wantRecord  state.CloudRecord
	}{
		// One zone at a time, one node at a time: each batch raises the
		// group by one, and its old node's machine goes with the desired
		// size lowered again, max following.
		{name: "1/0: a surge node per batch, the old machine goes with desired lowered", maxSurge: 1, maxUnavailable: "0",
			wantPhases: concat([]string{"Setup"}, batchPhases(3, surgeBatch...), []string{"ScaleDown", "Done"}),
			wantCalls: concat([]string{"Setup"},
				oneBatch("SetDesiredAndMax 4 5", "Shrink", "SetMax 4"), oneBatch("SetDesiredAndMax 4 5", "Shrink", "SetMax 4"), oneBatch("SetDesiredAndMax 4 5", "Shrink", "SetMax 4")),
			wantRecord: state.CloudRecord{ScaleRecord: state.ScaleRecord{ScaleUp: 1, LastDesired: 3}}},
		// Two nodes per batch in zone z1 with one surge node: the first
		// removal lowers desired back to the recorded size, the second
		// is replaced by the group, and the batch waits for it.
		{name: "1/1: one removal lowers desired, the other is replaced", maxSurge: 1, maxUnavailable: "1",
			wantPhases: concat([]string{"Setup"}, batchPhases(2, surgeBatch...), []string{"ScaleDown", "Done"}),
			wantCalls: concat([]string{"Setup"},
				oneBatch("SetDesiredAndMax 4 5", "Shrink", "RemoveNode", "SetMax 4"), oneBatch("SetDesiredAndMax 4 5", "Shrink", "SetMax 4")),
			wantRecord: state.CloudRecord{ScaleRecord: state.ScaleRecord{ScaleUp: 1, LastDesired: 3}}},
		{name: "0/1: no surge nodes, the group replaces every node", maxSurge: 0, maxUnavailable: "1",
			wantPhases: concat([]string{"Setup"}, batchPhases(3, surgeBatch...), []string{"ScaleDown", "Done"}),
			wantCalls:  []string{"Setup", "RemoveNode", "RemoveNode", "RemoveNode"},
			wantRecord: state.CloudRecord{ScaleRecord: state.ScaleRecord{LastDesired: 3}}},
		{name: "provider none: the batches alone", maxSurge: 0, maxUnavailable: "1", none: true,
			wantPhases: concat(batchPhases(3, plan.PhaseRoom, plan.PhaseDrain, plan.PhaseCordon, plan.PhaseRemove, plan.PhaseRecover), []string{"Done"})},
		{name: "a surge node that never becomes Ready stops the run before any drain", maxSurge: 1, maxUnavailable: "0", launch: launchNotReady,
			wantPhases: []string{"Setup", "Surge 1"},
			wantCalls:  []string{"Setup", "SetDesiredAndMax 4 5"},
			wantErr:    true, wantProblem: "not Ready", wantRecord: state.CloudRecord{ScaleRecord: state.ScaleRecord{LastDesired: 4, ScaleUp: 1}}},
		// A warm pool's instance, or a default moved back: the group runs
		// all it wants, so no surge node of the target comes. Counted as
		// launched, it let the run go on and end with it in the group.
		{name: "a surge node of another version stops the run at once, before any drain", maxSurge: 1, maxUnavailable: "0", launch: launchOldVersion,
			wantPhases: []string{"Setup", "Surge 1"},
			wantCalls:  []string{"Setup", "SetDesiredAndMax 4 5"},
			wantErr:    true, wantProblem: "Ready, but launched from launch template lt version 1, not lt version 2", wantRecord: state.CloudRecord{ScaleRecord: state.ScaleRecord{LastDesired: 4, ScaleUp: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := threeOldNodes()
			var objs []runtime.Object
			in := plan.Input{Strategy: "surge", MaxSurge: tc.maxSurge, MaxUnavailable: tc.maxUnavailable}
			if tc.none {
				nodes = []*corev1.Node{imageNode("old-a1", "z1", "old"), imageNode("old-a2", "z1", "old"), imageNode("old-b1", "z2", "old"), imageNode("new-b2", "z2", "new")}
				in.Provider, in.TargetLabels = cloud.NoneName, map[string]string{"image": "new"}
			}
			for _, n := range nodes {
				objs = append(objs, n, appPod("pod-"+n.Name, n.Name, "500m"))
			}
			client := newTestClient(objs...)
			group := newFakeGroup(client, plan.Sizes{Min: 1, Desired: 3, Max: 4}, nodes...)
			group.launch = tc.launch
			var provider cloud.Provider = group
			if tc.none {
				provider = &cloud.None{Client: client, DeleteNode: true}
			} else {
				in.Cloud = group.cloudGroup()
			}
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, provider)
			cfg.Drain = drainOpts()
			if tc.wantErr {
				cfg.NodeReadyTimeout = 200 * time.Millisecond
			}
			// A surge batch cordons its nodes before the drain.
			var uncordoned []string
			got := runEngine(t, cfg, func(s plan.State) {
				if s.Phase != plan.PhaseCordon {
					return
				}
				for _, n := range p.Batches[s.Batch].Nodes {
					if node, err := client.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{}); err == nil && !node.Spec.Unschedulable {
						uncordoned = append(uncordoned, n.Name)
					}
				}
			}, group)
			wantPhases(t, got.phases, tc.wantPhases...)
			if len(uncordoned) > 0 {
				t.Errorf("nodes %v drained before they were cordoned", uncordoned)
			}
			if !tc.none {
				if calls := callKinds(group.callsNow()); !slices.Equal(calls, tc.wantCalls) {
					t.Errorf("calls %v, want %v", group.callsNow(), tc.wantCalls)
				}
				cr := cfg.Record.Cloud
				if cr == nil || cr.Original == nil || *cr.Original != (plan.Sizes{Min: 1, Desired: 3, Max: 4}) || cr.LastDesired != tc.wantRecord.LastDesired || cr.ScaleUp != tc.wantRecord.ScaleUp {
					t.Errorf("record %+v, want the sizes before the run and %+v", cr, tc.wantRecord)
				}
			}
			if tc.wantErr {
				f := wantNodeCreationFailure(t, got.err)
				if problems := append(slices.Clone(f.Instances), f.Others...); len(problems) != 1 || !strings.Contains(problems[0], tc.wantProblem) {
					t.Errorf("failure %+v, want it to say %q of the surge machine", f, tc.wantProblem)
				}
				if pods := client.podNames(t); len(pods) != 3 {
					t.Errorf("pods %v: nothing may be drained", pods)
				}
				return
			}
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			if tc.none {
				if left := client.nodes(t); len(left) != 1 {
					t.Errorf("nodes left %v, want the current one", left)
				}
				return
			}
			if s := group.sizesNow(); s != (plan.Sizes{Min: 1, Desired: 3, Max: 4}) {
				t.Errorf("sizes at the end %s, want those before the run", s)
			}
			wantOnlyVersion(t, client, "2", 3)
			wantNoMarks(t, client)
			if want := sorted(p.OutdatedNames()); !slices.Equal(sorted(got.done), want) {
				t.Errorf("done %v, want %v", got.done, want)
			}
		})
	}
}
