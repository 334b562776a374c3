package plugin

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// ReportOptions are the flags of report: which node group's runs, how many,
// printed how.
type ReportOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	client         kubernetes.Interface // set by tests; else from the flags
	NodeGroup      string
	StateNamespace string
	Output         string
	Runs           int
}

const reportExample = `  # What held each node of node group "demo" in its last run, and for how long
  kubectl nodeupgrade report demo

  # The last runs kept (at most 5), as JSON
  kubectl nodeupgrade report demo --runs 0 -o json`

// NewCmdReport builds "report".
func NewCmdReport(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ReportOptions{configFlags: configFlags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "report NODEGROUP",
		Short: "Show what held each node of a node group's last runs, and for how long",
		Long: `Show the last run on NODEGROUP (and with --runs the ones before, at most 5
are kept): its outcome (as status says it), its wall time against the plan's
estimate, its attempts (run, re-run, resume, in-cluster pod, rollback: when
each started and ended, and how), the top blockers (each pod whose eviction
a PodDisruptionBudget refused, the PDB, the node, and for how long it held
it), the time spent in each phase over the attempts, each attempt's batches,
and each node's timeline in each attempt: tainted, drain start, drained,
time held, machine removed, the replacement that became Ready after it.

A run writes its report at each batch's end and at its end, beside its
record in --state-namespace (ConfigMap nodeupgrade-<group>-report, kept
within 256 KiB: the shortest blocks go first, then the oldest runs).`,
		Example: reportExample,
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE:    runE(o),
	}
	cmd.Flags().StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the runs' records and reports")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json, yaml, jsonpath=... or go-template=... (default: tables)")
	cmd.Flags().IntVar(&o.Runs, "runs", 1, "How many of the last runs to show; 0 for every run kept")
	return cmd
}

// Complete reads the node group.
func (o *ReportOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.NodeGroup = args[0]
	}
	return nil
}

// Validate checks the flags before the cluster is touched.
func (o *ReportOptions) Validate() error {
	switch {
	case o.NodeGroup == "":
		return usageErrorf("missing NODEGROUP: give the node group whose runs to report")
	case o.Runs < 0:
		return usageErrorf("invalid --runs %d: must be 0 (every run kept) or more", o.Runs)
	case o.Output == output.FormatWide || o.Output == output.FormatName:
		return usageErrorf("invalid --output %q: report prints tables, json, yaml, jsonpath or go-template", o.Output)
	}
	if err := output.ValidateTableFormat(o.Output); err != nil {
		return &usageError{err: err}
	}
	return nil
}

// Run reads the node group's reports and prints them.
func (o *ReportOptions) Run(ctx context.Context) error {
	if err := connectClient(o.configFlags, &o.client); err != nil {
		return err
	}
	sess := &session.Session{Client: o.client, StateNamespace: o.StateNamespace, IOStreams: o.IOStreams}
	rep, err := sess.Reports().Report(ctx, o.NodeGroup, o.Runs)
	if err != nil {
		return err
	}
	if !output.IsTable(o.Output) {
		return output.Print(o.Out, o.Output, rep)
	}
	return report.WriteTable(o.Out, rep)
}
