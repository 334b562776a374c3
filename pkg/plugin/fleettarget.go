package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

// targetExec runs this plugin's commands on a fleet's targets, a process
// per target, in the target's context.
type targetExec struct {
	exe        string
	kubeconfig string
	fleet      string // NAME@HASH
}

func (o *fleetOptions) targets() targetExec {
	x := targetExec{exe: o.exe, fleet: o.fleet.Name + "@" + o.fleet.Hash}
	if o.configFlags.KubeConfig != nil {
		x.kubeconfig = *o.configFlags.KubeConfig
	}
	return x
}

// command is verb on t: its group (or -l selector), then extra, in its
// context.
func (x targetExec) command(ctx context.Context, t fleet.Target, verb string, extra ...string) *exec.Cmd {
	return x.run(ctx, t.Command(verb, extra...))
}

// inContext is the plugin with args in t's context.
func (x targetExec) inContext(ctx context.Context, t fleet.Target, args ...string) *exec.Cmd {
	return x.run(ctx, append(args, "--context", t.Context))
}

// run is the plugin with args, and the fleet's kubeconfig.
func (x targetExec) run(ctx context.Context, args []string) *exec.Cmd {
	if x.kubeconfig != "" {
		args = append(args, "--kubeconfig", x.kubeconfig)
	}
	cmd := exec.CommandContext(ctx, x.exe, args...)
	// Stopped, the coordinator interrupts its targets as Ctrl-C would and
	// waits for them to record where they stopped, never kills them.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	cmd.Env = append(os.Environ(), "NO_COLOR=1", FleetEnv+"="+x.fleet)
	return cmd
}

// FleetEnv names, in a target's environment, the fleet that runs it and
// its plan's hash ("NAME@HASH").
const FleetEnv = "NODEUPGRADE_FLEET"

// stateFlags are t's --state-namespace, where its run flags set one: its
// record is there.
func stateFlags(t fleet.Target) []string {
	for _, a := range t.Args {
		if strings.HasPrefix(a, "--state-namespace=") {
			return []string{a}
		}
	}
	return nil
}

// targetExit is a target's command that exited non-zero; its code is
// the fleet command's where it decides the outcome.
type targetExit struct {
	target string
	verb   string
	code   int
	last   string // the last line it wrote to standard error
}

func (e *targetExit) Error() string {
	if e.last == "" {
		return fmt.Sprintf("%s on %q exited %d", e.verb, e.target, e.code)
	}
	return fmt.Sprintf("%s on %q exited %d: %s", e.verb, e.target, e.code, e.last)
}

func (e *targetExit) exitCode() int { return e.code }

// capture runs cmd and returns its standard output; a non-zero exit is a
// *targetExit naming t.
func capture(cmd *exec.Cmd, t fleet.Target, verb string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.Bytes(), exitOf(err, t, verb, stderr.String())
}

func exitOf(err error, t fleet.Target, verb, stderr string) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		e := &targetExit{target: t.ID(), verb: verb, code: exit.ExitCode()}
		if strings.TrimSpace(stderr) != "" {
			e.last = lastLine(stderr)
		}
		return e
	}
	if err != nil {
		return fmt.Errorf("cannot run %s on %q: %w", verb, t.ID(), err)
	}
	return nil
}

// lookStatus is t's recorded run as "status -o json" reads it in its own
// cluster; ok false when it has none. It asks for every group of the
// namespace (-A), where a group without a record is not an error.
func (x targetExec) lookStatus(ctx context.Context, t fleet.Target) (RunStatus, bool, error) {
	out, err := capture(x.inContext(ctx, t, append([]string{"status", "-A", "-o", "json"}, stateFlags(t)...)...), t, "status")
	if err != nil {
		return RunStatus{}, false, err
	}
	var list RunStatusList
	if err := json.Unmarshal(out, &list); err != nil {
		return RunStatus{}, false, fmt.Errorf("cannot decode the status of %q: %w", t.ID(), err)
	}
	for _, s := range list.Items {
		if s.Record != nil && s.NodeGroup == t.Group() {
			return s, true, nil
		}
	}
	return RunStatus{}, false, nil
}

// prefixWriter writes each whole line to w after prefix, one writer's
// lines never torn by another's (mu): many targets share one terminal.
func prefixWriter(mu *sync.Mutex, w io.Writer, prefix string) io.Writer {
	return &output.LineWriter{Line: func(line string) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(w, "%s%s\n", prefix, line)
		return err
	}}
}
