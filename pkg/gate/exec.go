package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// exec runs the command by sh -c: exit 0 passes; the verdict keeps the
// exit status and the last line of its output.
func (e Evaluator) exec(ctx context.Context, spec Spec, v *Verdict) {
	timeout := e.ExecTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", spec.Command)
	cmd.Env = append(os.Environ(), e.Env...)
	cmd.Dir = e.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		v.Pass, v.Value = true, "exit status 0"
	case ctx.Err() != nil:
		v.Reason, v.Value = ReasonExit, fmt.Sprintf("no exit within %s", timeout)
	case errors.As(err, &exit):
		v.Reason, v.Value = ReasonExit, exit.String()
	default:
		v.Reason, v.Value = ReasonExit, err.Error()
	}
	v.Detail = lastLine(out.String())
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return last
}
