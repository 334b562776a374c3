package upgrade

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestAbortAfterARunStoppedWithNodesQuarantined: a run that stopped with
// nodes quarantined (exit 8), mid-batch at --max-blocked-nodes or at its
// end, then abort: every node is back in service, the quarantine label
// off with the taint and the cordon, the record holds none quarantined,
// and the owner's hold label stays.
func TestAbortAfterARunStoppedWithNodesQuarantined(t *testing.T) {
	t.Parallel()
	before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
	for _, tc := range []struct {
		name  string
		setup func(*stopRun)
		hold  bool // the first node's owner labelled it hold=true
	}{
		{name: "stopped mid-batch at --max-blocked-nodes 1", setup: holdFirstNode(1)},
		{name: "went on around a node a PodDisruptionBudget held, to its end", setup: holdFirstNode(0)},
		{name: "went on around a node its owner held, to its end", hold: true, setup: func(r *stopRun) {
			patch := []byte(`{"metadata":{"labels":{"` + check.LabelHold + `":"true"}}}`)
			if _, err := r.client.CoreV1().Nodes().Patch(context.Background(), r.plan.Batches[0].Nodes[0].Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
				r.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, group := cloudCluster(before, threeOldNodes()...)
			r := &stopRun{t: t, client: client, group: group, control: newFakeControl()}
			r.plan = buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup()})
			r.cfg = cloudRun(r.plan, client, group)
			r.cfg.Drain, r.cfg.Control = drainOpts(), r.control
			r.cfg.NodeReadyTimeout = 200 * time.Millisecond
			tc.setup(r)
			rec := r.cfg.Record
			held := r.plan.Batches[0].Nodes[0].Name
			var q *QuarantinedError
			if got := r.run(nil); !errors.As(got.err, &q) {
				t.Fatalf("run: %v, want nodes quarantined\n%s", got.err, got.out)
			}
			if n, _ := client.CoreV1().Nodes().Get(context.Background(), held, metav1.GetOptions{}); n == nil || !check.Quarantined(n) {
				t.Fatalf("node %q not quarantined by the run: %+v", held, n)
			}

			again := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
			acfg := cloudRun(again, client, group)
			acfg.Record = rec
			out, _, err := abortRun(t, acfg, group)
			if err != nil {
				t.Fatalf("abort: %v\n%s", err, out)
			}
			wantNoMarks(t, client)
			for name, n := range client.nodes(t) {
				if check.Quarantined(&n) {
					t.Errorf("node %q still labelled %s=%s after abort", name, check.LabelUpgradeStatus, check.StatusQuarantined)
				}
				if name == held && check.Held(&n) != tc.hold {
					t.Errorf("node %q: the owner's hold label is %v after abort, want %v", name, check.Held(&n), tc.hold)
				}
			}
			if len(rec.Quarantined) > 0 {
				t.Errorf("the record still names %+v quarantined", rec.Quarantined)
			}
			if s := group.sizesNow(); s != before {
				t.Errorf("sizes after abort %s, want %s\n%s", s, before, out)
			}
		})
	}
}
