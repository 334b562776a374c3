package state

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestAddChangeKeepsTheLatest: History keeps MaxHistory runs, the latest
// last, so LastChange is the run a rollback undoes.
func TestAddChangeKeepsTheLatest(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		runs      int
		wantLen   int
		wantFirst string
	}{
		{"none", 0, 0, ""},
		{"one", 1, 1, "1"},
		{"as many as kept", MaxHistory, MaxHistory, "1"},
		{"more than kept: the oldest go", MaxHistory + 3, MaxHistory, "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Record
			for i := 1; i <= tc.runs; i++ {
				r.AddChange(Change{After: Version{Version: fmt.Sprint(i)}, FinishedAt: t0.Add(time.Duration(i) * time.Hour)})
			}
			if len(r.History) != tc.wantLen {
				t.Fatalf("History has %d runs, want %d", len(r.History), tc.wantLen)
			}
			last, ok := r.LastChange()
			if ok != (tc.runs > 0) {
				t.Fatalf("LastChange ok=%v with %d runs", ok, tc.runs)
			}
			if !ok {
				return
			}
			if r.History[0].After.Version != tc.wantFirst || last.After.Version != fmt.Sprint(tc.runs) {
				t.Errorf("History runs %s..%s, want %s..%d", r.History[0].After.Version, last.After.Version, tc.wantFirst, tc.runs)
			}
		})
	}
}

// TestRollbackTarget: a rollback goes back to the version before the
// latest finished run, within the window only, and says why not in one
// line naming the window and its flag.
func TestRollbackTarget(t *testing.T) {
	finished := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	lt := Version{Provider: "aws", Group: "demo", Template: "demo-lt", TemplateKind: "launch template"}
	before, after := lt, lt
	before.Version, after.Version = "1", "2"
	for _, tc := range []struct {
		name    string
		history []Change
		now     time.Time
		wantErr string
	}{
		{"no finished run", nil, finished, "no finished run of the group is recorded"},
		{"the version before was not recorded", []Change{{After: after, FinishedAt: finished}}, finished.Add(time.Hour), "did not record the version before it"},
		{"within the window", []Change{{Before: before, After: after, FinishedAt: finished}}, finished.Add(DefaultRollbackWindow), ""},
		{"past the window", []Change{{Before: before, After: after, FinishedAt: finished}}, finished.Add(DefaultRollbackWindow + time.Second), "more than the rollback window of 168h0m0s ago (--rollback-window)"},
		{"the latest run counts", []Change{{Before: after, After: before, FinishedAt: finished.Add(-30 * 24 * time.Hour)}, {Before: before, After: after, FinishedAt: finished}}, finished.Add(time.Hour), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Record{History: tc.history}
			c, err := r.RollbackTarget(tc.now, DefaultRollbackWindow)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Before.Version != "1" || c.Before.String() != `launch template "demo-lt" version 1` {
				t.Errorf("rolls back to %s, want launch template \"demo-lt\" version 1", c.Before)
			}
		})
	}
}

// TestHistoryRoundTrip: the history survives the record's JSON, as the
// next run reads it from the ConfigMap.
func TestHistoryRoundTrip(t *testing.T) {
	until := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	r := Record{NodeGroup: "demo", From: &Version{Version: "3"}, History: []Change{{
		Strategy: "surge", FinishedAt: until.Add(-time.Hour), KeptBlue: "demo", KeptUntil: &until,
		Before: Version{Provider: "gce", Template: "tpl-1", TemplateKind: "instance template"},
		After:  Version{Provider: "gce", Template: "tpl-2", Labels: map[string]string{"k": "v"}},
	}}}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.History, r.History) || !reflect.DeepEqual(back.From, r.From) {
		t.Errorf("history after JSON %+v, want %+v", back.History, r.History)
	}
}
