package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// AbortOptions are the flags of "abort".
type AbortOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	NodeGroup      string
	StateNamespace string
	Wait           bool
	// Yes skips the question asked on a terminal.
	Yes bool
	// Used only when nothing is recorded: how to find the group's nodes
	// and the run's taint.
	NodeGroupLabel string
	Selector       string
	Taint          string

	// inCluster puts the group back from a Job in the cluster, or makes
	// this process that Job's pod.
	inCluster inClusterOptions
	given     map[string]bool

	// pollInterval is how often --wait looks whether the run has stopped.
	pollInterval time.Duration
	isTerminal   func() bool          // set by tests; else whether In is a terminal
	client       kubernetes.Interface // set by tests; else from the connection flags
}

const abortExample = `  # Put node group "demo" back in service, whatever its run was doing
  kubectl nodeupgrade abort demo

  # The run is still alive: ask it to stop, then abort once it has
  kubectl nodeupgrade abort demo --wait`

// NewCmdAbort builds "abort".
func NewCmdAbort(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AbortOptions{configFlags: configFlags, IOStreams: streams, pollInterval: time.Second}
	cmd := &cobra.Command{
		Use:   "abort NODEGROUP",
		Short: "Put a node group back in service from any phase of its run, without upgrading it further",
		Long: `Stop the upgrade of NODEGROUP where it is and put the group back in service:
every node the run did not finish loses the run's taint, its cordon, the
exclude-from-external-load-balancers label the run set and the
scale-down-disabled annotation; the sizes recorded before the run come back
by the run's own scale-down (one node at a time, each drained honouring
PodDisruptionBudgets; it stops if the cluster autoscaler scaled the group
up), which removes the nodes on the target before the outdated ones, once
the machines the run launched have their nodes, so a run stopped before its
first drain leaves the group as it was; the template's default before the
run comes back, unless every node left runs the target; abort then waits,
up to the run's --drain-timeout, for the workloads the run evicted pods of
to be Ready again; the lock is released and the
record is marked aborted (see status).
Nodes already upgraded stay; "rollback" is what replaces them with the
previous version.

blue-green and autoscaled-blue-green, before blue is deleted: blue is
uncordoned and back at its sizes; a green group the run created is drained
(its pods go back to blue) and deleted, as nothing would lead back to it
once the run is aborted; a green given with --green-asg or --green-selector
is left serving as it is. Refused while blue is being deleted.

Where the cloud's service runs the update (EKS managed node groups in
place, GKE node pools), abort never stops or undoes the service's update:
on one that has not ended it refuses (exit 2) and says what the service
allows (GKE, by phase: cancel, rollback, resume, complete, or nothing
while blue is deleted; EKS: nothing until it ends); once it has ended,
abort puts the service's update settings back and ends the record.

With no record (a first run killed before it wrote one), the nodes carrying
the run's taint are untainted and uncordoned: --nodegroup-label, -l and
--taint say how to find them, as they did for the run.

A live run is not aborted under its feet: abort refuses, or with --wait asks
it to stop (as cancel does) and goes on once it has. Exits 0 when the group
is back in service.

--in-cluster does the abort's work from a Job in --state-namespace, as
run --in-cluster does a run's, and follows it: its pod plans the group
again from the record and puts it back in service as abort does here;
a pod killed is replaced, and the next one aborts what is left. The Job of
the stopped run, if it would start the run again, is deleted first.`,
		Example: abortExample,
		Args:    argsAtMost(1, "one NODEGROUP"),
		RunE:    runE(o),
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *AbortOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the run's record and lock")
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation on a terminal (without one, abort does not ask)")
	f.BoolVar(&o.Wait, "wait", false, "If a run is alive, ask it to stop at its next safe point (as cancel does) and abort once it has")
	f.StringVar(&o.NodeGroupLabel, "nodegroup-label", "", "With no record: label key whose value is the node group name (default: detected)")
	f.StringVarP(&o.Selector, "selector", "l", "", "Select the group's nodes by this label selector instead of NODEGROUP, as the run did")
	f.StringVar(&o.Taint, "taint", "", "With no record: the taint the run put on outdated nodes (default <nodegroup-label>=unschedulable:NoSchedule)")
	o.inCluster.addFlags(f)
}

// Complete reads NODEGROUP and the flags given.
func (o *AbortOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.NodeGroup = args[0]
	}
	o.given = givenFlags(cmd)
	return nil
}

// Validate checks the flags before the cluster is touched.
func (o *AbortOptions) Validate() error {
	if err := session.GroupOrSelector(o.NodeGroup, o.Selector, "the node group whose run to abort,"); err != nil {
		return err
	}
	if o.Taint != "" {
		if _, err := plan.ParseTaint(o.Taint); err != nil {
			return err
		}
	}
	return o.inCluster.validate(o.given, false)
}

// Run refuses a live run (or stops it, --wait), takes the lock, and puts
// the group back in service.
func (o *AbortOptions) Run(ctx context.Context) error {
	po := &PlanOptions{configFlags: o.configFlags, client: o.client}
	if err := po.connect(); err != nil {
		return err
	}
	sess := newSession(o.configFlags, po.client, po.context, o.IOStreams, o.StateNamespace)
	group := session.RecordName(o.NodeGroup, o.Selector)
	if o.inCluster.Job != "" {
		// A pod of an abort Job: a killed one's lock runs out first.
		if err := o.inCluster.prepare(ctx, sess, group); err != nil {
			return err
		}
		if err := sess.WaitOutLock(ctx, group); err != nil {
			return err
		}
	}
	rec, finished, err := o.recordToAbort(ctx, sess, group)
	if err != nil {
		return err
	}
	if o.inCluster.InCluster {
		return o.submit(ctx, sess, po, rec, group)
	}
	return sess.Controls().Abort(ctx, session.AbortTarget{
		NodeGroup: o.NodeGroup, Selector: o.Selector, Unfinished: rec, Finished: finished,
		NodeGroupLabel: o.NodeGroupLabel, Taint: o.Taint,
	})
}

// recordToAbort reads the run to abort, once confirmed and any live run
// stopped: rec is the unfinished run's record, finished the last run's
// when it is over (nil otherwise). It refuses what abort cannot undo.
func (o *AbortOptions) recordToAbort(ctx context.Context, sess *session.Session, group string) (rec, finished *state.Record, err error) {
	// The lock before the record, as control commands read them: a record
	// read after the lock was seen free is the run's last.
	held, err := sess.Holder(ctx, group)
	if err != nil {
		return nil, nil, err
	}
	if rec, err = sess.Record(ctx, group); err != nil {
		return nil, nil, err
	}
	if err := o.confirm(rec, group); err != nil {
		return nil, nil, err
	}
	if held != nil {
		if rec, err = o.stopLiveRun(ctx, sess, group, rec, held); err != nil {
			return nil, nil, err
		}
	}
	if rec != nil && rec.FinishedAt != nil {
		// Over already: nothing recorded to undo, but its taint may be
		// found on nodes (a run towards another target left it).
		fmt.Fprintf(o.Out, "the last run on %q is over; looking for anything left on its nodes\n", group)
		return nil, rec, nil
	}
	// The lifecycle refuses what abort cannot undo (a run deleting blue),
	// in the words every control uses, and a service's update that has
	// not ended is left to the service.
	if err := sess.Controls().RefuseAbort(ctx, rec); err != nil {
		return nil, nil, err
	}
	return rec, nil, nil
}

// submit hands the abort of rec's run to a Job and follows it as
// status -w does.
func (o *AbortOptions) submit(ctx context.Context, sess *session.Session, po *PlanOptions, rec *state.Record, group string) error {
	if rec == nil {
		return usageErrorf("cannot abort in the cluster: %q has no unfinished run to put back; \"kubectl nodeupgrade abort %s\" without --in-cluster takes what a run left off its nodes", group, group)
	}
	ic := &o.inCluster
	submitted := time.Now().Add(-time.Second).UTC().Truncate(time.Second)
	job, err := sess.Jobs().SubmitAbort(ctx, rec, ic.job())
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "submitted: Job %s/%s aborts the run with image %s; following it as \"kubectl nodeupgrade status %s -w\" does (Ctrl-C stops following, not the abort)\n",
		job.Namespace, job.Name, ic.image(), group)
	return ic.follow(ctx, sess, o.IOStreams, po.client, job, group, submitted)
}

// confirm asks on a terminal, unless --yes, what run, resume and
// rollback ask there: whether to go on. Without a terminal abort does not
// ask: it is the way back to service, and scripts call it.
func (o *AbortOptions) confirm(rec *state.Record, group string) error {
	if o.Yes || !o.terminal() {
		return nil
	}
	question := fmt.Sprintf("Abort the run on %q: put its nodes back in service, without upgrading more?", group)
	if rec != nil && rec.FinishedAt == nil {
		question = fmt.Sprintf("Abort the run on %q in phase %s: put the nodes it did not finish back in service and restore the group's sizes (%s already replaced stay)?", group, rec.Phase, plan.Count(len(rec.Counted()), "node"))
	}
	ok, err := askYes(o.In, o.ErrOut, question)
	if err != nil || !ok {
		return usageErrorf("aborted: nothing was changed")
	}
	return nil
}

// terminal reports whether abort can ask on its input.
func (o *AbortOptions) terminal() bool {
	if o.isTerminal != nil {
		return o.isTerminal()
	}
	return output.IsTerminal(o.In)
}

// stopLiveRun refuses to abort a live run, or with --wait asks it to
// stop, as cancel does, and waits until its lock is free. It returns the
// record as the stopped run left it.
func (o *AbortOptions) stopLiveRun(ctx context.Context, sess *session.Session, group string, rec *state.Record, held *state.HeldError) (*state.Record, error) {
	holder := held.Holder
	if rec != nil && plan.Phase(rec.Phase) == plan.PhaseDeleteBlue {
		return nil, usageErrorf("cannot abort: the run on %q (%s) is deleting blue, which cannot be stopped or undone; let it finish", group, holder)
	}
	if !o.Wait && held.Elsewhere() {
		// This machine cannot see whether that process still runs: only
		// the lease's end tells a killed run from a live one.
		return nil, usageErrorf("cannot abort: the run on %q holds its lock from another machine (%s), renewed %s ago; if that run is gone (killed, its machine down), the lock runs out in %s; abort --wait waits for that, or for a live run to stop as cancel asks, and aborts then",
			group, holder, time.Since(held.RenewedAt).Round(time.Second), max(time.Until(held.Expires), 0).Round(time.Second))
	}
	if !o.Wait {
		return nil, usageErrorf("cannot abort: the run on %q is alive (%s); stop it with \"kubectl nodeupgrade cancel %s\" first, or use abort --wait to stop it and abort once it has stopped", group, holder, group)
	}
	if err := sess.Controls().AskStop(ctx, group); err != nil {
		return nil, err
	}
	elsewhere := ""
	if held.Elsewhere() {
		elsewhere = fmt.Sprintf(" (a run gone on another machine: until its lock runs out, in %s)", max(time.Until(held.Expires), 0).Round(time.Second))
	}
	fmt.Fprintf(o.Out, "asked the run on %q (%s) to stop at its next safe point; waiting for it to stop%s\n", group, holder, elsewhere)
	for {
		still, err := sess.Holder(ctx, group)
		if err != nil {
			return nil, err
		}
		if still == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.pollInterval):
		}
	}
	return sess.Record(ctx, group)
}
