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

// TestServiceDrainFailureRecorded: a service update that failed on a
// drain the service gave up on keeps what the service named and did in
// the record, typed, and the run's failure says it from there; the
// update's next end (here a success) clears it.
func TestServiceDrainFailureRecorded(t *testing.T) {
	d := &plan.ServiceDrainFailure{Node: "n1", Pod: "shop/web-1", PDB: "shop/web", Behavior: "Schedule", Schedulable: true, SurgeRemoved: true}
	rec := &state.Record{Managed: &state.ManagedRecord{}}
	r := &managedRun{toolkit: toolkit{logf: func(string, ...any) {}, tally: &tally{}, cfg: &Config{Record: rec, Plan: &plan.Plan{Managed: &plan.ManagedPlan{Service: "AKS agent pool"}}}}}
	failed := cloud.UpdateProgress{ID: "u1", State: cloud.UpdateFailed, Errors: []cloud.UpdateError{{Code: cloud.CodePodEviction, Message: "UpgradeFailed: Drain node n1 failed", Nodes: []string{"n1"}, Drain: d}}}
	err := r.serviceEnded(failed, nil)
	var f *ServiceUpdateFailure
	if !errors.As(err, &f) || rec.Managed.DrainFailure == nil || *rec.Managed.DrainFailure != *d {
		t.Fatalf("error %v, record %+v; want a ServiceUpdateFailure and %+v recorded", err, rec.Managed.DrainFailure, d)
	}
	if want := "made it schedulable again, not upgraded, and deleted its surge nodes"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `PodDisruptionBudget "shop/web"`) {
		t.Errorf("failure %q, want it to say %q and the PDB", err, want)
	}
	if err := r.serviceEnded(cloud.UpdateProgress{ID: "u2", State: cloud.UpdateSucceeded}, nil); err != nil || rec.Managed.DrainFailure != nil {
		t.Errorf("after a success: %v, record %+v; want it cleared", err, rec.Managed.DrainFailure)
	}
}
