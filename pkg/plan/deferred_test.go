package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// TestRollbackDefersTheSurplus: a rollback of a run that scaled the group
// up replaces only as many outdated nodes as the sizes recorded before the
// run keep; the scale-down removes the others, unreplaced, and the plan's
// counts, steps and table say so.
func TestRollbackDefersTheSurplus(t *testing.T) {
	t.Parallel()
	// Rolling back from version 2 to 1: a1 and b1 were never upgraded, a2
	// replaced an old node, a3 and b2 are the rolled back run's scale-up.
	machines := map[string]Machine{}
	var nodes []corev1.Node
	for _, n := range []struct{ name, zone, version string }{{"a1", "a", "1"}, {"a2", "a", "2"}, {"a3", "a", "2"}, {"b1", "b", "1"}, {"b2", "b", "2"}} {
		machines[n.name] = Machine{ID: "i-" + n.name, Zone: n.zone, Template: "lt-1", Version: n.version, State: MachineInService}
		nodes = append(nodes, awsNode(n.name, n.zone, "i-"+n.name, n.version))
	}
	for _, tc := range []struct {
		name         string
		rollbackFrom string
		desired      int32
		tainted      []string // held off by an earlier attempt of the rollback
		wantDeferred []string
		wantBatched  []string
	}{
		{name: "the surplus goes from the fullest zone", rollbackFrom: "2", desired: 5,
			wantDeferred: []string{"a2", "a3"}, wantBatched: []string{"b2"}},
		// The first attempt's batch held a2 off: the resumed rollback
		// replaces it, and defers the nodes it left alone.
		{name: "a resumed rollback comes to the same split", rollbackFrom: "2", desired: 5, tainted: []string{"b2"},
			wantDeferred: []string{"a2", "a3"}, wantBatched: []string{"b2"}},
		{name: "a node held off is replaced rather than deferred", rollbackFrom: "2", desired: 5, tainted: []string{"a2"},
			wantDeferred: []string{"a3", "b2"}, wantBatched: []string{"a2"}},
		{name: "a surplus above the outdated nodes defers them all", rollbackFrom: "2", desired: 7,
			wantDeferred: []string{"a2", "a3", "b2"}},
		// Resuming the upgrade itself: the scale-down removes nodes of the
		// target; every outdated node is replaced.
		{name: "not a rollback", desired: 5, wantBatched: []string{"a2", "a3", "b2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := cloudInput("1", machines)
			in.Cloud.Sizes.Desired, in.Cloud.Sizes.Max = tc.desired, tc.desired+1
			in.Resume.Recorded = &Sizes{Min: 1, Desired: 3, Max: 4}
			in.Resume.RollbackFrom = tc.rollbackFrom
			ns := slices.Clone(nodes)
			for i := range ns {
				if slices.Contains(tc.tainted, ns[i].Name) {
					ns[i] = *ns[i].DeepCopy()
					ns[i].Spec.Taints = []corev1.Taint{in.Taint}
				}
			}
			p := mustBuild(t, snapshot.Cluster{Nodes: ns}, in)
			if got := sorted(p.DeferredNames()); !slices.Equal(got, tc.wantDeferred) {
				t.Errorf("deferred %v, want %v", got, tc.wantDeferred)
			}
			if got := sorted(p.OutdatedNames()); !slices.Equal(got, tc.wantBatched) {
				t.Errorf("batched %v, want %v", got, tc.wantBatched)
			}
			if p.Nodes.Outdated != len(tc.wantBatched) || p.Nodes.Deferred != len(tc.wantDeferred) || p.NothingToDo() {
				t.Errorf("counts %+v, nothing to do %v", p.Nodes, p.NothingToDo())
			}
			wantDeferredShown(t, p)
		})
	}
}

// wantDeferredShown checks that the plan's steps and table name the
// deferred nodes, and the estimate counts each node drained once.
func wantDeferredShown(t *testing.T, p *Plan) {
	t.Helper()
	var table bytes.Buffer
	if err := WriteTable(&table, p, time.Now(), output.Colorizer(false), false); err != nil {
		t.Fatal(err)
	}
	rows := strings.Count(table.String(), "\nscale-down ")
	var scaleDown, upgrade Step
	for _, s := range p.Steps {
		switch s.Phase {
		case "ScaleDown":
			scaleDown = s
		case "Upgrade":
			upgrade = s
		}
	}
	if d := len(p.Deferred); d > 0 {
		if !strings.Contains(scaleDown.Detail, Count(d, "outdated node")+" no batch replaces first") || rows != d ||
			!strings.Contains(table.String(), fmt.Sprintf("outdated replaced, %d outdated removed by the scale-down", d)) {
			t.Errorf("the plan does not show the %d deferred nodes:\n%s", d, table.String())
		}
	} else if rows != 0 {
		t.Errorf("scale-down rows without deferred nodes:\n%s", table.String())
	}
	// The nodes hold no pods: a batch is a drain, a deferred node of the
	// scale-down a drain too, and every removal of the scale-down its wait.
	n := time.Duration(p.Cloud.During.Desired - p.Cloud.Before.Desired)
	want := time.Duration(len(p.Batches))*perBatchEstimate(p) + n*time.Duration(p.PostDrainWait) + time.Duration(len(p.Deferred))*p.DrainTime()
	if got := time.Duration(scaleDown.Estimate) + time.Duration(upgrade.Estimate); got != want {
		t.Errorf("estimate of the upgrade and scale-down %s, want %s: each node drained once", got, want)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	if s == nil {
		return []string{}
	}
	return s
}
