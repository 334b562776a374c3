package session

import (
	"context"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The managed rollback is recorded before the service is asked: killed
// before the rollback's ID is recorded, the record says a rollback was
// asked for (so the next command looks for the update the service
// started); refused by the service, the record is as it was.
func TestManagedRollbackRecordedBeforeItIsAsked(t *testing.T) {
	ctx := context.Background()
	stopped := func() *state.Record {
		return &state.Record{NodeGroup: "demo", Strategy: "eks", State: state.StatePaused, Phase: string(plan.PhaseUpdate),
			Managed: &state.ManagedRecord{Group: "demo", UpdateID: "upd-1", Nodes: []string{"a", "b"}}}
	}
	for _, tc := range []struct {
		name    string
		refused bool
	}{
		{"killed before the service answered", false},
		{"refused by the service", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := inClusterSession()
			rec := stopped()
			if err := s.Store().Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			undo, err := s.IntendManagedRollback(ctx, rec, "laptop/1")
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused {
				if err := undo(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Store().Load(ctx, "demo")
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused {
				want := stopped()
				if got.State != want.State || got.Phase != want.Phase || got.Managed.UpdateID != "upd-1" || got.Managed.RollingBackFrom != "" || len(got.Attempts) != 0 {
					t.Errorf("after the refusal: %+v %+v, want the record as before", got, got.Managed)
				}
				return
			}
			if got.Managed.RollingBackFrom != "upd-1" || got.Managed.UpdateID != "" || got.Phase != string(plan.PhaseRollback) || got.Holder != "laptop/1" {
				t.Errorf("recorded %+v %+v, want the rollback of upd-1 asked for by laptop/1", got, got.Managed)
			}
			if !StartedUnheard(got) {
				t.Errorf("the next command would not look for the rollback the service started")
			}
		})
	}
}
