package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// RunOptions are the flags of "run": the plan's, plus how to execute it.
type RunOptions struct {
	PlanOptions

	Yes bool
	// DryRun is --dry-run: none, or client (print the plan only).
	DryRun string

	planOnly bool // the plan command: always a client dry run
	// detailedExitCode is plan's --detailed-exitcode: exit 5 when run
	// would refuse the plan for its blockers.
	detailedExitCode bool
	// inCluster hands the run to a Job (--in-cluster), or makes this
	// process that Job's pod.
	inCluster inClusterOptions
	// rollback is plan's --rollback: the rollback of a finished run.
	rollback rollbackPlanOptions
}

const runExample = `  # Upgrade node group "demo" to a new AMI, 2 nodes at a time
  kubectl nodeupgrade run demo --ami ami-new --max-unavailable 2 --yes

  # Print exactly what "plan" prints, change nothing
  kubectl nodeupgrade run demo --ami ami-new --dry-run

  # Without a cloud provider: outdated nodes are those lacking the label
  kubectl nodeupgrade run demo --provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new --yes

  # Execute a plan reviewed earlier; refused if the cluster changed since
  kubectl nodeupgrade run --plan-file plan.json --yes`

// NewCmdRun builds "run".
func NewCmdRun(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd, _ := newCmdRun(configFlags, streams)
	return cmd
}

func newCmdRun(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) (*cobra.Command, *RunOptions) {
	o := &RunOptions{PlanOptions: PlanOptions{configFlags: configFlags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "run NODEGROUP",
		Short: "Upgrade a node group: taint, drain in batches and remove its outdated nodes",
		Long: `Upgrade a node group the way EKS managed node groups do: put a NoSchedule taint
on every outdated node, then, in batches of --max-unavailable nodes (zone-balanced
when the group spans several zones, else random; see --order), drain them
honouring PodDisruptionBudgets, cordon them, wait --post-drain-wait for load
balancers, and remove them. The next batch starts when the workloads evicted by
the last one have their pods scheduled again, and evicts a workload's pods only
once it is Ready again.

Hooks (--pre-drain-hook, --post-drain-hook, --pre-terminate-hook) run a command
for each node around its drain and removal, and the annotations
pre-drain.hook.nodeupgrade.dev/NAME and pre-terminate.hook.nodeupgrade.dev/NAME
on a node hold its drain and removal until taken off; a failed hook stops the
run with exit 10.

An interrupted run is finished by running the same command again; hooks that
succeeded are not run again.`,
		Example: runExample,
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE:    runE(o),
	}
	o.AddFlags(cmd)
	_ = cmd.Flags().MarkHidden("detailed-exitcode")
	return cmd, o
}

// Values of --dry-run, as kubectl's.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
)

// AddFlags registers run's flags: the planning flags and how the run goes.
// plan registers the same, so that "run" and "plan" swap in a command line.
func (o *RunOptions) AddFlags(cmd *cobra.Command) {
	o.PlanOptions.AddFlags(cmd)
	o.rollback.addFlags(cmd.Flags())
	f := cmd.Flags()
	r := &o.Request.Request
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (required without a terminal)")
	f.StringVar(&o.DryRun, "dry-run", dryRunNone, `"client" (or a bare --dry-run): print the plan, exactly as "plan" does, and change nothing; "none": run`)
	f.Lookup("dry-run").NoOptDefVal = dryRunClient
	f.StringVar(&r.PlanFile, "plan-file", "", "Execute a plan saved with \"plan -o json\"; refused if the cluster no longer matches it; its --post-drain-wait and --deregistration-timeout apply unless given again")
	durationVar(f, &r.DrainTimeout, "drain-timeout", 15*time.Minute, "How long a node's pods may take to leave before PodEvictionFailure (or deletion with --force), and the evicted workloads to be Ready again; with --strategy surge and autoscaled-blue-green 1h by default, then the remaining pods are deleted")
	f.StringVar(&r.Undrainable, "undrainable", upgrade.UndrainableFail, "What a node whose drain a pod still holds at --drain-timeout does: \"fail\" stops the run (PodEvictionFailure); \"cordon\" (eks, surge) quarantines it: left cordoned, tainted and labelled "+upgrade.UpgradeStatusLabel+"="+upgrade.StatusQuarantined+", its machine kept, the run goes on with the others and exits 8 naming it")
	f.IntVar(&r.MaxBlockedNodes, "max-blocked-nodes", 0, "With --undrainable cordon: stop the run once this many nodes are quarantined (0: never)")
	durationVar(f, &r.PostDrainWait, "post-drain-wait", 60*time.Second, "Wait after cordoning a drained node, so load balancers stop sending it traffic")
	durationVar(f, &r.DeregistrationTimeout, "deregistration-timeout", plan.DefaultDeregistrationTimeout, "With a cloud group behind load balancers (aws: target groups, Classic Load Balancers): how long a drained node's machine may take to leave them (their deregistration delay) before the run stops; it is removed only once they let go")
	f.StringArrayVar(&r.IgnoreChecks, "ignore-check", nil, "Start even though this check found blockers (repeatable); see \"kubectl nodeupgrade check --help\" for the names")
	durationVar(f, &r.NodeReadyTimeout, "node-ready-timeout", 15*time.Minute, "How long the scale-up waits for new nodes to be Ready, and a batch for room (new capacity) for the pods it will evict, before the run stops")
	durationVar(f, &r.TerminateTimeout, "terminate-timeout", upgrade.DefaultTerminateTimeout, "How long the run waits for each instance it terminates to be gone, e.g. held in Terminating:Wait by another system's lifecycle hook, which the run never completes; then it stops, and a re-run goes on")
	durationVar(f, &r.MaxAge, "max-age", 7*24*time.Hour, "With --strategy short-lived: how old the nodes left running may get; status flags older ones")
	f.BoolVar(&o.NoWait, "no-wait", false, "With --strategy blue-green: stop at the soak (exit 8), recorded as soaking until a time; run again or resume later")
	f.BoolVar(&r.DeleteNode, "delete-node", true, "With provider none: delete the Node object; false leaves it drained, cordoned and labelled "+plan.StateLabel+"="+plan.StateDone)
	// plan's: run exits 5 on blockers anyway; run takes it so that the
	// command lines swap.
	f.BoolVar(&o.detailedExitCode, "detailed-exitcode", false, "Exit 5 when the plan has blockers that run would refuse (as check does), instead of 0")
	addWindowFlags(f, r)
	addWaveFlags(f, r)
	o.inCluster.addFlags(f)
	f.BoolVar(&o.Request.Rollback, session.RollbackFlag, false, "Set by an in-cluster rollback's Job: this pod rolls the recorded run back")
	_ = f.MarkHidden(session.RollbackFlag)
	f.BoolVar(&r.LeaveMachinesRunning, session.LeaveMachinesRunningFlag, false, "With provider none: delete the Node objects even of nodes whose machines a cloud group may keep (aws://, gce://, azure:// provider IDs), leaving those machines running")
}

// Complete reads the plan file, whose settings replace the planning flags.
func (o *RunOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.PlanOptions.Complete(cmd, args); err != nil {
		return err
	}
	if o.planOnly {
		o.DryRun = dryRunClient
	}
	o.rollback.complete(cmd)
	o.Request.Fleet = os.Getenv(FleetEnv)
	if err := o.LoadPlanFile(); err != nil {
		return err
	}
	if len(args) == 1 && o.SavedPlan != nil && args[0] != o.SavedPlan.NodeGroup {
		return usageErrorf("NODEGROUP %q does not match node group %q of --plan-file %q", args[0], o.SavedPlan.NodeGroup, o.PlanFile)
	}
	// The strategy's drain timeout, once the plan file has said which.
	if s, err := plan.LookupStrategy(o.Strategy); err == nil && !o.Given["drain-timeout"] && s.Traits().DrainTimeout > 0 {
		o.DrainTimeout = s.Traits().DrainTimeout
	}
	return nil
}

// Validate checks the flags and that the run can be confirmed.
func (o *RunOptions) Validate() error {
	if err := o.rollback.validate(o.NodeGroup); err != nil {
		return err
	}
	if o.rollback.plan && o.DryRun == dryRunNone {
		return requireConfirmation(o.Yes, o.In)
	}
	if o.rollback.plan {
		return nil
	}
	if err := o.PlanOptions.Validate(); err != nil {
		return err
	}
	if err := o.ValidateRun(); err != nil {
		return err
	}
	if err := o.inCluster.validate(o.Given, o.Hooks.Any()); err != nil {
		return err
	}
	switch o.DryRun {
	case dryRunNone, dryRunClient:
	case dryRunServer:
		// The run's first writes depend on what the earlier ones returned
		// (the cloud group's new version, the scale-up's nodes): a server
		// dry run of them would prove little and could mislead.
		return usageErrorf("invalid --dry-run %q: a server-side dry run is not supported; use --dry-run=client to print the plan, or \"kubectl auth can-i\" to check permissions", o.DryRun)
	default:
		return usageErrorf("invalid --dry-run %q: must be none, client or server", o.DryRun)
	}
	if o.DryRun == dryRunNone {
		return requireConfirmation(o.Yes, o.In)
	}
	return nil
}

// requireConfirmation refuses a run that cannot be confirmed: no --yes and
// no terminal to ask on.
func requireConfirmation(yes bool, in io.Reader) error {
	if !yes && !output.IsTerminal(in) {
		return usageErrorf("refusing to run without a terminal to confirm on; use --yes (or --dry-run to only print the plan)")
	}
	return nil
}

// Run plans, asks, and upgrades.
func (o *RunOptions) Run(ctx context.Context) error {
	if o.rollback.plan {
		return o.planRollback(ctx)
	}
	if err := o.connect(); err != nil {
		return err
	}
	sess := o.session()
	prompt := session.Prompt{
		Print:            planPrinter(o.Out, o.Output),
		DryRun:           o.DryRun == dryRunClient,
		DetailedExitCode: o.detailedExitCode,
		Yes:              o.Yes,
		Confirm:          func(q string) (bool, error) { return askYes(o.In, o.ErrOut, q) },
	}
	switch {
	case o.inCluster.Job != "":
		if err := o.inCluster.prepare(ctx, sess, o.RecordName()); err != nil {
			return err
		}
	case o.inCluster.InCluster:
		prompt.Submit = o.inCluster.submitter(sess, o.IOStreams, o.client)
	}
	return sess.Execute(ctx, &o.Request, prompt)
}

// askYes asks question on errOut and reads the answer from in: yes only
// for y or yes.
func askYes(in io.Reader, errOut io.Writer, question string) (bool, error) {
	fmt.Fprintf(errOut, "%s [y/N]: ", question)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}
