package session

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestRunHistory: a run records what the group launched when it set out
// (not what a re-run's plan reads after the run changed the group), adds
// the change once it finished on its target, and the next run's record
// carries the history.
func TestRunHistory(t *testing.T) {
	finished := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	cloudPlan := func(current, target string) *Planned {
		return &Planned{Plan: &plan.Plan{Strategy: "eks", Cloud: &plan.CloudPlan{
			GroupID:  plan.GroupID{Provider: "aws", Group: "demo", Template: "demo-lt", TemplateKind: "launch template"},
			Launches: plan.Launches{CurrentVersion: current, TargetVersion: target},
		}}, Request: &Request{}}
	}
	for _, tc := range []struct {
		name       string
		attempts   []*Planned // each attempt's plan, the last one finishing
		state      state.RunState
		aborted    bool
		created    string // the version the run created (rec.Cloud.TargetVersion)
		wantBefore string
		wantAfter  string
		wantAdded  bool
	}{
		{"one attempt", []*Planned{cloudPlan("1", "2")}, state.StateFinished, false, "", "1", "2", true},
		{"a re-run after the group was changed", []*Planned{cloudPlan("1", "2"), cloudPlan("2", "2")}, state.StateFinished, false, "", "1", "2", true},
		{"a version the run created", []*Planned{cloudPlan("4", plan.NewVersion)}, state.StateFinished, false, "5", "4", "5", true},
		{"failed", []*Planned{cloudPlan("1", "2")}, state.StateFailed, false, "", "", "", false},
		{"rolled back in place", []*Planned{cloudPlan("1", "2")}, state.StateRolledBack, false, "", "", "", false},
		{"aborted", []*Planned{cloudPlan("1", "2")}, state.StateFinished, true, "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := &state.Record{History: []state.Change{{FinishedAt: finished.Add(-48 * time.Hour)}}, FinishedAt: &finished}
			rec := nextRecord(prev, "demo", finished)
			for _, pl := range tc.attempts {
				recordFrom(rec, pl)
			}
			if tc.created != "" {
				rec.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{TargetVersion: tc.created}}
			}
			rec.State, rec.FinishedAt, rec.Strategy = tc.state, &finished, "eks"
			if tc.aborted {
				rec.AbortedAt = &finished
			}
			recordChange(rec, tc.attempts[len(tc.attempts)-1])
			if want := 1 + btoi(tc.wantAdded); len(rec.History) != want {
				t.Fatalf("history has %d runs, want %d (the earlier run carried over)", len(rec.History), want)
			}
			if !tc.wantAdded {
				return
			}
			last, _ := rec.LastChange()
			if last.Before.Version != tc.wantBefore || last.After.Version != tc.wantAfter || last.Before.Template != "demo-lt" || !last.FinishedAt.Equal(finished) {
				t.Errorf("change %+v, want %s -> %s of demo-lt at %s", last, tc.wantBefore, tc.wantAfter, finished)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRollbackRequest: the rollback of a finished run is its recorded
// request towards the recorded version before it, by number (not the
// image, which would make another version), without the finished run's
// plan file or its --not-after that has passed.
func TestRollbackRequest(t *testing.T) {
	done := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	rec := &state.Record{NodeGroup: "demo", Strategy: "surge", State: state.StateFinished, FinishedAt: &done,
		Request: &plan.Request{NodeGroup: "demo", Provider: "aws", Strategy: "surge", NotAfter: "2026-11-01T13:00:00Z", PlanFile: "p.json",
			Cloud: plan.CloudTarget{Image: "ami-new"}},
		History: []state.Change{{Before: state.Version{Provider: "aws", Version: "3"}, After: state.Version{Provider: "aws", Version: "4"}, FinishedAt: done}}}
	r, c, err := RollbackRequest(rec, done.Add(time.Hour), state.DefaultRollbackWindow)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cloud.Version != "3" || r.Cloud.Image != "" || r.PlanFile != "" || r.NotAfter != "" || r.Strategy != "surge" || c.After.Version != "4" {
		t.Errorf("rollback request %+v (change %+v), want surge towards version 3 with no image, plan file or window", r.Request, c)
	}
	_, _, err = RollbackRequest(rec, done.Add(state.DefaultRollbackWindow+time.Minute), state.DefaultRollbackWindow)
	var usage *UsageError
	if !errors.As(err, &usage) {
		t.Errorf("past the window: %v, want a usage error", err)
	}
	// Blue is gone once a blue/green run finished.
	rec.Strategy = "blue-green"
	if _, _, err = RollbackRequest(rec, done.Add(time.Hour), state.DefaultRollbackWindow); !errors.As(err, &usage) || !strings.Contains(err.Error(), `strategy "blue-green"`) {
		t.Errorf("a finished blue/green run: %v, want a usage error naming the strategy", err)
	}
}

// TestRollbackRequestKeepsTheRunsWindows: the rollback of a finished run
// plans in the run's maintenance windows: its --window always, its
// --not-before and --not-after while they are ahead; one passed would
// refuse the rollback for nothing.
func TestRollbackRequestKeepsTheRunsWindows(t *testing.T) {
	done := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	now := done.Add(time.Hour)
	sat := []string{"Sat-Sun 22:00-06:00 Europe/Berlin"}
	for _, tc := range []struct {
		name                  string
		windows               []string
		notBefore, notAfter   string
		wantBefore, wantAfter string
		wantWindows           []string
	}{
		{name: "no window: none", wantWindows: nil},
		{name: "--window kept", windows: sat, wantWindows: sat},
		{name: "--not-after ahead kept", windows: sat, notAfter: "2026-11-08T00:00:00Z", wantWindows: sat, wantAfter: "2026-11-08T00:00:00Z"},
		{name: "--not-after passed dropped", notAfter: "2026-11-01T12:30:00Z"},
		{name: "--not-before passed dropped, ahead kept", notBefore: "2026-10-31", notAfter: "2026-12-01", wantAfter: "2026-12-01"},
		{name: "--not-before ahead kept", notBefore: "2026-11-02T22:00:00+01:00", wantBefore: "2026-11-02T22:00:00+01:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &state.Record{NodeGroup: "demo", Strategy: "eks", State: state.StateFinished, FinishedAt: &done,
				Request: &plan.Request{NodeGroup: "demo", Provider: "aws", Strategy: "eks", Windows: tc.windows, NotBefore: tc.notBefore, NotAfter: tc.notAfter},
				History: []state.Change{{Before: state.Version{Provider: "aws", Version: "3"}, After: state.Version{Provider: "aws", Version: "4"}, FinishedAt: done}}}
			r, _, err := RollbackRequest(rec, now, state.DefaultRollbackWindow)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Windows, tc.wantWindows) || r.NotBefore != tc.wantBefore || r.NotAfter != tc.wantAfter {
				t.Errorf("windows %q, not before %q, not after %q; want %q, %q, %q", r.Windows, r.NotBefore, r.NotAfter, tc.wantWindows, tc.wantBefore, tc.wantAfter)
			}
			if _, err := schedule(r.Request); err != nil {
				t.Errorf("the rollback's schedule: %v", err)
			}
		})
	}
}

// TestStatusStatesTheRollbackWindow: status of a finished run that
// rollback can undo says until when; past the window, or for a run
// rollback cannot undo, it suggests nothing.
func TestStatusStatesTheRollbackWindow(t *testing.T) {
	done := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	finished := func(strategy string) *state.Record {
		return &state.Record{NodeGroup: "demo", Strategy: strategy, State: state.StateFinished, FinishedAt: &done,
			Request: &plan.Request{NodeGroup: "demo", Provider: "aws", Strategy: strategy},
			History: []state.Change{{Before: state.Version{Version: "3"}, After: state.Version{Version: "4"}, FinishedAt: done}}}
	}
	for _, tc := range []struct {
		name string
		rec  *state.Record
		now  time.Time
		want string
	}{
		{"within the window", finished("surge"), done.Add(time.Hour), `undo it with "kubectl nodeupgrade rollback demo" until 2026-11-08T12:00:00Z (--rollback-window 168h0m0s)`},
		{"past the window", finished("surge"), done.Add(8 * 24 * time.Hour), ""},
		{"blue/green: blue is gone", finished("blue-green"), done.Add(time.Hour), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Describe(tc.rec, false, "", tc.now).Suggest(); got != tc.want {
				t.Errorf("suggests %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRollbackOfAServiceGroup: a service's group (an EKS managed node
// group) is rolled back in place only to a version its provider said the
// group can be pointed back at (a launch template version, recorded from
// the plan's Previous); where the service refuses, the rollback is refused
// with the provider's reason and way back; a version the plan's Previous
// names is what the run records as before, of its template.
func TestRollbackOfAServiceGroup(t *testing.T) {
	done := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pl := &Planned{Plan: &plan.Plan{Strategy: "eks", Cloud: &plan.CloudPlan{
		GroupID:  plan.GroupID{Provider: "aws", Group: "demo", Template: "lt-eks-copy", TemplateKind: "launch template"},
		Launches: plan.Launches{CurrentVersion: "7", TargetVersion: "8", Previous: "3", PreviousTemplate: "lt-user"},
	}}, Request: &Request{}}
	before, _ := versionsOf(pl)
	if before.Version != "3" || before.Template != "lt-user" || !before.InPlace {
		t.Errorf("recorded before %+v, want version 3 of lt-user, in place", before)
	}
	for _, tc := range []struct {
		name    string
		before  state.Version
		refused string
	}{
		{"a launch template version", before, ""},
		{"a release EKS refuses", state.Version{Provider: "aws", Version: "1.31/1.31.1-20250101", BackBy: "EKS does not roll managed node group \"demo\" back"}, "EKS does not roll managed node group"},
		{"recorded before providers said", state.Version{Provider: "aws", Version: "1.31/1.31.1-20250101"}, "leaves nothing to go back to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &state.Record{NodeGroup: "demo", Strategy: "eks", State: state.StateFinished, FinishedAt: &done, Managed: &state.ManagedRecord{Group: "demo"},
				Request: &plan.Request{NodeGroup: "demo", Provider: "aws", Strategy: "eks", Cloud: plan.CloudTarget{Image: "ami-new"}},
				History: []state.Change{{Strategy: "eks", Before: tc.before, After: state.Version{Provider: "aws", Version: "4"}, FinishedAt: done}}}
			r, _, err := RollbackRequest(rec, done.Add(time.Hour), state.DefaultRollbackWindow)
			var usage *UsageError
			switch {
			case tc.refused == "" && err != nil:
				t.Fatal(err)
			case tc.refused == "" && (r.Cloud.Version != "3" || r.Cloud.Image != ""):
				t.Errorf("rollback request %+v, want launch template version 3, no image", r.Cloud)
			case tc.refused != "" && (!errors.As(err, &usage) || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("rollback: %v, want a usage error with %q", err, tc.refused)
			}
		})
	}
}
