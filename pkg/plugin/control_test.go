package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestCancelWhereNoSafePointIsLeft: a live run reads requests between
// phases; in its last phase (the scale-down, a rollback) none is left, so
// cancel is refused with the reason instead of answering yes and doing
// nothing. Elsewhere, and for a run whose process is gone, it is taken.
func TestCancelWhereNoSafePointIsLeft(t *testing.T) {
	for _, tc := range []struct {
		name   string
		phase  plan.Phase
		batch  int
		alive  bool
		cloud  bool
		code   int
		want   string // in stdout, or in stderr when refused
		not    string // nowhere in the output
		stored bool   // the request is left for the run
	}{
		// rollback is refused once the run has ended: the way back is a
		// run towards the version before, with the provider's flag.
		{name: "live, scale-down", phase: plan.PhaseScaleDown, batch: 5, alive: true, cloud: true, code: ExitUsage,
			want: `is in phase ScaleDown, after which it has no safe point to pause at: it ends on its own; follow it with "kubectl nodeupgrade status -w ng", then undo it with "kubectl nodeupgrade run ng --instance-template demo-v1"`, not: "rollback"},
		{name: "live, rollback", phase: plan.PhaseRollback, alive: true, code: ExitUsage, want: "is in phase Rollback, after which it has no safe point", not: "undo"},
		{name: "live, last batch's recovery, provider none", phase: plan.PhaseRecover, batch: 5, alive: true, code: ExitUsage, want: "is in phase Recover"},
		{name: "live, last batch's recovery, before the scale-down", phase: plan.PhaseRecover, batch: 5, alive: true, cloud: true, code: ExitOK, want: "to pause at its next safe point", stored: true},
		{name: "live, draining", phase: plan.PhaseDrain, batch: 2, alive: true, code: ExitOK, want: "to pause at its next safe point", stored: true},
		{name: "gone, scale-down", phase: plan.PhaseScaleDown, batch: 5, cloud: true, code: ExitOK, want: "paused the run", stored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := recordFor("ng")
			rec.Phase, rec.Batch = string(tc.phase), tc.batch
			if tc.cloud {
				rec.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "gce", Group: "ng-mig", FromVersion: "demo-v1", TargetVersion: "demo-v2"}}
			}
			var alive []string
			if tc.alive {
				alive = []string{"ng"}
			}
			client := statusFixture(t, []*state.Record{rec}, alive...)
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			o := &ControlOptions{IOStreams: streams, action: "cancel", client: client, NodeGroup: "ng", StateNamespace: state.DefaultNamespace}
			code := PrintError(errOut, o.Run(context.Background()))
			got := out.String() + errOut.String()
			if code != tc.code || !strings.Contains(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
				t.Errorf("exit %d: %s; want exit %d with %q and without %q", code, got, tc.code, tc.want, tc.not)
			}
			req, err := (&state.Requests{Store: &state.Store{Client: client, Namespace: state.DefaultNamespace}, Group: "ng"}).Pending(context.Background())
			if err != nil || (req == state.RequestCancel) != tc.stored {
				t.Errorf("pending request %q (%v); want one stored: %v", req, err, tc.stored)
			}
		})
	}
}

// TestControlsStopOnUnreadableLockOrRecord: a control that cannot read
// the group's lock or record says so and changes nothing; it never takes
// the run for stopped ("paused the run") or absent ("no unfinished run").
func TestControlsStopOnUnreadableLockOrRecord(t *testing.T) {
	for _, tc := range []struct {
		name, action, resource string
		want                   string
	}{
		{name: "cancel, lock unreadable", action: "cancel", resource: "leases", want: `error when reading the lock of "ng": etcdserver: request timed out`},
		{name: "cancel, record unreadable", action: "cancel", resource: "configmaps", want: `error when reading the record of "ng": etcdserver: request timed out`},
		{name: "resume, lock unreadable", action: "resume", resource: "leases", want: `error when reading the lock of "ng"`},
		{name: "complete, lock unreadable", action: "complete", resource: "leases", want: `error when reading the lock of "ng"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := recordFor("ng")
			rec.Phase, rec.Batch = string(plan.PhaseDrain), 2
			client := statusFixture(t, []*state.Record{rec}, "ng").(*fake.Clientset)
			client.ClearActions()
			client.PrependReactor("get", tc.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("etcdserver: request timed out")
			})
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			o := &ControlOptions{IOStreams: streams, action: tc.action, client: client, NodeGroup: "ng", StateNamespace: state.DefaultNamespace, Yes: true}
			code := PrintError(errOut, o.Run(context.Background()))
			if code != ExitFailure || !strings.Contains(errOut.String(), tc.want) || out.Len() > 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d with %q and nothing done", code, out, errOut, ExitFailure, tc.want)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
					t.Errorf("the control wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}
