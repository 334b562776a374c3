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
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := plugin.NewCmdNodeUpgrade(streams).ExecuteContext(ctx)
	code := plugin.PrintError(os.Stderr, err)
	stop()
	os.Exit(code)
}
