package plugin

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
)

// Drive runs the plugin's command name (plan, run, abort, cancel, resume,
// rollback, complete or status) with args against client, as the plugin
// does once connected, and returns what it printed and its exit code. It
// is how the provider conformance suite (pkg/cloud/conformance) drives
// the plugin over a provider and its fake, with no kubeconfig.
func Drive(ctx context.Context, client kubernetes.Interface, name string, args ...string) (stdout, stderr string, code int) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd, err := driven(client, name, streams)
	if err != nil {
		return "", err.Error() + "\n", ExitUsage
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	return executeDriven(ctx, cmd, out, errOut, args)
}

// driven builds command name with client set where a connection would be.
func driven(client kubernetes.Interface, name string, streams genericiooptions.IOStreams) (*cobra.Command, error) {
	flags := genericclioptions.NewConfigFlags(false)
	switch name {
	case "plan", "run":
		cmd, o := newCmdRun(flags, streams)
		o.client, o.planOnly = client, name == "plan"
		return cmd, nil
	case "status":
		cmd, o := newCmdStatus(flags, streams)
		o.client = client
		return cmd, nil
	case "abort":
		o := &AbortOptions{configFlags: flags, IOStreams: streams, pollInterval: 100 * time.Millisecond, client: client}
		cmd := &cobra.Command{Use: "abort NODEGROUP", RunE: runE(o)}
		o.addFlags(cmd.Flags())
		return cmd, nil
	case "cancel", "resume", "rollback", "complete":
		return drivenControl(client, name, streams), nil
	}
	return nil, fmt.Errorf("unknown command %q", name)
}

// drivenControl is NewCmdControl's command with client set.
func drivenControl(client kubernetes.Interface, action string, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := NewCmdControl(action, genericclioptions.NewConfigFlags(false), streams)
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return run(c, args)
		}
		o := &ControlOptions{IOStreams: streams, action: action, client: client, NodeGroup: args[0]}
		o.StateNamespace, _ = c.Flags().GetString("state-namespace")
		o.Yes = true
		if err := o.inCluster.validate(givenFlags(c), false); err != nil {
			return err
		}
		return o.Run(c.Context())
	}
	return cmd
}

// executeDriven runs cmd with args, its output in out and errOut.
func executeDriven(ctx context.Context, cmd *cobra.Command, out, errOut *bytes.Buffer, args []string) (stdout, stderr string, code int) {
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	code = PrintError(errOut, cmd.ExecuteContext(ctx))
	return out.String(), errOut.String(), code
}
