package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// refusingUpdater refuses every write of settings, as AKS's Configure does
// on a pool left Canceled or Failed; the rest of the interface is unused.
type refusingUpdater struct {
	cloud.ManagedUpdater
	err error
}

func (u refusingUpdater) Configure(context.Context, plan.UpdateSettings) error { return u.err }

// TestRestoreSaysSettingsBackOnlyOnceWritten: abort after cancel of an AKS
// upgrade whose run changed the settings is refused by the service; it
// must not have said the settings went back, and the record still says
// the run's are on the group.
func TestRestoreSaysSettingsBackOnlyOnceWritten(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		wantLine bool
	}{
		{"refused", errors.New("cannot set the upgrade settings"), false},
		{"written", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			rec := &state.Record{NodeGroup: "pool", Managed: &state.ManagedRecord{Configured: true, UpdateID: "op-1", WriteFinishes: true}}
			r := &managedRun{toolkit: toolkit{cfg: &Config{Record: rec, Plan: &plan.Plan{Managed: &plan.ManagedPlan{Service: "AKS agent pool"}}},
				save: func(context.Context) error { return nil },
				logf: func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }}}
			err := r.restoreService(context.Background(), refusingUpdater{err: tc.err})
			said := strings.Contains(strings.Join(log, "\n"), "back to")
			if (err == nil) != (tc.err == nil) || said != tc.wantLine || rec.Managed.Configured == tc.wantLine {
				t.Errorf("err %v, log %q, configured %v", err, log, rec.Managed.Configured)
			}
		})
	}
}

// TestServiceFailureNamesResumeWhereAbortCannotWrite: exit 3's message
// after AKS's upgrade failed with the run's settings on the pool names
// resume, not abort (which writes nothing to a Failed pool); elsewhere it
// names abort.
func TestServiceFailureNamesResumeWhereAbortCannotWrite(t *testing.T) {
	for _, stuck := range []bool{true, false} {
		t.Run(fmt.Sprint("stuck=", stuck), func(t *testing.T) {
			f := &ServiceUpdateFailure{Service: "AKS agent pool", ID: "op-1", Group: "pool", SettingsStuck: stuck}
			msg := f.Error()
			if strings.Contains(msg, `"kubectl nodeupgrade abort pool"`) == stuck || strings.Contains(msg, `"kubectl nodeupgrade resume pool"`) != stuck {
				t.Errorf("%q", msg)
			}
		})
	}
}
