package session

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/controls.md's lifecycle table from the code")

// suggested are the commands a message names, as "kubectl nodeupgrade CMD
// GROUP", and whether it says to run the same command again.
var suggested = regexp.MustCompile(`"kubectl nodeupgrade (\w+) `)

func commandsIn(msg string) []Command {
	var cmds []Command
	for _, m := range suggested.FindAllStringSubmatch(msg, -1) {
		cmds = append(cmds, Command(m[1]))
	}
	if strings.Contains(msg, "run the same command again") {
		cmds = append(cmds, CmdRun)
	}
	return cmds
}

// TestEverySuggestionIsAccepted holds every (status, command) pair of the
// example runs to the lifecycle: the status is the one the example is of,
// and every command a suggestion or a refusal names is one the run takes
// (status -w is always taken, and a run towards the version before is
// for after a live run ends).
func TestEverySuggestionIsAccepted(t *testing.T) {
	for _, strategy := range []string{"eks", "surge", "blue-green", "short-lived", "autoscaled-blue-green"} {
		for _, st := range Statuses {
			run := ExampleRun(st, strategy)
			if run == nil {
				continue
			}
			t.Run(strategy+"/"+string(st), func(t *testing.T) {
				if run.Status != st {
					t.Fatalf("the example of %q reads as %q", st, run.Status)
				}
				for _, cmd := range commandsIn(run.Suggest()) {
					if err := run.Accept(cmd); err != nil {
						t.Errorf("suggests %s (%q), refused: %v", cmd, run.Suggest(), err)
					}
				}
				for _, cmd := range Commands {
					err := run.Accept(cmd)
					if err == nil {
						continue
					}
					for _, next := range commandsIn(strings.SplitN(err.Error(), "status -w", 2)[0]) {
						if next == CmdRun && strings.Contains(err.Error(), "then undo it with") {
							continue
						}
						if run.Accept(next) != nil {
							t.Errorf("%s refused with %q, which names %s, refused too", cmd, err, next)
						}
					}
				}
			})
		}
	}
}

// TestLifecycle holds the answers an operator relies on, each once a
// reported contradiction between the commands.
func TestLifecycle(t *testing.T) {
	opens := time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC)
	now := opens.Add(-time.Hour)
	waiting := func() *state.Record {
		// Cancelled while it waited for its first window: no phase yet.
		return &state.Record{NodeGroup: "demo", Strategy: "eks", State: state.StateRunning, Batches: 5, StartedAt: now, WaitingForWindow: &opens}
	}
	tests := []struct {
		name    string
		rec     *state.Record
		alive   bool
		request string
		cmd     Command
		want    string // "" accepted, else in the refusal
		where   string
		next    string // in Suggest; "!x" not in it
	}{
		{name: "cancel while waiting for the window says so", rec: waiting(), alive: true, cmd: CmdCancel, where: "waiting for its maintenance window (opens 2026-11-28T11:00:00Z)"},
		{name: "then run is refused naming where it stopped", rec: waiting(), request: state.RequestCancel, cmd: CmdRun, want: `node group "demo" is paused (cancel) before its first phase; continue with "kubectl nodeupgrade resume demo"`},
		{name: "then rollback has nothing to undo", rec: waiting(), request: state.RequestCancel, cmd: CmdRollback, want: "changed nothing yet (before its first phase): there is nothing to undo", next: "!rollback"},
		{name: "then abort is taken", rec: waiting(), request: state.RequestCancel, cmd: CmdAbort},
		{name: "karpenter's pause offers no rollback", rec: &state.Record{NodeGroup: "pool", Strategy: "eks", State: state.StatePaused, Phase: "Drain", Done: []string{"n1"},
			Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "karpenter", Group: "pool"}}}, request: state.RequestCancel,
			cmd: CmdRollback, want: "recorded no version of its group to go back to", next: "!rollback"},
		{name: "provider none's pause offers no rollback", rec: &state.Record{NodeGroup: "ng", Strategy: "eks", State: state.StatePaused, Phase: "Drain", Done: []string{"n1"}},
			cmd: CmdRollback, want: "recorded no version", next: "!rollback"},
		{name: "a stopped eks run on a cloud group is rolled back", rec: &state.Record{NodeGroup: "ng", Strategy: "eks", State: state.StateInterrupted, Phase: "Drain", Done: []string{"n1"},
			Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "ng", FromVersion: "1", TargetVersion: "2"}}}, cmd: CmdRollback, next: `undo it with "kubectl nodeupgrade rollback ng"`},
		{name: "a live eks run is cancelled before its rollback", rec: &state.Record{NodeGroup: "ng", Strategy: "eks", State: state.StateRunning, Phase: "Drain", Holder: "me",
			Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "ng", FromVersion: "1"}}}, alive: true, cmd: CmdRollback, want: `is alive (me); pause it with "kubectl nodeupgrade cancel ng"`},
		{name: "the record a killed run left reads interrupted", rec: &state.Record{NodeGroup: "ng", Strategy: "eks", State: state.StateRunning, Phase: "Drain"}, cmd: CmdRun, where: "in phase Drain"},
		{name: "a finished run takes a new run", rec: &state.Record{NodeGroup: "ng", State: state.StateFinished, FinishedAt: &now}, cmd: CmdRun},
		{name: "a finished run has nothing to resume", rec: &state.Record{NodeGroup: "ng", State: state.StateRolledBack, FinishedAt: &now}, cmd: CmdResume, want: `the last run on "ng" is rolled back: it has nothing to resume`},
		{name: "blue being deleted is not undone", rec: &state.Record{NodeGroup: "ng", Strategy: "blue-green", State: state.StateInterrupted, Phase: string(plan.PhaseDeleteBlue)},
			cmd: CmdAbort, want: "is deleting blue, which cannot be stopped or undone", next: "resume"},
		// The control itself refuses them, naming what AKS offers.
		{name: "a failed AKS run suggests no rollback", rec: aksFailed(), cmd: CmdAbort, next: "!rollback"},
		{name: "nor a soak to end", rec: aksFailed(), cmd: CmdAbort, next: "!complete"},
		{name: "the same command finishes it", rec: aksFailed(), cmd: CmdRun, next: "run the same command again"},
		{name: "a GKE pool's rollback stands", rec: func() *state.Record {
			r := aksFailed()
			r.Managed.Service, r.Managed.Controls = "GKE node pool", []string{"cancel", "resume", "rollback", "complete"}
			return r
		}(), cmd: CmdRollback, next: "rollback"},
		{name: "a submitted Job is withdrawn, not resumed", rec: &state.Record{NodeGroup: "ng", State: state.StateSubmitted}, cmd: CmdResume, want: "submitted to its Job, whose pod has not started it", next: "cancel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := Describe(tc.rec, tc.alive, tc.request, now)
			err := run.Accept(tc.cmd)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s refused: %v", tc.cmd, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: %v, want a refusal with %q", tc.cmd, err, tc.want)
			}
			if tc.where != "" && run.Where() != tc.where {
				t.Errorf("where %q, want %q", run.Where(), tc.where)
			}
			next := run.Suggest()
			if want, ok := strings.CutPrefix(tc.next, "!"); ok && strings.Contains(next, want) || !ok && !strings.Contains(next, tc.next) {
				t.Errorf("next steps %q, want %q", next, tc.next)
			}
		})
	}
}

// aksFailed is the record of an AKS upgrade that failed on a PDB.
func aksFailed() *state.Record {
	return &state.Record{NodeGroup: "pool", Strategy: "surge", State: state.StateFailed, Phase: string(plan.PhaseUpdate),
		LastError: "UpgradeFailed", Managed: &state.ManagedRecord{Group: "pool", Service: "AKS agent pool", Controls: []string{"cancel", "resume"}, UpdateID: "op-1"}}
}

const tableStart, tableEnd = "<!-- lifecycle table: generated by TestLifecycleTableInDocs (go test ./internal/session -run TestLifecycleTableInDocs -update) -->\n", "<!-- end of the lifecycle table -->"

// TestLifecycleTableInDocs keeps docs/controls.md's table equal to the
// lifecycle's answers.
func TestLifecycleTableInDocs(t *testing.T) {
	path := "../../docs/controls.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no lifecycle table between %q and %q", path, tableStart, tableEnd)
	}
	want := doc[:i+len(tableStart)] + LifecycleTable() + doc[j:]
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Errorf("%s's lifecycle table differs from the code's; run go test ./internal/session -run TestLifecycleTableInDocs -update\nwant:\n%s", path, LifecycleTable())
	}
}
