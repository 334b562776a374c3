package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// is not asked as "Upgrade 0 nodes in 0 batches?".
// TestRunQuestion: the confirmation says what the run will do; a rollback
// and the end of an interrupted run say so.
func TestRunQuestion(t *testing.T) {
	t.Parallel()
	finished := time.Now()
	planOf := func(outdated, batches int) *plan.Plan {
		return &plan.Plan{Nodes: plan.NodeCounts{Outdated: outdated}, Batches: make([]plan.Batch, batches)}
	}
	deferring := func(p *plan.Plan, n int) *plan.Plan {
		p.Nodes.Deferred = n
		return p
	}
	inPlace := func() *state.Record {
		return &state.Record{NodeGroup: "ng", Phase: "Drain", Done: []string{"a", "b", "c"},
			Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{FromVersion: "1", TargetVersion: "2"}}}
	}
	for _, tc := range []struct {
		name     string
		p        *plan.Plan
		rec      *state.Record
		rollback bool   // the rollback command of a blue/green run
		version  string // --launch-template-version
		want     string
	}{
		{name: "a new run", p: planOf(9, 5), want: "Upgrade 9 nodes in 5 batches?"},
		{name: "one node", p: planOf(1, 1), want: "Upgrade 1 node in 1 batch?"},
		{name: "after a finished run", p: planOf(9, 5), rec: &state.Record{NodeGroup: "ng", Done: []string{"x"}, FinishedAt: &finished}, want: "Upgrade 9 nodes in 5 batches?"},
		{name: "re-run after Ctrl-C", p: planOf(6, 3), rec: &state.Record{NodeGroup: "ng", Done: []string{"a", "b", "c"}},
			want: "Upgrade the 6 nodes left in 3 batches (3 nodes replaced by the interrupted run)?"},
		{name: "re-run after Ctrl-C in the scale-down", p: planOf(0, 0), rec: &state.Record{NodeGroup: "ng", Phase: "ScaleDown", Done: make([]string, 9)},
			want: `Finish the interrupted run on "ng" from phase ScaleDown (9 nodes already replaced, none left to upgrade)?`},
		{name: "blue/green rollback", p: planOf(3, 1), rollback: true, rec: &state.Record{NodeGroup: "ng", Cloud: &state.CloudRecord{GreenRecord: state.GreenRecord{Green: "ng-green", GreenCreated: true}}},
			want: `Roll back the run on "ng": put blue's 3 nodes back in service, then drain green "ng-green" and delete it?`},
		{name: "blue/green rollback of a given green", p: planOf(0, 0), rollback: true, rec: &state.Record{NodeGroup: "ng", Cloud: &state.CloudRecord{GreenRecord: state.GreenRecord{Green: "ng-green"}}},
			want: `Roll back the run on "ng": put blue back in service, then drain green "ng-green"?`},
		{name: "rollback in place", p: planOf(3, 2), version: "1", rec: inPlace(),
			want: `Roll back the run on "ng": replace the 3 nodes on version 2 with version 1, in 2 batches (nodes never upgraded are not touched)?`},
		{name: "rollback in place with surplus nodes the scale-down removes", p: deferring(planOf(1, 1), 2), version: "1", rec: inPlace(),
			want: `Roll back the run on "ng": replace the 1 node on version 2 with version 1, in 1 batch, and remove the 2 other nodes on version 2 in the scale-down to the sizes before the run, unreplaced (nodes never upgraded are not touched)?`},
		{name: "rollback in place of a scale-up alone", p: deferring(planOf(0, 0), 2), version: "1", rec: inPlace(),
			want: `Roll back the run on "ng": point the group back at version 1 and remove the 2 nodes on version 2 in the scale-down to the sizes before the run, unreplaced?`},
		{name: "rollback in place before any node was upgraded", p: planOf(0, 0), version: "1", rec: inPlace(),
			want: `Roll back the run on "ng": no node runs version 2 yet; point the group back at version 1 and restore its sizes?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Request{Request: plan.Request{NodeGroup: "ng", Cloud: plan.CloudTarget{Version: tc.version}}, Rollback: tc.rollback}
			if got := question(r, tc.p, tc.rec); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestRollsBackInPlace: a request for the version the group ran before an
// unfinished run is its rollback.
func TestRollsBackInPlace(t *testing.T) {
	t.Parallel()
	finished := time.Now()
	rec := func(mutate func(*state.Record)) *state.Record {
		r := &state.Record{Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{FromVersion: "1", TargetVersion: "2"}}}
		if mutate != nil {
			mutate(r)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		rec  *state.Record
		req  plan.CloudTarget
		want bool
	}{
		{"back to the version before", rec(nil), plan.CloudTarget{Version: "1"}, true},
		{"on to the target", rec(nil), plan.CloudTarget{Version: "2"}, false},
		{"a new image", rec(nil), plan.CloudTarget{Image: "ami-1"}, false},
		{"no record", nil, plan.CloudTarget{Version: "1"}, false},
		{"a finished run", rec(func(r *state.Record) { r.FinishedAt = &finished }), plan.CloudTarget{Version: "1"}, false},
		{"provider none", rec(func(r *state.Record) { r.Cloud = nil }), plan.CloudTarget{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := rollsBackInPlace(tc.rec, plan.Request{Cloud: tc.req}); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEarlierDone: a re-run counts the nodes of the attempts before it; a
// rollback counts its own, not the upgrade's.
func TestEarlierDone(t *testing.T) {
	t.Parallel()
	from := func(n int) *int { return &n }
	for _, tc := range []struct {
		name        string
		rec         state.Record
		rollingBack bool
		want        []string
		wantFrom    *int
	}{
		{name: "a new run", rec: state.Record{}, want: nil},
		{name: "re-run after Ctrl-C", rec: state.Record{Done: []string{"a", "b"}}, want: []string{"a", "b"}},
		{name: "a rollback begins", rec: state.Record{Done: []string{"a", "b"}}, rollingBack: true, want: []string{}, wantFrom: from(2)},
		{name: "a rollback resumed", rec: state.Record{Done: []string{"a", "b", "x"}, RollbackFrom: from(2)}, rollingBack: true, want: []string{"x"}, wantFrom: from(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := earlierDone(&tc.rec, tc.rollingBack)
			if !slices.Equal(got, tc.want) {
				t.Errorf("earlier %q, want %q", got, tc.want)
			}
			if (tc.rec.RollbackFrom == nil) != (tc.wantFrom == nil) || tc.wantFrom != nil && *tc.rec.RollbackFrom != *tc.wantFrom {
				t.Errorf("RollbackFrom %v, want %v", tc.rec.RollbackFrom, tc.wantFrom)
			}
		})
	}
}

// TestRefusePendingCancel: a cancel pauses an unfinished run until resume,
// rollback or abort; one that reached the run only as it finished is
// dropped, or no later run of the group could start.
func TestRefusePendingCancel(t *testing.T) {
	t.Parallel()
	finished := time.Now()
	for _, tc := range []struct {
		name      string
		finished  bool
		request   string
		wantErr   string // "" for none
		wantAfter string // the request pending afterwards
	}{
		{name: "nothing pending", wantAfter: ""},
		{name: "a paused run", request: state.RequestCancel, wantErr: `cannot run: node group "ng" is paused (cancel) in phase Drain; continue with "kubectl nodeupgrade resume ng"`, wantAfter: state.RequestCancel},
		{name: "a rollback for the next run", request: state.RequestRollback, wantAfter: state.RequestRollback},
		{name: "a cancel that came as the run finished", finished: true, request: state.RequestCancel, wantAfter: ""},
		{name: "a complete that came as the run finished", finished: true, request: state.RequestComplete, wantAfter: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Session{Client: fake.NewClientset(), StateNamespace: state.DefaultNamespace}
			store := s.store()
			rec := &state.Record{NodeGroup: "ng", Phase: "Drain"}
			if tc.finished {
				rec.Phase, rec.FinishedAt = "Done", &finished
			}
			ctx := context.Background()
			if err := store.Save(ctx, rec); err != nil {
				t.Fatal(err)
			}
			requests := &state.Requests{Store: store, Group: "ng"}
			if tc.request != "" {
				if err := requests.Send(ctx, tc.request); err != nil {
					t.Fatal(err)
				}
			}
			loaded, err := store.Load(ctx, "ng")
			if err != nil {
				t.Fatal(err)
			}
			err = s.Controls().RefusePendingCancel(ctx, "ng", loaded)
			var usage *UsageError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !errors.As(err, &usage)):
				t.Fatalf("got %v, want %q... as a usage error (exit 2)", err, tc.wantErr)
			}
			if after, err := requests.Pending(ctx); err != nil || after != tc.wantAfter {
				t.Errorf("pending afterwards %q (%v), want %q", after, err, tc.wantAfter)
			}
		})
	}
}

// TestRefuseBlockersSaysWhatLiftsEach: the closing advice never offers a
// flag that cannot start the run: --ignore-check and --force lift the pod
// checks, not machine-left-running.
func TestRefuseBlockersSaysWhatLiftsEach(t *testing.T) {
	machines := check.Finding{Check: check.CheckMachineLeftRunning, Severity: check.Blocker, Kind: "NodeGroup", Name: "ng", Message: "m", Fix: "f"}
	pdb := check.Finding{Check: check.CheckPDBZeroDisruptions, Severity: check.Blocker, Kind: "PodDisruptionBudget", Namespace: "a", Name: "p", Message: "m", Fix: "f"}
	permission := check.Finding{Check: check.CheckMissingPermission, Severity: check.Blocker, Kind: "Permission", Name: "a:B", Message: "m", Fix: "f"}
	for _, tc := range []struct {
		name     string
		findings []check.Finding
		want     string
		not      string
	}{
		{"a pod check alone", []check.Finding{pdb}, "or use --ignore-check pdb-zero-disruptions or --force", "leave-machines-running"},
		{"machines left running alone", []check.Finding{machines}, "", "--force"},
		{"both", []check.Finding{machines, pdb}, "or use --ignore-check pdb-zero-disruptions or --force (machine-left-running only yields to --leave-machines-running or --delete-node=false)", ""},
		{"two of one pod check", []check.Finding{pdb, pdb}, "or use --ignore-check pdb-zero-disruptions or --force", "leave-machines-running"},
		{"a missing permission", []check.Finding{permission}, "or use --ignore-check missing-permission", "--force"},
		{"a missing permission and a pod check", []check.Finding{permission, pdb}, "--ignore-check missing-permission --ignore-check pdb-zero-disruptions (--force lifts pdb-zero-disruptions only)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Request{}).RefuseBlockers(&plan.Plan{Findings: tc.findings}, "refusing to run")
			if err == nil {
				t.Fatal("not refused")
			}
			if !strings.Contains(err.Error(), tc.want) || tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Errorf("got %q, want %q and not %q", err, tc.want, tc.not)
			}
		})
	}
}

// TestFollowsServiceUpdateOnlyForAnUpdateUnderWay: a re-run skips the
// audit's refusal only where the record says the service's update goes
// on; a new run, a finished one, one before the update started and a
// rollback are audited.
func TestFollowsServiceUpdateOnlyForAnUpdateUnderWay(t *testing.T) {
	finished := time.Now()
	managed := &plan.ManagedPlan{Service: "EKS managed node group"}
	for _, tc := range []struct {
		name string
		pl   *Planned
		rec  *state.Record
	}{
		{"no record", &Planned{Plan: &plan.Plan{Managed: managed}, Request: &Request{}}, nil},
		{"a finished run", &Planned{Plan: &plan.Plan{Managed: managed}, Request: &Request{}}, &state.Record{FinishedAt: &finished, Managed: &state.ManagedRecord{UpdateID: "u1"}}},
		{"no update started", &Planned{Plan: &plan.Plan{Managed: managed}, Request: &Request{}}, &state.Record{Managed: &state.ManagedRecord{}}},
		{"not a service's update now", &Planned{Plan: &plan.Plan{}, Request: &Request{}}, &state.Record{Managed: &state.ManagedRecord{UpdateID: "u1"}}},
		{"a rollback", &Planned{Plan: &plan.Plan{Managed: managed}, Request: &Request{Rollback: true}}, &state.Record{Managed: &state.ManagedRecord{UpdateID: "u1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if followsServiceUpdate(tc.pl, tc.rec) {
				t.Error("follows without auditing; want the audit's refusal")
			}
		})
	}
}

// runningService is a group whose service has the update running under
// way, or none where running is "".
type runningService struct {
	cloud.None
	running string
	asked   int
}

func (s *runningService) RunningUpdate(context.Context) (string, error) {
	s.asked++
	return s.running, nil
}

// TestFindStartedUpdate: a run killed after it started the service's
// update, before it recorded the update's ID, left its phase and the
// nodes the update replaces; the next run finds the update under way and
// follows it (its plan counts the recorded nodes, its audit is skipped)
// instead of planning and auditing the service's drain. Nothing is
// adopted where the record says the run had not set out to start one.
func TestFindStartedUpdate(t *testing.T) {
	finished := time.Now()
	update := string(plan.PhaseUpdate)
	for _, tc := range []struct {
		name, running string
		rec           *state.Record
		want          string
		asked         bool
	}{
		{"killed before the ID was recorded", "u2", &state.Record{Phase: update, Managed: &state.ManagedRecord{Nodes: []string{"a"}}}, "u2", true},
		{"killed before the update started", "", &state.Record{Phase: update, Managed: &state.ManagedRecord{Nodes: []string{"a"}}}, "", true},
		{"the ID recorded", "u2", &state.Record{Phase: update, Managed: &state.ManagedRecord{Nodes: []string{"a"}, UpdateID: "u1"}}, "u1", false},
		{"before the update phase", "u2", &state.Record{Phase: string(plan.PhaseConfigure), Managed: &state.ManagedRecord{Nodes: []string{"a"}}}, "", false},
		{"a record without the nodes", "u2", &state.Record{Phase: update, Managed: &state.ManagedRecord{}}, "", false},
		{"a finished run", "u2", &state.Record{Phase: update, FinishedAt: &finished, Managed: &state.ManagedRecord{Nodes: []string{"a"}}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &runningService{running: tc.running}
			if err := FindStartedUpdate(context.Background(), svc, tc.rec); err != nil {
				t.Fatal(err)
			}
			if got := tc.rec.Managed.UpdateID; got != tc.want || (svc.asked > 0) != tc.asked {
				t.Errorf("update ID %q after %d lookups, want %q (looked up: %v)", got, svc.asked, tc.want, tc.asked)
			}
			if f := followedUpdate(&Request{}, tc.rec); (f != nil) != (tc.want != "" && tc.rec.FinishedAt == nil) {
				t.Errorf("followed update %+v, want one only for an update found", f)
			}
		})
	}
}

// TestNextRecordKeepsAHeldPolicy: after an abort that had to leave the
// group's updates held, the next run's record starts from how the group
// updated itself before the aborted run, not from the hold.
func TestNextRecordKeepsAHeldPolicy(t *testing.T) {
	now := time.Now()
	held := &state.Record{NodeGroup: "ng", Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "gce", Group: "mig", TargetVersion: "v2", FromVersion: "v1"}}}
	held.Cloud.UpdatesWere = "mig=PROACTIVE"
	released := &state.Record{NodeGroup: "ng", Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "gce", Group: "mig"}}}
	for _, tc := range []struct {
		name string
		prev *state.Record
		want string
	}{
		{"no run before", nil, ""},
		{"a run that gave the policy back", released, ""},
		{"an abort that left it held", held, "mig=PROACTIVE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := nextRecord(tc.prev, "ng", now)
			got := ""
			if rec.Cloud != nil {
				got = rec.Cloud.UpdatesWere
				if rec.Cloud.Group != "mig" || rec.Cloud.TargetVersion != "" || rec.Cloud.FromVersion != "" {
					t.Errorf("carried over %+v: want the group alone", rec.Cloud.GroupRecord)
				}
			}
			if got != tc.want || rec.NodeGroup != "ng" || !rec.StartedAt.Equal(now) {
				t.Errorf("UpdatesWere %q, want %q (record %+v)", got, tc.want, rec)
			}
		})
	}
}
