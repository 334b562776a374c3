package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestRollbackWindowFlags: --window, --not-before and --not-after given to
// the rollback of a finished run (rollback, plan --rollback) replace the
// windows its record kept, and are read as a run's (a bad one refused in
// one line, exit 2, nothing written); given to the rollback of a run that
// has not finished, which puts the group back at once, they are refused.
func TestRollbackWindowFlags(t *testing.T) {
	done := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	finished := &state.Record{NodeGroup: "ng", Strategy: "eks", State: state.StateFinished, Phase: string(plan.PhaseDone),
		StartedAt: done.Add(-time.Hour), FinishedAt: &done,
		Request: &plan.Request{NodeGroup: "ng", Provider: "aws", Strategy: "eks", MaxUnavailable: "1", DrainTimeout: time.Minute, NodeReadyTimeout: time.Minute,
			Windows: []string{"Sat 22:00-23:00"}},
		Cloud:   &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "demo-asg", FromVersion: "1", TargetVersion: "2"}},
		History: []state.Change{{Strategy: "eks", Before: state.Version{Provider: "aws", Version: "1"}, After: state.Version{Provider: "aws", Version: "2"}, FinishedAt: done}}}
	for _, tc := range []struct {
		name string
		rec  *state.Record
		plan bool // plan --rollback, else rollback
		want string
	}{
		{name: "rollback of a finished run reads the window given", rec: finished, want: `invalid --window "Funday 01:00-02:00"`},
		{name: "plan --rollback reads the window given", rec: finished, plan: true, want: `invalid --window "Funday 01:00-02:00"`},
		{name: "rollback of a run not finished refuses it", rec: recordFor("ng"), want: "--window, --not-before and --not-after apply to the rollback of a finished run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := statusFixture(t, []*state.Record{tc.rec})
			writes := len(client.(*fake.Clientset).Actions())
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			given := plan.Request{Windows: []string{"Funday 01:00-02:00"}}
			var err error
			if tc.plan {
				o := &RunOptions{PlanOptions: PlanOptions{IOStreams: streams, client: client, StateNamespace: state.DefaultNamespace}, planOnly: true,
					rollback: rollbackPlanOptions{plan: true, window: state.DefaultRollbackWindow, schedule: true}}
				o.Request.Request, o.NodeGroup = given, "ng"
				err = o.Run(context.Background())
			} else {
				o := &ControlOptions{IOStreams: streams, action: "rollback", client: client, NodeGroup: "ng", Yes: true,
					StateNamespace: state.DefaultNamespace, RollbackWindow: state.DefaultRollbackWindow, schedule: given, scheduleGiven: true}
				err = o.Run(context.Background())
			}
			if code := PrintError(errOut, err); code != ExitUsage || !strings.Contains(errOut.String(), tc.want) || strings.Count(strings.TrimSpace(errOut.String()), "\n") > 0 {
				t.Errorf("exit %d: %s%s; want exit %d, one line with %q", code, out, errOut, ExitUsage, tc.want)
			}
			for _, a := range client.(*fake.Clientset).Actions()[writes:] {
				if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" && v != "create" {
					t.Errorf("refused rollback wrote: %s %s", v, a.GetResource().Resource)
				}
			}
		})
	}
}
