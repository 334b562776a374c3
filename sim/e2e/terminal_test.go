package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// statusLine is the live status line of a run of 9 nodes.
var statusLine = regexp.MustCompile(`^\w+ \| (batch \d+/\d+ \| )?(\d)/9 nodes \| elapsed \S+ \| ETA `)

// pane is a tmux server of the test's own, with one pane running an
// interactive shell on a terminal 250 columns wide.
type pane struct {
	t      *testing.T
	socket string
}

func newPane(t *testing.T) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		// A skip would pass without showing anything: the test needs tmux.
		t.Fatal("tmux is not installed (apt-get install -y tmux; .ci/run installs it): the terminal test needs it")
	}
	p := &pane{t: t, socket: fmt.Sprintf("nodeupgrade-e2e-%d", os.Getpid())}
	p.tmux("new-session", "-d", "-x", "250", "-y", "50", "bash", "--norc", "--noprofile", "-i")
	t.Cleanup(func() { _ = p.cmd("kill-server").Run() })
	return p
}

func (p *pane) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=1", "PS1=$ ")
	return cmd
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := p.cmd(args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what the pane shows, history included, wrapped lines joined.
func (p *pane) screen() string { return p.tmux("capture-pane", "-p", "-J", "-S", "-2000") }

// waitFor polls the screen until done says so; false after d.
func (p *pane) waitFor(d time.Duration, done func(screen string) bool) (string, bool) {
	deadline := time.Now().Add(d)
	for {
		s := p.screen()
		if done(s) || time.Now().After(deadline) {
			return s, done(s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exitCode is the code the shell echoed after marker=, or -1.
func exitCode(screen, marker string) int {
	m := regexp.MustCompile(marker + `=(\d+)`).FindStringSubmatch(screen)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestTerminalProgress runs the plugin on a terminal (a tmux pane): the
// status line is rewritten in place under the log lines, shows an ETA,
// and after Ctrl-C and a re-run the final line counts all 9 nodes.
func TestTerminalProgress(t *testing.T) {
	t.Parallel()
	const name = "tty"
	p := newPane(t)
	setupGroup(t, name, 9, 3, scenario.App{Name: "web", Replicas: 6, MaxUnavailable: num(1)})
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("'%s' run %s --target-label %s --max-unavailable 1 --post-drain-wait 2s --seed 1 --yes --kubeconfig '%s'", binary, name, target, sim.Kubeconfig)
	p.tmux("send-keys", run+"; echo EXIT1=$?", "Enter")

	// Watch the status line until 3 nodes are done, then press Ctrl-C.
	seen := map[string]bool{}
	screen, ok := p.waitFor(2*time.Minute, func(s string) bool {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			m := statusLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if i != len(lines)-1 {
				t.Errorf("status line %q is not the last line: a log line was printed over or after it:\n%s", l, s)
			}
			seen[l] = true
			if n, _ := strconv.Atoi(m[2]); n >= 3 {
				return true
			}
		}
		return exitCode(s, "EXIT1") >= 0
	})
	if !ok || exitCode(screen, "EXIT1") >= 0 {
		t.Fatalf("the run did not get to 3 nodes done before it ended or 2m passed:\n%s", screen)
	}
	p.tmux("send-keys", "C-c")
	screen, _ = p.waitFor(time.Minute, func(s string) bool { return exitCode(s, "EXIT1") >= 0 })
	if code := exitCode(screen, "EXIT1"); code != nodeupgrade.ExitFailure {
		t.Fatalf("after Ctrl-C the run exited %d, want %d:\n%s", code, nodeupgrade.ExitFailure, screen)
	}
	if len(seen) < 2 {
		t.Fatalf("the status line did not update: saw %q", keys(seen))
	}
	withETA := false
	for l := range seen {
		withETA = withETA || regexp.MustCompile(`\| ETA (~\d|any moment)`).MatchString(l)
	}
	if !withETA {
		t.Errorf("no status line shows an ETA: %q", keys(seen))
	}
	t.Logf("status lines seen: %d, e.g. %q", len(seen), keys(seen)[0])

	// Run again at once, as the interrupted run's message says, to the
	// end: the final line counts the nodes of both runs. The workload the
	// Ctrl-C may have left recovering does not stop the plan.
	p.tmux("send-keys", run+"; echo EXIT2=$?", "Enter")
	screen, _ = p.waitFor(3*time.Minute, func(s string) bool { return exitCode(s, "EXIT2") >= 0 })
	violations := watcher.Stop()
	if code := exitCode(screen, "EXIT2"); code != nodeupgrade.ExitOK {
		t.Fatalf("the re-run exited %d, want %d:\n%s", code, nodeupgrade.ExitOK, screen)
	}
	assertNoViolations(t, violations)
	rerun := screen[strings.LastIndex(screen, "EXIT1="):]
	final := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d upgrade of 9 nodes finished \((\d) by this run, (\d) by an earlier, interrupted one\)\n(EXIT2=0)`).FindStringSubmatch(rerun)
	if final == nil {
		t.Fatalf("the re-run's last line is not \"upgrade of 9 nodes finished (n by this run, m by an earlier, interrupted one)\" with no status line left after it:\n%s", rerun)
	}
	t.Logf("the re-run's final line: %q", strings.TrimSuffix(final[0], "\nEXIT2=0"))
	if now, _ := strconv.Atoi(final[1]); now < 1 || now > 6 {
		t.Errorf("the re-run says %s nodes by this run: want 1 to 6 (3 or more were done before Ctrl-C)", final[1])
	}
	assertUpgraded(t, name, 3)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
