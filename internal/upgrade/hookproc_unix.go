//go:build !windows

package upgrade

import (
	"os/exec"
	"syscall"
)

// inOwnProcessGroup starts the hook in a process group of its own, killed
// whole when the hook times out or the run stops: what the hook started
// goes with it, and a Ctrl-C at the terminal reaches the run, not the hook.
func inOwnProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
