package plugin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// ControlOptions are the flags of cancel, resume, rollback and complete:
// they act on a node group's recorded run, alive or not.
type ControlOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	action         string
	client         kubernetes.Interface // set by tests; else from the flags
	sess           *session.Session
	NodeGroup      string
	StateNamespace string
	Yes            bool
	// RollbackWindow is how long after a run finished rollback takes the
	// group back to the version before it.
	RollbackWindow time.Duration
	// schedule are rollback's --window, --not-before and --not-after,
	// given (scheduleGiven) to replace the finished run's own.
	schedule      plan.Request
	scheduleGiven bool
	// inCluster hands resume's and rollback's run to a Job.
	inCluster inClusterOptions
}

var controlHelp = map[string][3]string{
	"cancel": {"Pause a node group's run at its next safe point",
		`Pause the run on NODEGROUP: a live run stops at its next safe point (between
phases and batches, or during a soak; never while blue is deleted) and exits 8;
a run whose process is gone is marked paused. "resume" continues it.

Where the cloud's service runs the update (GKE node pools), cancel, resume,
rollback and complete call the service's own controls (operations.cancel,
the update again, nodePools.rollback, completeUpgrade); an EKS managed node
group's in-place update cannot be stopped, and cancel says so (exit 2).`,
		`  # Pause the upgrade of node group "demo"
  kubectl nodeupgrade cancel demo`},
	"resume": {"Continue a node group's paused or interrupted run",
		`Continue the run on NODEGROUP from its recorded phase, with the arguments it
was started with (recorded with it); the connection flags are this command's.`,
		`  # Continue the paused upgrade of node group "demo"
  kubectl nodeupgrade resume demo --yes`},
	"rollback": {"Undo a node group's partial or finished upgrade",
		`Undo the run on NODEGROUP.

blue-green, before blue is deleted: blue is uncordoned and back at its
sizes, green is drained (its pods go back to blue) and, if the run created
it, deleted. A live run turns around at its next safe point; otherwise this
command does it.

eks and surge, on an Auto Scaling group, when the run is not alive (cancel
it first): the same strategy runs towards the launch template version the
group launched before, so only the nodes already upgraded are replaced; the
others are not touched, and the end restores the recorded sizes.

After an eks or surge run finished, within --rollback-window (default 7
days; status says until when): the same run towards the version the record
says the group launched before it, planned and confirmed as a run
("plan NODEGROUP --rollback" shows the plan), in the run's maintenance
windows (its --window, and its --not-before and --not-after still ahead)
unless --window, --not-before or --not-after are given again. After a
blue-green run with --keep-blue finished, within that time: blue's kept
group is scaled back up and the nodes of the group green became are
drained onto it, with no group made.

Refused where the recorded phase does not allow it (blue being deleted,
nothing recorded to go back to), past the window, and for
autoscaled-blue-green.

--in-cluster runs the rollback from a Job in --state-namespace, as
run --in-cluster does a run, and follows it (docs/in-cluster.md).`,
		`  # Roll back the upgrade of node group "demo"
  kubectl nodeupgrade rollback demo --yes`},
	"complete": {"End a node group's blue/green soak now",
		`End the soak of the blue/green run on NODEGROUP now: a live run goes on to
delete blue at once; for a run whose process is gone, the next run or resume
does.`,
		`  # Skip the rest of the soak of node group "demo"
  kubectl nodeupgrade complete demo`},
}

// NewCmdControl builds cancel, resume, rollback or complete.
func NewCmdControl(action string, configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ControlOptions{configFlags: configFlags, IOStreams: streams, action: action}
	h := controlHelp[action]
	cmd := &cobra.Command{
		Use:     action + " NODEGROUP",
		Short:   h[0],
		Long:    h[1],
		Example: h[2],
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("missing NODEGROUP: give the node group whose run to %s", action)
			}
			o.NodeGroup = args[0]
			given := givenFlags(cmd)
			if err := o.inCluster.validate(given, false); err != nil {
				return err
			}
			o.scheduleGiven = slices.ContainsFunc(windowFlags, func(f string) bool { return given[f] })
			if action == "rollback" && o.RollbackWindow <= 0 {
				return usageErrorf("--rollback-window must be positive, got %s", o.RollbackWindow)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the run's record and lock")
	if action == "resume" || action == "rollback" {
		cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (required without a terminal)")
		o.inCluster.addFlags(cmd.Flags())
	}
	if action == "rollback" {
		durationVar(cmd.Flags(), &o.RollbackWindow, "rollback-window", state.DefaultRollbackWindow, "How long after a run finished rollback takes the group back to the version it ran before")
		addWindowFlags(cmd.Flags(), &o.schedule)
	}
	return cmd
}

// Run looks the run up and has the session carry the action out: it
// checks the lifecycle, records what was asked, then acts; Run prints.
func (o *ControlOptions) Run(ctx context.Context) error {
	po := &PlanOptions{configFlags: o.configFlags, client: o.client}
	if err := po.connect(); err != nil {
		return err
	}
	o.sess = newSession(o.configFlags, po.client, po.context, o.IOStreams, o.StateNamespace)
	run, err := o.sess.Look(ctx, o.NodeGroup)
	if err != nil {
		return err
	}
	if run == nil {
		return usageErrorf("cannot %s: node group %q has no run recorded in namespace %q; check --state-namespace", o.action, o.NodeGroup, o.StateNamespace)
	}
	controls := o.sess.Controls()
	switch o.action {
	case "resume":
		return controls.Resume(ctx, run, o.prompt())
	case "rollback":
		return o.rollback(ctx, run)
	}
	if run.Record.Managed != nil {
		// The cloud's service runs the update: its own controls act on it.
		return controls.Service(ctx, run, session.Command(o.action), o.prompt())
	}
	switch o.action {
	case "cancel":
		return o.cancel(ctx, run)
	case "complete":
		return o.complete(ctx, run)
	}
	return usageErrorf("unknown action %q", o.action)
}

// cancel asks a live run to pause at its next safe point, or pauses a
// stopped one.
func (o *ControlOptions) cancel(ctx context.Context, run *session.Run) error {
	earlier, err := o.sess.Controls().Cancel(ctx, run)
	if err != nil {
		return err
	}
	if run.Status == state.StateSubmitted {
		fmt.Fprintf(o.Out, "withdrew the run on %q before its pod started it: nothing was changed\n", o.NodeGroup)
		if earlier != nil && earlier.FinishedAt == nil {
			if v := session.Describe(earlier, false, "", time.Now()); v.Suggest() != "" {
				fmt.Fprintf(o.Out, "the run before it is %s again: %s\n", v.Status, v.Suggest())
			}
		}
		return nil
	}
	if run.Alive {
		fmt.Fprintf(o.Out, "asked the run on %q (%s) to pause at its next safe point; it is %s\n", o.NodeGroup, run.Record.Holder, run.Where())
	} else {
		fmt.Fprintf(o.Out, "paused the run on %q %s; continue with \"kubectl nodeupgrade resume %s\"\n", o.NodeGroup, run.Where(), o.NodeGroup)
	}
	return nil
}

// complete ends a soak now.
func (o *ControlOptions) complete(ctx context.Context, run *session.Run) error {
	asked, err := o.sess.Controls().Complete(ctx, run)
	if err != nil {
		return err
	}
	if asked {
		fmt.Fprintf(o.Out, "asked the run on %q to end its soak now\n", o.NodeGroup)
	} else {
		fmt.Fprintf(o.Out, "ended the soak of %q; \"kubectl nodeupgrade resume %s\" goes on to delete blue\n", o.NodeGroup, o.NodeGroup)
	}
	return nil
}

// rollback has the session undo the run, with this command's window and
// schedule; a live blue/green run is only asked to turn around.
func (o *ControlOptions) rollback(ctx context.Context, run *session.Run) error {
	opts := session.RollbackOptions{Window: o.RollbackWindow}
	if o.scheduleGiven {
		opts.Schedule = &o.schedule
	}
	asked, err := o.sess.Controls().Rollback(ctx, run, opts, o.prompt())
	if err == nil && asked {
		fmt.Fprintf(o.Out, "asked the run on %q to roll back at its next safe point\n", o.NodeGroup)
	}
	return err
}

// prompt is how a run resume or rollback starts shows its plan and asks;
// with --in-cluster, a Job runs the reviewed plan (a blue/green
// rollback's rolling back, session.RollbackFlag), as this command would.
func (o *ControlOptions) prompt() session.Prompt {
	p := session.Prompt{
		Print:    planPrinter(o.Out, ""),
		Yes:      o.Yes,
		Terminal: output.IsTerminal(o.In),
		Confirm:  func(q string) (bool, error) { return askYes(o.In, o.ErrOut, q) },
	}
	if o.inCluster.InCluster {
		p.Submit = o.inCluster.submitter(o.sess, o.IOStreams, o.sess.Client)
	}
	return p
}
