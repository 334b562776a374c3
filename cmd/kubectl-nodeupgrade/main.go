// Command kubectl-nodeupgrade is the kubectl plugin "kubectl nodeupgrade".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if os.Getenv(plugin.FleetEnv) != "" {
		// A target of a fleet writes to its coordinator's pipes: killed,
		// the coordinator must not take its runs with it.
		signal.Ignore(syscall.SIGPIPE)
	}
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	cmd := plugin.NewCmdNodeUpgrade(streams)
	// before any client exists: library logs are off unless -v is given
	plugin.AddGlobalFlags(cmd.PersistentFlags())
	flushProfile := plugin.AddProfiling(cmd)
	err := cmd.ExecuteContext(ctx)
	if ferr := flushProfile(); err == nil {
		err = ferr
	}
	code := plugin.PrintError(os.Stderr, err)
	stop()
	os.Exit(code)
}
