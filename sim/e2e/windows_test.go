package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	container "google.golang.org/api/container/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// utcPluginCmd is pluginCmd with the run's log clock in UTC, as the
// windows the tests give are.
func utcPluginCmd(args ...string) *exec.Cmd {
	cmd := pluginCmd(args...)
	cmd.Env = append(cmd.Env, "TZ=UTC")
	return cmd
}

// windowAt is a daily window of the UTC wall clock from from to to,
// to the second (crossing midnight where it falls so).
func windowAt(from, to time.Time) string {
	return fmt.Sprintf("daily %s-%s UTC", from.UTC().Format(time.TimeOnly), to.UTC().Format(time.TimeOnly))
}

// logTime is the time of a run's log line ("15:04:05 ..."), on the day
// of near (UTC).
func logTime(t *testing.T, line string, near time.Time) time.Time {
	t.Helper()
	clock, err := time.Parse(time.TimeOnly, strings.Fields(line)[0])
	if err != nil {
		t.Fatalf("log line %q has no time: %v", line, err)
	}
	y, m, d := near.UTC().Date()
	at := time.Date(y, m, d, clock.Hour(), clock.Minute(), clock.Second(), 0, time.UTC)
	if at.Sub(near) > 12*time.Hour { // the line is from before midnight
		at = at.AddDate(0, 0, -1)
	} else if near.Sub(at) > 12*time.Hour {
		at = at.AddDate(0, 0, 1)
	}
	return at
}

func TestMaintenanceWindowHoldsTheNextBatch(t *testing.T) {
	t.Parallel()
	const name = "windowed"
	setupGroup(t, name, 3, 2, scenario.App{Name: "web", Replicas: 4, MaxUnavailable: num(1)})
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	// The first window is open now and closes in 8 s, during batch 1
	// (its post-drain wait is 10 s); the next opens 30 s from now.
	now := time.Now().Truncate(time.Second)
	opens := now.Add(30 * time.Second)
	first, second := windowAt(now.Add(-time.Second), now.Add(8*time.Second)), windowAt(opens, opens.Add(10*time.Minute))
	cmd := utcPluginCmd("run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "10s", "--seed", "1", "--yes",
		"--window", first, "--window", second)
	run := startBackground(t, cmd)
	if !run.waitFor("waits until " + opens.UTC().Format(time.RFC3339)) {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not wait for the window:\n%s", out)
	}
	// Meanwhile status says so, with the time it opens.
	st := plugin(t, "status", name)
	if st.code != nodeupgrade.ExitOK || !strings.Contains(st.stdout, "waiting for window") || !strings.Contains(st.stdout, "until "+opens.UTC().Format(time.RFC3339)) {
		t.Errorf("status during the wait:\n%s", st)
	}
	code, out := run.wait(t, 3*time.Minute)
	violations := watcher.Stop()
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", code, out)
	}
	assertNoViolations(t, violations)
	// The batch held is the one after the close; it drained only once the
	// window opened, and batch 1 went on to its end after the close.
	held := regexp.MustCompile(`(batch \d/3) waits until`).FindStringSubmatch(out)
	if held == nil || held[1] == "batch 1/3" {
		t.Fatalf("no later batch held:\n%s", out)
	}
	var drainLine string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, held[1]+": draining") {
			drainLine = line
		}
	}
	if drainLine == "" || logTime(t, drainLine, opens).Before(opens) {
		t.Errorf("%s drained at %q, before the window opened at %s:\n%s", held[1], drainLine, opens.Format(time.RFC3339), out)
	}
	assertUpgraded(t, name, 2)
}

func TestNotAfterStopsTheRunResumably(t *testing.T) {
	t.Parallel()
	const name = "notafter"
	setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	// Batch 1 starts at once; its post-drain wait takes it past
	// --not-after, so batch 2 cannot start.
	notAfter := time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339)
	r := runCmd(t, utcPluginCmd("run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "10s", "--seed", "1", "--yes", "--not-after", notAfter))
	if r.code != nodeupgrade.ExitPaused || !strings.Contains(r.stderr, "stopped before batch 2/2: no maintenance window opens before --not-after "+notAfter) {
		t.Fatalf("want exit %d naming --not-after, got %s", nodeupgrade.ExitPaused, r)
	}
	st := plugin(t, "status", name)
	if !strings.Contains(st.stdout, "window closed") {
		t.Errorf("status after --not-after:\n%s", st)
	}
	// The same command with a later --not-after goes on from the record.
	r = plugin(t, "run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "0s", "--seed", "1", "--yes",
		"--not-after", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run with a later --not-after: %s", r)
	}
	assertUpgraded(t, name, 1)
}

func TestBadWindowChangesNothing(t *testing.T) {
	t.Parallel()
	const name = "badwindow"
	setupGroup(t, name, 1, 1)
	for _, args := range [][]string{
		{"--window", "Sat-Sun 22:00-25:00 Europe/Berlin"},
		{"--not-before", "next week"},
		// nothing could start: --not-after is past
		{"--not-after", "2020-01-01"},
	} {
		r := plugin(t, append([]string{"run", name, "--target-label", target, "--yes"}, args...)...)
		if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, args[0]) {
			t.Errorf("%v: want exit %d and one line naming the flag, got %s", args, nodeupgrade.ExitUsage, r)
		}
	}
	assertUntouched(t, testContext(t, time.Minute), groupKey, name)
}

// TestGKEWindowPausesTheSurge: a maintenance window that closes while
// GKE's surge upgrade runs pauses it (operations.cancel: the nodes in
// flight finish, no other starts); status says the run waits for the
// window; no node is upgraded until the next opens, when the run resumes
// the upgrade (nodePools.update to the same target) and follows it to
// its end.
func TestGKEWindowPausesTheSurge(t *testing.T) {
	t.Parallel()
	const name = "gke-window"
	g := setupGKEPool(t, name, gkePoolSpec{launchDelay: 8 * time.Second}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	watch, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, name)
	if err != nil {
		t.Fatal(err)
	}
	// The first window is open now and closes 15 s from now, while GKE
	// upgrades the first node (about 16 s each; a loaded CI machine took
	// 9 s to start the update, and 3 nodes of 6 s each were done before a
	// close at 9 s); the next opens 75 s from now.
	now := time.Now().Truncate(time.Second)
	closes, opens := now.Add(15*time.Second), now.Add(75*time.Second)
	cmd := g.cmd("run", name, "--yes", "--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--node-version", gkeNew,
		"--window", windowAt(now.Add(-time.Second), closes), "--window", windowAt(opens, opens.Add(10*time.Minute)))
	cmd.Env = append(cmd.Env, "TZ=UTC")
	run := startBackground(t, cmd)
	if !run.waitFor("paused the GKE node pool's update") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the window's close did not pause the update:\n%s", out)
	}
	// The nodes in flight finish; then nothing moves until the opening.
	g.waitPool(t, "settled after the cancel", func(p *container.NodePool) bool { return p.Status == "RUNNING" })
	held, _ := g.nodesOn(t, gkeNew)
	if held == 3 {
		t.Fatalf("every node was upgraded before the window closed: nothing was held")
	}
	if !run.waitFor("waits until " + opens.UTC().Format(time.RFC3339)) {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not wait for the window:\n%s", out)
	}
	st := g.run(t, "status", name)
	if st.code != nodeupgrade.ExitOK || !strings.Contains(st.stdout, "waiting for window") || !strings.Contains(st.stdout, "until "+opens.UTC().Format(time.RFC3339)) {
		t.Errorf("status during the wait:\n%s", st)
	}
	time.Sleep(time.Until(opens.Add(-time.Second)))
	if on, _ := g.nodesOn(t, gkeNew); on != held {
		t.Errorf("%d nodes upgraded while the window was closed, %d when it closed", on, held)
	}
	code, out := run.wait(t, 3*time.Minute)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", code, out)
	}
	resumed := lastLineWith(out, "resumed the GKE node pool's update")
	if resumed == "" || logTime(t, resumed, opens).Before(opens) {
		t.Errorf("resumed at %q, before the window opened at %s:\n%s", resumed, opens.Format(time.RFC3339), out)
	}
	g.assertUpgraded(t)
	if v := watch.Stop(); len(v) != 0 {
		t.Errorf("PDB violations: %v", v)
	}
}

// TestGKEWindowHoldsTheSoakEnd: a blue/green soak whose end GKE would
// reach outside the window is held: the run pauses the upgrade when the
// window closes (GKE keeps blue), and when the next opens resumes it and
// ends the soak, so blue is deleted inside the window.
func TestGKEWindowHoldsTheSoakEnd(t *testing.T) {
	t.Parallel()
	const name = "gke-window-bg"
	g := setupGKEPool(t, name, gkePoolSpec{}, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	// The soak (20 s) starts a few seconds in and would end before the
	// next window opens, 50 s from now; the first closes 20 s from now.
	now := time.Now().Truncate(time.Second)
	closes, opens := now.Add(20*time.Second), now.Add(50*time.Second)
	cmd := g.cmd("run", name, "--yes", "--strategy", "blue-green", "--batch-node-count", "3", "--batch-soak", "0s", "--node-pool-soak", "20s", "--node-version", gkeNew,
		"--window", windowAt(now.Add(-time.Second), closes), "--window", windowAt(opens, opens.Add(10*time.Minute)))
	cmd.Env = append(cmd.Env, "TZ=UTC")
	run := startBackground(t, cmd)
	if !run.waitFor("paused the GKE node pool's update", "blue stays") {
		_, out := run.wait(t, time.Minute)
		t.Fatalf("the window's close did not hold the soak:\n%s", out)
	}
	time.Sleep(time.Until(opens.Add(-time.Second)))
	if on, all := g.nodesOn(t, gkeNew); on != 3 || all != 6 {
		t.Errorf("before the window opened: %d of %d nodes on %s, want blue's 3 kept beside green's 3", on, all, gkeNew)
	}
	code, out := run.wait(t, 3*time.Minute)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d:\n%s", code, out)
	}
	ended := lastLineWith(out, "blue is deleted inside the window")
	if ended == "" || logTime(t, ended, opens).Before(opens) {
		t.Errorf("the soak ended at %q, want after the window opened at %s:\n%s", ended, opens.Format(time.RFC3339), out)
	}
	g.assertUpgraded(t)
	if _, all := g.nodesOn(t, gkeNew); all != 3 {
		t.Errorf("%d nodes after the upgrade, want blue deleted and green's 3", all)
	}
}

// lastLineWith is the last line of out that holds s, "" if none.
func lastLineWith(out, s string) string {
	lines := strings.Split(out, "\n")
	for _, line := range slices.Backward(lines) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
