// Package plugin holds the thin cobra commands of kubectl nodeupgrade; the
// work is done by the cobra-free packages below it.
package plugin

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCmdNodeUpgrade builds the root command.
func NewCmdNodeUpgrade(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "kubectl-nodeupgrade",
		Short: "Replace the nodes of a node group without dropping traffic",
		Long: `Replace the nodes of one node group (new image, launch template or Kubernetes
version) the way EKS managed node groups do: taint the outdated nodes, drain
them in batches honouring PodDisruptionBudgets, and remove them.

Review the plan first with "kubectl nodeupgrade plan", then run it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	configFlags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		NewCmdPlan(configFlags, streams),
		NewCmdRun(configFlags, streams),
		NewCmdCheck(configFlags, streams),
		NewCmdStatus(configFlags, streams),
		NewCmdControl("cancel", configFlags, streams),
		NewCmdControl("resume", configFlags, streams),
		NewCmdControl("rollback", configFlags, streams),
		NewCmdControl("complete", configFlags, streams),
		NewCmdVersion(streams),
	)
	return cmd
}

// completer is the kubectl-style Options contract every command follows.
type completer interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE runs Complete, Validate and Run in order, as kubectl's commands do.
func runE(o completer) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// argsAtMost is like cobra.MaximumNArgs whose failure is a usage error (exit 2).
func argsAtMost(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return usageErrorf("too many arguments %q: want %s", args, what)
		}
		return nil
	}
}
