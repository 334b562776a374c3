package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

var (
	sequenceCount = flag.Int("sequences", 20, "how many generated command sequences TestGeneratedSequences runs")
	sequenceSeed  = flag.Int64("sequence-seed", 0, "the first sequence's seed (0: from the clock); each sequence logs its own")
)

// sequenceSteps bounds a sequence: its last step runs to the end.
const sequenceSteps = 4

// stops are what may happen to a step's command while it runs; "window"
// gives a run a --not-after a moment away, so its window closes mid-run.
var stops = []string{"end", "cancel", "kill", "interrupt", "window"}

// TestGeneratedSequences drives a simulated Auto Scaling group through
// seeded random sequences of the real commands and stops: each step takes
// a command the run's status suggests (run, resume, rollback, abort,
// complete) and lets it end, cancels it from another terminal, SIGKILLs
// it or interrupts it at a random moment. After every step status and
// report name the same state, a suggested command is never refused, and a
// sequence ends with nothing suggested; after abort nothing is tainted,
// cordoned or resized. A failing sequence's seed replays it:
// -run 'TestGeneratedSequences/seed-N$' -sequence-seed N -sequences 1.
func TestGeneratedSequences(t *testing.T) {
	t.Parallel()
	base := *sequenceSeed
	if base == 0 {
		base = time.Now().UnixNano() % 1_000_000
	}
	for i := range *sequenceCount {
		seed := base + int64(i)
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			t.Parallel()
			runSequence(t, seed)
		})
	}
}

// runSequence runs the sequence of seed on a group of its own.
func runSequence(t *testing.T, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	name := fmt.Sprintf("seq-%d", seed)
	g := setupAWSGroup(t, name, 1, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
	t.Logf("seed %d", seed)
	watcher, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { assertNoViolations(t, watcher.Stop()) }()
	next := []string{"run"}
	for step := 1; len(next) > 0; step++ {
		if step > sequenceSteps+2 {
			t.Fatalf("seed %d: still unfinished after %d steps, next %v", seed, step-1, next)
		}
		cmd := next[rng.IntN(len(next))]
		stop := "end"
		if step <= sequenceSteps {
			stop = stops[rng.IntN(len(stops))]
		}
		code, out := g.sequenceStep(t, rng, cmd, stop)
		t.Logf("step %d: %s, %s: exit %d", step, cmd, stop, code)
		if code == nodeupgrade.ExitUsage && stop == "window" && strings.Contains(out, "no maintenance window opens before --not-after") {
			// The --not-after a moment away passed before the command
			// planned (a loaded machine): a refusal of that input, with
			// nothing changed, and the sequence goes on from the record.
			t.Logf("step %d: the window closed before %q planned", step, cmd)
		} else if code == nodeupgrade.ExitUsage {
			t.Fatalf("seed %d step %d: %q, which status suggested, was refused:\n%s", seed, step, cmd, out)
		}
		if n := strings.Count(out, "is back to"); n > 1 {
			t.Errorf("seed %d step %d: %q said the group is back to its sizes %d times:\n%s", seed, step, cmd, n, out)
		}
		st, recorded := g.sequenceStatus(t)
		if !recorded {
			// Stopped before its record: nothing may have changed.
			assertUntouched(t, testContext(t, time.Minute), groupKey, name)
			next = []string{"run"}
			continue
		}
		g.sameOutcome(t, st)
		next = st.Next
		if st.Status == nodeupgrade.StatusFinished {
			// A finished run's rollback is a new run (issue 64), not a
			// step of this sequence's lifecycle: the sequence ends here.
			next = nil
		}
		if st.Status == nodeupgrade.StatusAborted {
			assertUntouched(t, testContext(t, time.Minute), groupKey, name)
			g.stableAtOriginalSizes(t, testContext(t, 2*time.Minute))
		}
	}
}

// sequenceStep runs cmd and stops it as stop says; it returns the exit
// code and output.
func (g *awsGroup) sequenceStep(t *testing.T, rng *rand.Rand, cmd, stop string) (int, string) {
	args := map[string][]string{
		"run":      {"run", g.name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--yes"},
		"resume":   {"resume", g.name, "--yes"},
		"rollback": {"rollback", g.name, "--yes"},
		"abort":    {"abort", g.name, "--yes"},
		"complete": {"complete", g.name},
		"cancel":   {"cancel", g.name},
	}[cmd]
	if args == nil {
		t.Fatalf("status suggested %q, which the sequence does not know", cmd)
	}
	if stop == "window" && cmd == "run" {
		closes := time.Now().Add(time.Duration(3000+rng.IntN(4000)) * time.Millisecond)
		args = append(args, "--not-after", closes.UTC().Format(time.RFC3339))
	}
	b := startBackground(t, g.cmd(sim.Kubeconfig, args...))
	switch stop {
	case "cancel":
		if b.waitFor("batch 1/") {
			if r := g.run(t, "cancel", g.name); r.code != nodeupgrade.ExitOK && r.code != nodeupgrade.ExitUsage {
				t.Errorf("cancel: %s", r)
			}
		}
	case "kill", "interrupt":
		sig := map[string]syscall.Signal{"kill": syscall.SIGKILL, "interrupt": syscall.SIGINT}[stop]
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
		_ = b.cmd.Process.Signal(sig)
	}
	return b.wait(t, 5*time.Minute)
}

// sequenceStatus is status -o json of the group's run, and whether the
// group has a run recorded at all (a run killed before its first record
// leaves none).
func (g *awsGroup) sequenceStatus(t *testing.T) (nodeupgrade.RunStatus, bool) {
	t.Helper()
	r := g.run(t, "status", g.name, "-o", "json")
	var st nodeupgrade.RunStatus
	if r.code == nodeupgrade.ExitUsage && strings.Contains(r.stderr, "no run recorded") {
		return st, false
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("status: %v %s", err, r)
	}
	return st, true
}

// sameOutcome holds report to what status says of the run, with its
// phase totals within its time.
func (g *awsGroup) sameOutcome(t *testing.T, st nodeupgrade.RunStatus) {
	t.Helper()
	r := g.run(t, "report", g.name, "-o", "json")
	var rep report.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("report: %v %s", err, r)
	}
	if len(rep.Runs) == 0 {
		t.Fatalf("report has no run beside status %q", st.Status)
	}
	last := rep.Runs[len(rep.Runs)-1]
	if last.Outcome != st.Status {
		t.Errorf("report says %q, status %q", last.Outcome, st.Status)
	}
	seen := map[string]bool{}
	for _, n := range last.Nodes {
		key := fmt.Sprintf("%d/%s", n.Attempt, n.Name)
		if seen[key] {
			t.Errorf("node %q drained twice in attempt %d", n.Name, n.Attempt)
		}
		seen[key] = true
	}
	var phases report.Duration
	for _, p := range last.PhaseTotals {
		phases += p.Took
	}
	if phases > last.Took+report.Duration(time.Second) {
		t.Errorf("report's phases add up to %s in a run of %s", phases, last.Took)
	}
}
