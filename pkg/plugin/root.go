// Package plugin holds the thin cobra commands of kubectl nodeupgrade; the
// work is done by the cobra-free packages below it.
package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// NewCmdNodeUpgrade builds the root command.
func NewCmdNodeUpgrade(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	cmd := newRootCommand(configFlags, streams)
	registerCompletions(cmd, &clusterSource{configFlags: configFlags})
	return cmd
}

// newRootCommand builds the command tree without its shell completions, so
// tests can register theirs against a fake cluster.
func newRootCommand(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubectl-nodeupgrade",
		Short: "Replace the nodes of a node group without dropping traffic",
		Long: `Replace the nodes of one node group (new image, launch template or Kubernetes
version) the way EKS managed node groups do: taint the outdated nodes, drain
them in batches honouring PodDisruptionBudgets, and remove them.

Review the plan first with "kubectl nodeupgrade plan", then run it.`,
		// Usage lines and errors name the command as it is typed.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl nodeupgrade"},
		// cobra's "completion" command writes a script completing the
		// kubectl-nodeupgrade binary, not "kubectl nodeupgrade": kubectl
		// completes plugins through kubectl_complete-nodeupgrade instead.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Args:              unknownCommand,
		RunE:              func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SilenceUsage:      true,
		SilenceErrors:     true,
	}
	cmd.SuggestionsMinimumDistance = 2
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// "paln demo --ami x": the root met the flag of a command it does
		// not know; the word is what is wrong.
		if !c.HasParent() && len(c.Flags().Args()) > 0 {
			return unknownCommand(c, c.Flags().Args())
		}
		return &usageError{err: err}
	})
	configFlags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		NewCmdPlan(configFlags, streams),
		NewCmdRun(configFlags, streams),
		NewCmdCheck(configFlags, streams),
		NewCmdStatus(configFlags, streams),
		NewCmdReport(configFlags, streams),
		NewCmdControl("cancel", configFlags, streams),
		NewCmdControl("resume", configFlags, streams),
		NewCmdControl("rollback", configFlags, streams),
		NewCmdControl("complete", configFlags, streams),
		NewCmdAbort(configFlags, streams),
		NewCmdFleet(configFlags, streams),
		NewCmdPrices(streams),
		NewCmdVersion(streams),
	)
	explainConnectionErrors(cmd, configFlags)
	return cmd
}

// unknownCommand refuses a word that names no subcommand as bad input
// (cobra's own check makes it a plain error, exit 4).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	hint := ""
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %q?)", strings.Join(s, `" or "`))
	}
	return usageErrorf("unknown command %q for %q%s; see %q", args[0], cmd.CommandPath(), hint, cmd.CommandPath()+" --help")
}

// explainConnectionErrors makes the commands that talk to the cluster say
// why they cannot: a server that does not answer is named (exit 9) instead
// of a bare dial error (no kubeconfig at all is refused by restConfig,
// after the flags are checked). The retries of their requests are told on
// stderr, unless a run tells them on its progress line.
func explainConnectionErrors(root *cobra.Command, configFlags *genericclioptions.ConfigFlags) {
	walk(root, func(c *cobra.Command) {
		if c.RunE == nil || c == root || c.Name() == "version" {
			return
		}
		run := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := validateStateNamespace(cmd); err != nil {
				return err
			}
			ctx, answered := transport.WithAnswers(reportRetries(cmd.Context(), cmd.ErrOrStderr()))
			cmd.SetContext(ctx)
			return explainConnection(run(cmd, args), configFlags, answered())
		}
	})
}

// validateStateNamespace refuses a --state-namespace no namespace can have,
// for every command that takes it, before the cluster is asked.
func validateStateNamespace(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("state-namespace")
	if f == nil {
		return nil
	}
	if errs := validation.IsDNS1123Label(f.Value.String()); len(errs) > 0 {
		return usageErrorf("invalid --state-namespace %q: %s", f.Value.String(), strings.Join(errs, "; "))
	}
	return nil
}

// walk calls f on c and every command below it.
func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
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

// givenFlags are the names of the flags given on cmd's command line: the
// checks of flags that go together, or that a setting decides, ask it.
func givenFlags(cmd *cobra.Command) map[string]bool {
	given := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { given[f.Name] = true })
	return given
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
