// Package e2e runs the kubectl-nodeupgrade binary against the simulated
// cluster: a real apiserver, controllers and scheduler, with kwok nodes.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
)

var (
	sim    *cluster.Cluster
	client kubernetes.Interface
	binary string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "nodeupgrade-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "kubectl-nodeupgrade")
	build := exec.Command("go", "build", "-race", "-o", binary, "./cmd/kubectl-nodeupgrade")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the plugin: %v\n%s", err, out)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	sim, err = cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), PodReadyDelay: time.Second})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the simulated cluster: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "simulated cluster up in %s\n", time.Since(start).Round(time.Millisecond))
	defer sim.Stop()
	client = sim.Client
	return m.Run()
}

// result is one run of the plugin.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// plugin runs the binary against the simulated cluster, stdin not a terminal.
func plugin(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, pluginCmd(args...))
}

// pluginAs runs the binary with another user's kubeconfig.
func pluginAs(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	return runCmd(t, cmd)
}

func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running plugin: %v", err)
	}
	return r
}

func pluginCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	return cmd
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// groupNodes returns the nodes carrying label key=value.
func groupNodes(t *testing.T, ctx context.Context, key, value string) []corev1.Node {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: key + "=" + value})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// assertUntouched fails if any node of the group is tainted with key or cordoned.
func assertUntouched(t *testing.T, ctx context.Context, key, value string) {
	t.Helper()
	for _, n := range groupNodes(t, ctx, key, value) {
		if n.Spec.Unschedulable {
			t.Errorf("node %q is cordoned", n.Name)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == key {
				t.Errorf("node %q is tainted %v", n.Name, taint)
			}
		}
	}
}

// statusRecord is the group's record as "status -o json" prints it.
func statusRecord(t *testing.T, run func(*testing.T, ...string) result, group string) state.Record {
	t.Helper()
	r := run(t, "status", group, "-o", "json")
	var rec state.Record
	if err := json.Unmarshal([]byte(r.stdout), &rec); r.code != nodeupgrade.ExitOK || err != nil {
		t.Fatalf("status: %v %s", err, r)
	}
	return rec
}

func oneLine(s string) bool {
	return strings.Count(strings.TrimRight(s, "\n"), "\n") == 0 && strings.TrimSpace(s) != ""
}

// background is a plugin run whose output lines are read as they come.
type background struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   strings.Builder
	lines chan string
	done  chan struct{}
	code  int
}

// startBackground starts cmd and reads its stdout line by line as it comes;
// stderr is appended to the output when the run ends. The test's cleanup
// kills a run still going.
func startBackground(t *testing.T, cmd *exec.Cmd) *background {
	t.Helper()
	b := &background{cmd: cmd, lines: make(chan string, 1000), done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.mu.Lock()
			b.out.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
			select {
			case b.lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		err := cmd.Wait()
		b.mu.Lock()
		b.out.WriteString(stderr.String())
		// -1 when there is no exit status, or when the wait failed although
		// the process exited 0: a failed wait must not pass for success.
		b.code = -1
		if ps := cmd.ProcessState; ps != nil && (err == nil || ps.ExitCode() != nodeupgrade.ExitOK) {
			b.code = ps.ExitCode()
		}
		b.mu.Unlock()
		close(b.lines)
		close(b.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-b.done
	})
	return b
}

// waitFor reads lines until one contains every part; false if the run
// ended first.
func (b *background) waitFor(parts ...string) bool {
	for line := range b.lines {
		if containsAll(line, parts) {
			return true
		}
	}
	return false
}

// until polls cond (nil: at once) while the command runs, and reports
// whether it held before the command ended.
func (b *background) until(cond func() bool) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for cond != nil && !cond() {
		select {
		case <-b.done:
			return false
		case <-tick.C:
		}
	}
	return true
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func (b *background) wait(t *testing.T, d time.Duration) (int, string) {
	t.Helper()
	go func() {
		for range b.lines { //nolint:revive // drain so the reader never blocks
		}
	}()
	select {
	case <-b.done:
	case <-time.After(d):
		t.Fatalf("the run did not end within %s:\n%s", d, b.output())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.code, b.out.String()
}

func (b *background) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}
