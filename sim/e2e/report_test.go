package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestReportMatchesTheRunsLog holds a node with a PDB that allows no
// disruption for a measured time, then relaxes it: the report names the
// pod and the PDB, and the time held is the run's own log's, from the
// first refusal to the eviction.
func TestReportMatchesTheRunsLog(t *testing.T) {
	t.Parallel()
	const name = "reported"
	setupGroup(t, name, 1, 1, scenario.App{Name: "solo", Replicas: 2, MinAvailable: num(2)})
	ctx := testContext(t, 5*time.Minute)
	cmd := utcPluginCmd("run", name, "--target-label", target, "--post-drain-wait", "0s", "--drain-timeout", "3m", "--yes",
		"--ignore-check", "pdb-zero-disruptions")
	run := startBackground(t, cmd)
	if !run.waitFor("blocked by PodDisruptionBudget", name+"/solo") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("no eviction was refused:\n%s", out)
	}
	// status -w names, live, what holds the node
	watch := startBackground(t, pluginCmd("status", "-w", name))
	// the PDB holds the node for 12 s
	time.Sleep(12 * time.Second)
	patch := []byte(`{"spec":{"minAvailable":1}}`)
	if _, err := client.PolicyV1().PodDisruptionBudgets(name).Patch(ctx, "solo", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out := run.wait(t, 3*time.Minute)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", code, out)
	}
	wcode, wout := watch.wait(t, time.Minute)
	if wcode != nodeupgrade.ExitOK || !regexp.MustCompile(`held: pod `+name+`/solo-\S+ by PDB `+name+`/solo on `).MatchString(wout) {
		t.Errorf("status -w did not name the pod and PDB holding the node (exit %d):\n%s", wcode, wout)
	}
	// The log: the first refusal and the eviction of the same pod.
	blocked := regexp.MustCompile(`(?m)^(\S+) node "[^"]+": eviction of pod "(` + name + `/solo-[^"]+)" blocked by PodDisruptionBudget "` + name + `/solo"`).FindStringSubmatch(out)
	if blocked == nil {
		t.Fatalf("no refusal in the log:\n%s", out)
	}
	evicted := regexp.MustCompile(`(?m)^(\S+) node "[^"]+": evicted pod "` + regexp.QuoteMeta(blocked[2]) + `"`).FindStringSubmatch(out)
	if evicted == nil {
		t.Fatalf("no eviction of %s in the log:\n%s", blocked[2], out)
	}
	now := time.Now()
	logged := logTime(t, evicted[0], now).Sub(logTime(t, blocked[0], now))

	r := plugin(t, "report", name, "-o", "json")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("report: %s", r)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report -o json: %v\n%s", err, r.stdout)
	}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Blockers) == 0 {
		t.Fatalf("report without blockers:\n%s", r.stdout)
	}
	top := rep.Runs[0].Blockers[0]
	held := time.Duration(top.Held)
	if top.Pod != blocked[2] || top.PDB != name+"/solo" {
		t.Errorf("top blocker %+v, want pod %s and PDB %s/solo", top, blocked[2], name)
	}
	// the log's times are whole seconds
	if diff := held - logged; diff < -2*time.Second || diff > 2*time.Second || held < 10*time.Second {
		t.Errorf("report says %s held the node %s; the log says %s", top.Pod, held, logged)
	}
	run0 := rep.Runs[0]
	if run0.Outcome != "finished" || run0.FinishedAt == nil || len(run0.Nodes) != 1 || run0.Nodes[0].Drained == nil || run0.Nodes[0].Removed == nil || run0.Nodes[0].DrainStart == nil {
		t.Errorf("run's timeline: %+v", run0)
	}
	var phases report.Duration
	for _, p := range run0.PhaseTotals {
		phases += p.Took
	}
	if a := run0.Attempts; len(a) != 1 || a[0].Kind != "run" || a[0].Outcome != "finished" || phases > run0.Took || a[0].Took > run0.Took {
		t.Errorf("attempts %+v, phases %s in a run of %s: want one run that finished, phases within it", a, phases, run0.Took)
	}
	table := plugin(t, "report", name)
	for _, want := range []string{"Top blockers", blocked[2], name + "/solo", "Attempts (UTC)", "Phases", "Nodes (UTC)"} {
		if !strings.Contains(table.stdout, want) {
			t.Errorf("report's table lacks %q:\n%s", want, table)
		}
	}
	t.Logf("held %s by the report, %s by the log", held, logged)
}
