package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// keptBlueRecord is a finished blue/green run from "demo" to green
// "demo-v4" that kept blue until kept.
func keptBlueRecord(done, kept time.Time) *state.Record {
	return &state.Record{NodeGroup: "demo", Strategy: "blue-green", State: state.StateFinished, FinishedAt: &done,
		Request: &plan.Request{NodeGroup: "demo", Provider: "aws", Strategy: "blue-green", Cloud: plan.CloudTarget{Image: "ami-new"},
			BlueGreen: plan.BlueGreenInput{BatchNodes: 1, BatchSoak: time.Minute, NodePoolSoak: time.Hour, KeepBlue: kept.Sub(done)}},
		Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Group: "demo"}, GreenRecord: state.GreenRecord{Green: "demo-v4"}},
		History: []state.Change{{Strategy: "blue-green", Before: state.Version{Provider: "aws", Version: "3"}, After: state.Version{Provider: "aws", Version: "4"},
			FinishedAt: done, KeptBlue: "demo", KeptUntil: &kept}}}
}

// TestRollbackToTheKeptBlue: within --keep-blue, the rollback of a
// finished blue/green run is a blue/green run from the group green became
// to the kept blue, scaled back up (no group made), without the soaks;
// past it, refused (exit 2) naming until when blue was kept; status says
// until when blue is kept and what follows.
func TestRollbackToTheKeptBlue(t *testing.T) {
	done := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	kept := done.Add(10 * time.Minute)
	for _, tc := range []struct {
		name       string
		now        time.Time
		end        state.KeptEnd
		wantErr    string
		wantStatus string
	}{
		{name: "within --keep-blue", now: done.Add(5 * time.Minute),
			wantStatus: `undo it with "kubectl nodeupgrade rollback demo" until 2026-11-01T12:10:00Z, which scales blue "demo", kept at 0 nodes, back up (--keep-blue); the next run after that deletes blue`},
		{name: "past --keep-blue", now: kept.Add(time.Second), wantErr: `(blue "demo" was kept until 2026-11-01T12:10:00Z, --keep-blue)`},
		{name: "deleted by a later run", now: done.Add(5 * time.Minute), end: state.KeptDeleted, wantErr: `strategy "blue-green", which leaves nothing to go back to`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := keptBlueRecord(done, kept)
			rec.History[0].KeptEnd = tc.end
			r, _, err := RollbackRequest(rec, tc.now, state.DefaultRollbackWindow)
			if got := Describe(rec, false, "", tc.now).Suggest(); got != tc.wantStatus {
				t.Errorf("status suggests %q, want %q", got, tc.wantStatus)
			}
			var usage *UsageError
			if tc.wantErr != "" {
				if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("rollback: %v, want a usage error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			bgr := r.BlueGreen
			if !bgr.Kept || bgr.GreenGroup != "demo" || bgr.BatchSoak != 0 || bgr.NodePoolSoak != 0 || bgr.KeepBlue != 10*time.Minute || r.Cloud.Group != "demo-v4" || r.Cloud.Version != "3" || r.Cloud.Image != "" {
				t.Errorf("rollback request %+v, want blue-green from demo-v4 to the kept demo at version 3, no soaks, keeping blue in turn", r.Request)
			}
		})
	}
}

// deletingCloud is a blue/green provider on group that records the groups
// it deletes.
type deletingCloud struct {
	cloud.BlueGreen
	group   string
	deleted []string
}

func (d *deletingCloud) GroupName() string { return d.group }

func (d *deletingCloud) DeleteGroup(_ context.Context, g string) error {
	d.deleted = append(d.deleted, g)
	return nil
}

// TestKeptBlueEnds: a kept blue is deleted by the next run once its time
// is over (not before, and never the group the run uses), and by the end
// of a later run that finished; the rollback that scaled it up marks it
// restored, not deleted.
func TestKeptBlueEnds(t *testing.T) {
	done := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	kept := done.Add(10 * time.Minute)
	later := state.Change{Strategy: "blue-green", FinishedAt: kept}
	for _, tc := range []struct {
		name        string
		now         time.Time
		group       string // the group the run opened
		req         plan.BlueGreenInput
		finished    bool // the run finished: its own change follows
		wantDeleted []string
		wantEnd     state.KeptEnd
	}{
		{name: "start within its time", now: done.Add(time.Minute), group: "demo-v4"},
		{name: "start past its time", now: kept, group: "demo-v4", wantDeleted: []string{"demo"}, wantEnd: state.KeptDeleted},
		{name: "start past its time, on the kept group", now: kept, group: "demo"},
		{name: "a later run finished", now: done.Add(time.Minute), group: "demo-v4", finished: true, wantDeleted: []string{"demo"}, wantEnd: state.KeptDeleted},
		{name: "the rollback to it finished", now: done.Add(time.Minute), group: "demo-v4", finished: true, req: plan.BlueGreenInput{GreenGroup: "demo", Kept: true}, wantEnd: state.KeptRestored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := keptBlueRecord(done, kept)
			provider := &deletingCloud{group: tc.group}
			pl := &Planned{Request: &Request{Request: plan.Request{BlueGreen: tc.req}}, Provider: provider}
			var err error
			if tc.finished {
				rec.AddChange(later)
				err = keptBlueSuperseded(context.Background(), pl, rec)
			} else {
				err = keptBlueOver(context.Background(), pl, rec, tc.now)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(provider.deleted, tc.wantDeleted) || rec.History[0].KeptEnd != tc.wantEnd {
				t.Errorf("deleted %v, kept blue's end %q; want %v, %q", provider.deleted, rec.History[0].KeptEnd, tc.wantDeleted, tc.wantEnd)
			}
		})
	}
}

// TestKeptBlueNotes: the plan says which kept blue a run deletes before it
// starts: one past its time, not one still in it nor one ended.
func TestKeptBlueNotes(t *testing.T) {
	done := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	kept := done.Add(10 * time.Minute)
	for _, tc := range []struct {
		name string
		now  time.Time
		end  state.KeptEnd
		want []string
	}{
		{name: "within its time", now: done.Add(time.Minute)},
		{name: "past its time", now: kept, want: []string{`blue "demo", kept at 0 nodes after the run that finished at 2026-11-01T12:00:00Z until 2026-11-01T12:10:00Z (--keep-blue), is deleted by the run before it starts`}},
		{name: "restored", now: kept, end: state.KeptRestored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := keptBlueRecord(done, kept)
			rec.History[0].KeptEnd = tc.end
			pl := &Planned{Request: &Request{}, Provider: &deletingCloud{group: "demo-v4"}}
			if got := keptBlueNotes(rec, pl, tc.now); !slices.Equal(got, tc.want) {
				t.Errorf("notes %q, want %q", got, tc.want)
			}
		})
	}
}
