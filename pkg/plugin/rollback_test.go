package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestRollbackAfterFinished: rollback of a finished run goes back to the
// version the record says the group ran before, within --rollback-window;
// past it, or with no version recorded, it is refused in one line (exit
// 2) and nothing is written. A rollback that gets past the refusals asks
// for confirmation as a run does.
func TestRollbackAfterFinished(t *testing.T) {
	lt := state.Version{Provider: "aws", Group: "demo-asg", Template: "demo-lt", TemplateKind: "launch template"}
	before, after := lt, lt
	before.Version, after.Version = "1", "2"
	finishedRecord := func(ago time.Duration, before state.Version) *state.Record {
		done := time.Now().UTC().Add(-ago).Truncate(time.Second)
		return &state.Record{NodeGroup: "ng", Strategy: "eks", State: state.StateFinished, Phase: string(plan.PhaseDone),
			StartedAt: done.Add(-time.Hour), FinishedAt: &done,
			Request: &plan.Request{NodeGroup: "ng", Provider: "aws", Strategy: "eks", MaxUnavailable: "1", MaxAge: time.Hour, DrainTimeout: time.Minute, NodeReadyTimeout: time.Minute, Cloud: plan.CloudTarget{Image: "ami-2"}},
			Cloud:   &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "demo-asg", FromVersion: "1", TargetVersion: "2"}},
			History: []state.Change{{Strategy: "eks", Before: before, After: after, FinishedAt: done}}}
	}
	for _, tc := range []struct {
		name    string
		rec     *state.Record
		window  string        // --rollback-window given on the command line
		shorter time.Duration // the window, where not the default
		want    string
	}{
		{"past the window", finishedRecord(8*24*time.Hour, before), "", 0, "more than the rollback window of 168h0m0s ago (--rollback-window)"},
		{"past a shorter window", finishedRecord(2*time.Hour, before), "", time.Hour, "rollback window of 1h0m0s"},
		{"a window that is no window", finishedRecord(time.Hour, before), "0s", 0, "--rollback-window must be positive"},
		{"no version recorded before the run", finishedRecord(time.Hour, state.Version{Provider: "none"}), "", 0, "did not record the version before it"},
		{"a record from before the history", func() *state.Record { r := finishedRecord(time.Hour, before); r.History = nil; return r }(), "", 0, "no finished run of the group is recorded"},
		{"within the window, asks first", finishedRecord(time.Hour, before), "", 0, "use --yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.shorter == 0 {
				tc.shorter = state.DefaultRollbackWindow
			}
			client := statusFixture(t, []*state.Record{tc.rec})
			writes := len(client.(*fake.Clientset).Actions())
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			var code int
			if tc.window != "" {
				// The flag as given: refused before anything is read.
				cmd := NewCmdControl("rollback", nil, streams)
				cmd.SetArgs([]string{"ng", "--rollback-window", tc.window})
				cmd.SilenceErrors, cmd.SilenceUsage = true, true
				code = PrintError(errOut, cmd.ExecuteContext(context.Background()))
			} else {
				o := &ControlOptions{IOStreams: streams, action: "rollback", client: client, NodeGroup: "ng",
					StateNamespace: state.DefaultNamespace, RollbackWindow: tc.shorter}
				code = PrintError(errOut, o.Run(context.Background()))
			}
			if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) || strings.Count(strings.TrimSpace(errOut.String()), "\n") > 0 {
				t.Errorf("exit %d: %s%s; want exit %d, one line with %q", code, out, errOut, ExitUsage, tc.want)
			}
			for _, a := range client.(*fake.Clientset).Actions()[writes:] {
				if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
					t.Errorf("refused rollback wrote: %s %s", v, a.GetResource().Resource)
				}
			}
		})
	}
}

// TestPlanRollback: plan --rollback plans the rollback of a finished run
// from its record alone: planning flags beside it, a missing NODEGROUP, a
// run that has not finished or one past the window are refused in one
// line (exit 2), changing nothing.
func TestPlanRollback(t *testing.T) {
	done := time.Now().UTC().Add(-8 * 24 * time.Hour).Truncate(time.Second)
	finished := &state.Record{NodeGroup: "ng", Strategy: "eks", State: state.StateFinished, StartedAt: done.Add(-time.Hour), FinishedAt: &done,
		Request: &plan.Request{NodeGroup: "ng", Provider: "aws", Strategy: "eks"},
		History: []state.Change{{Before: state.Version{Provider: "aws", Version: "1"}, After: state.Version{Provider: "aws", Version: "2"}, FinishedAt: done}}}
	for _, tc := range []struct {
		name string
		args []string
		rec  *state.Record
		want string
	}{
		{"no NODEGROUP", []string{"--rollback"}, nil, "missing NODEGROUP: --rollback plans"},
		{"planning flags beside it", []string{"ng", "--rollback", "--ami", "ami-3", "--max-unavailable", "2"}, nil, "drop --ami, --max-unavailable"},
		{"a window that is no window", []string{"ng", "--rollback", "--rollback-window", "0s"}, nil, "--rollback-window must be positive"},
		{"no run recorded", []string{"ng", "--rollback"}, &state.Record{NodeGroup: "other"}, `node group "ng" has no run recorded`},
		{"a run not finished", []string{"ng", "--rollback"}, recordFor("ng"), "is interrupted, not finished"},
		{"past the window", []string{"ng", "--rollback"}, finished, "more than the rollback window of 168h0m0s ago (--rollback-window)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			cmd := NewCmdPlan(nil, streams)
			cmd.SetArgs(tc.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			var client *fake.Clientset
			if tc.rec != nil {
				client = statusFixture(t, []*state.Record{tc.rec}).(*fake.Clientset)
				// The command's own options, as runE fills them, over the fixture.
				cmd.RunE = func(cmd *cobra.Command, args []string) error {
					o := &RunOptions{PlanOptions: PlanOptions{IOStreams: streams, client: client, StateNamespace: state.DefaultNamespace}, planOnly: true,
						rollback: rollbackPlanOptions{plan: true, window: state.DefaultRollbackWindow}}
					o.NodeGroup = args[0]
					return o.Run(cmd.Context())
				}
			}
			code := PrintError(errOut, cmd.ExecuteContext(context.Background()))
			if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) || strings.Count(strings.TrimSpace(errOut.String()), "\n") > 0 {
				t.Errorf("exit %d: %s%s; want exit %d, one line with %q", code, out, errOut, ExitUsage, tc.want)
			}
			if client == nil {
				return
			}
			for _, a := range client.Actions() {
				if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" && v != "create" {
					t.Errorf("refused plan wrote: %s %s", v, a.GetResource().Resource)
				}
			}
		})
	}
}
