package upgrade

import (
	"errors"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestServiceEndsQuarantinedOrCancelled: a service update that ended
// with nodes quarantined (AKS's undrainableNodeBehavior Cordon) ends the
// run quarantined, naming each node with the pods seen holding it, in
// the record as the run's own quarantine; a cancelled one pauses it, a
// user's cancel.
func TestServiceEndsQuarantinedOrCancelled(t *testing.T) {
	held := []HeldPod{{Node: "n1", Namespace: "shop", Pod: "db-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "db"}}}
	for _, tc := range []struct {
		name     string
		progress cloud.UpdateProgress
		want     string // the error's type
		nodes    []string
	}{
		{"quarantined", cloud.UpdateProgress{ID: "u1", State: cloud.UpdateQuarantined, Errors: []cloud.UpdateError{{Code: cloud.CodePodEviction, Nodes: []string{"n1", "n2"}}}}, "quarantined", []string{"n1", "n2"}},
		{"cancelled", cloud.UpdateProgress{ID: "u1", State: cloud.UpdateCancelled}, "paused", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &state.Record{}
			r := &managedRun{toolkit: toolkit{logf: func(string, ...any) {}, cfg: &Config{Record: rec, Plan: &plan.Plan{Managed: &plan.ManagedPlan{Service: "AKS agent pool"}}}}}
			err := r.serviceEnded(tc.progress, held)
			var q *QuarantinedError
			var p *PausedError
			switch {
			case errors.As(err, &q):
				if tc.want != "quarantined" {
					t.Fatalf("%v, want %s", err, tc.want)
				}
				var names []string
				for _, n := range rec.Quarantined {
					names = append(names, n.Node)
				}
				if strings.Join(names, ",") != strings.Join(tc.nodes, ",") || len(rec.Quarantined[0].Held) != 1 || !strings.Contains(err.Error(), "shop/db-0") {
					t.Errorf("record %+v, error %v; want %v, n1 held by shop/db-0", rec.Quarantined, err, tc.nodes)
				}
			case errors.As(err, &p):
				if tc.want != "paused" {
					t.Fatalf("%v, want %s", err, tc.want)
				}
			default:
				t.Fatalf("%v, want %s", err, tc.want)
			}
		})
	}
}
