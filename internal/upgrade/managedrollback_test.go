package upgrade

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// rollingBackService rolls an update back as a service's rollback does:
// a new update, which succeeds at once; or refuses it.
type rollingBackService struct {
	managedFake
	refuse error
	// askedWith is the record as saved when the service was asked.
	askedWith *state.ManagedRecord
	saved     *state.ManagedRecord
	asked     int
	cancelled string // an update ID the service reports cancelled
}

func (s *rollingBackService) RollbackUpdate(_ context.Context, id string) (string, error) {
	s.asked++
	m := *s.saved
	s.askedWith = &m
	if s.refuse != nil {
		return "", s.refuse
	}
	return "rb-of-" + id, nil
}

func (s *rollingBackService) Progress(_ context.Context, id string) (cloud.UpdateProgress, error) {
	if id == s.cancelled {
		return cloud.UpdateProgress{ID: id, State: cloud.UpdateCancelled}, nil
	}
	return cloud.UpdateProgress{ID: id, State: cloud.UpdateSucceeded}, nil
}

// TestManagedRollbackRecordedBeforeItIsAsked: the rollback of a service's
// update runs on the engine, intent first. The update rolled back is
// saved before the service is asked (a command killed between finds the
// rollback the service started); refused, the record's update is the
// run's again; a rollback recorded under way is followed, never asked
// for twice; at its end the settings from before the run are back.
func TestManagedRollbackRecordedBeforeItIsAsked(t *testing.T) {
	t.Parallel()
	before := plan.UpdateSettings{Strategy: "SURGE", MaxUnavailable: "1"}
	for _, tc := range []struct {
		name            string
		from, id        string // the record's RollingBackFrom and UpdateID
		refuse          error
		wantAsked       int
		wantID, wantErr string
	}{
		{name: "asked after its intent is saved", id: "upd-1", wantAsked: 1, wantID: "rb-of-upd-1"},
		{name: "refused by the service", id: "upd-1", refuse: errors.New("409 conflict"), wantAsked: 1, wantID: "upd-1", wantErr: "409 conflict"},
		{name: "killed after the service answered: followed", from: "upd-1", id: "rb-of-upd-1", wantID: "rb-of-upd-1"},
		{name: "killed before the answer was saved: asked again", from: "upd-1", wantAsked: 1, wantID: "rb-of-upd-1"},
		{name: "its rollback cancelled since: asked again", from: "upd-1", id: "rb-cancelled", wantAsked: 1, wantID: "rb-of-upd-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newTestClient(imageNode("new-1", "z1", "new"))
			svc := &rollingBackService{managedFake: managedFake{None: cloud.None{Client: client}}, refuse: tc.refuse, cancelled: "rb-cancelled"}
			rec := &state.Record{NodeGroup: "ng", Phase: string(plan.PhaseUpdate), Managed: &state.ManagedRecord{
				Group: "pool", Before: before, Configured: true, RollingBackFrom: tc.from, UpdateID: tc.id}}
			save := func(context.Context) error {
				m := *rec.Managed
				svc.saved = &m
				return nil
			}
			_ = save(context.Background())
			p := managedTestPlan()
			got := runEngine(t, Config{Client: client, Plan: p, Provider: svc, Record: rec, Save: save, Start: plan.PhaseRollback, RollingBack: true}, nil)
			if tc.wantErr != "" {
				if got.err == nil || !strings.Contains(got.err.Error(), tc.wantErr) {
					t.Fatalf("run: %v, want %q\n%s", got.err, tc.wantErr, got.out)
				}
			} else if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			if svc.asked != tc.wantAsked {
				t.Errorf("the service was asked %d times, want %d", svc.asked, tc.wantAsked)
			}
			if a := svc.askedWith; a != nil && (a.RollingBackFrom != "upd-1" || a.UpdateID != "") {
				t.Errorf("record when the service was asked: %+v, want the rollback of upd-1 intended and no ID", a)
			}
			if m := svc.saved; m.UpdateID != tc.wantID {
				t.Errorf("saved update %q, want %q", m.UpdateID, tc.wantID)
			}
			restored := len(svc.set) == 1 && svc.set[0].Equal(before)
			if restored != (tc.wantErr == "") {
				t.Errorf("settings set %v; want the ones from before put back only after a rollback", svc.set)
			}
		})
	}
}
