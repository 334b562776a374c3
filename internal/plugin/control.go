package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// ControlOptions are the flags of cancel, resume, rollback and complete:
// they act on a node group's recorded run, alive or not.
type ControlOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	action         string
	client         kubernetes.Interface
	context        string // the kubeconfig context client talks to
	NodeGroup      string
	StateNamespace string
	Yes            bool
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
	"rollback": {"Undo a node group's partial upgrade",
		`Undo the run on NODEGROUP.

blue-green, before blue is deleted: blue is uncordoned and back at its
sizes, green is drained (its pods go back to blue) and, if the run created
it, deleted. A live run turns around at its next safe point; otherwise this
command does it.

eks and surge, on an Auto Scaling group, when the run is not alive (cancel
it first): the same strategy runs towards the launch template version the
group launched before, so only the nodes already upgraded are replaced; the
others are not touched, and the end restores the recorded sizes.

Refused where the recorded phase does not allow it (blue being deleted,
nothing recorded to go back to) and for autoscaled-blue-green.`,
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
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the run's record and lock")
	if action == "resume" || action == "rollback" {
		cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation (required without a terminal)")
	}
	return cmd
}

// Run checks the recorded phase allows the action, then does it.
func (o *ControlOptions) Run(ctx context.Context) error {
	po := &PlanOptions{configFlags: o.configFlags, client: o.client}
	if err := po.connect(); err != nil {
		return err
	}
	o.client, o.context = po.client, po.context
	// The lock before the record: a run writes its last record, then gives
	// the lock up, so a record read after the lock was seen free is final.
	alive := o.holderAlive(ctx, po)
	store := &state.Store{Client: po.client, Namespace: o.StateNamespace}
	rec, err := store.Load(ctx, o.NodeGroup)
	if err != nil {
		return err
	}
	if rec == nil || rec.FinishedAt != nil {
		return usageErrorf("cannot %s: node group %q has no unfinished run in namespace %q", o.action, o.NodeGroup, o.StateNamespace)
	}
	if rec.Managed != nil {
		// The cloud's service runs the update: its own controls act on it.
		return o.managedControl(ctx, rec, alive)
	}
	requests := &state.Requests{Store: store, Group: o.NodeGroup}
	switch o.action {
	case "cancel":
		return o.cancel(ctx, rec, requests, alive)
	case "complete":
		return o.complete(ctx, rec, requests, alive)
	case "rollback":
		return o.rollback(ctx, rec, requests, alive)
	case "resume":
		if alive {
			return usageErrorf("cannot resume: the run on %q is alive (%s); wait for it or cancel it", o.NodeGroup, rec.Holder)
		}
		return o.rerunRecorded(ctx, rec, requests, false)
	}
	return usageErrorf("unknown action %q", o.action)
}

// cancel asks a live run to pause at its next safe point, or pauses a
// stopped one.
func (o *ControlOptions) cancel(ctx context.Context, rec *state.Record, requests *state.Requests, alive bool) error {
	phase := plan.Phase(rec.Phase)
	if phase == plan.PhaseDeleteBlue {
		return usageErrorf("cannot cancel: the run on %q is deleting blue, which cannot be paused", o.NodeGroup)
	}
	if alive && noSafePointLeft(rec) {
		g := o.NodeGroup
		return usageErrorf("cannot cancel: the run on %q is in phase %s, after which it has no safe point to pause at: it ends on its own; follow it with \"kubectl nodeupgrade status -w %s\", then undo it with rollback or a run towards the previous version", g, phase, g)
	}
	if err := requests.Send(ctx, state.RequestCancel); err != nil {
		return err
	}
	if alive {
		fmt.Fprintf(o.Out, "asked the run on %q (%s) to pause at its next safe point; it is in phase %s\n", o.NodeGroup, rec.Holder, phase)
	} else {
		fmt.Fprintf(o.Out, "paused the run on %q in phase %s; continue with \"kubectl nodeupgrade resume %s\"\n", o.NodeGroup, phase, o.NodeGroup)
	}
	return nil
}

// complete ends a soak now.
func (o *ControlOptions) complete(ctx context.Context, rec *state.Record, requests *state.Requests, alive bool) error {
	if phase := plan.Phase(rec.Phase); phase != plan.PhaseSoak && phase != plan.PhaseBatchSoak {
		return usageErrorf("cannot complete: the run on %q is in phase %s, not soaking", o.NodeGroup, phase)
	}
	if err := requests.Send(ctx, state.RequestComplete); err != nil {
		return err
	}
	if alive {
		fmt.Fprintf(o.Out, "asked the run on %q to end its soak now\n", o.NodeGroup)
	} else {
		fmt.Fprintf(o.Out, "the soak of %q is over; \"kubectl nodeupgrade resume %s\" goes on to delete blue\n", o.NodeGroup, o.NodeGroup)
	}
	return nil
}

// rollback turns the run around: in place, as a live blue/green run's
// request, or by a blue/green rollback run of a stopped one.
func (o *ControlOptions) rollback(ctx context.Context, rec *state.Record, requests *state.Requests, alive bool) error {
	var traits plan.Traits
	if s, err := plan.LookupStrategy(rec.Strategy); err == nil {
		traits = s.Traits()
	}
	switch traits.Rollback {
	case plan.RollbackInPlace:
		return o.rollbackInPlace(ctx, rec, alive)
	case plan.RollbackNone:
		names := plan.RollbackStrategies()
		return usageErrorf("cannot roll back: the run on %q uses strategy %q; rollback supports %s and %s; \"kubectl nodeupgrade abort %s\" puts the group back in service", o.NodeGroup, rec.Strategy, strings.Join(names[:len(names)-1], ", "), names[len(names)-1], o.NodeGroup)
	}
	if phase := plan.Phase(rec.Phase); phase == plan.PhaseDeleteBlue || phase == plan.PhaseRollback && alive {
		return usageErrorf("cannot roll back: the run on %q is in phase %s", o.NodeGroup, phase)
	}
	if !alive {
		return o.rerunRecorded(ctx, rec, requests, true)
	}
	if err := requests.Send(ctx, state.RequestRollback); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "asked the run on %q to roll back at its next safe point\n", o.NodeGroup)
	return nil
}

// rerunRecorded runs the recorded request again, forward or rolling back,
// with no request pending.
func (o *ControlOptions) rerunRecorded(ctx context.Context, rec *state.Record, requests *state.Requests, rollback bool) error {
	req, err := o.recordedRequest(rec)
	if err != nil {
		return err
	}
	if err := requests.Clear(ctx); err != nil {
		return err
	}
	return o.rerun(ctx, rec, req, rollback)
}

// noSafePointLeft reports whether a live run in rec's phase meets no safe
// point before it ends (the engine reads requests between phases): a
// cancel would be answered yes and do nothing.
func noSafePointLeft(rec *state.Record) bool {
	phase := plan.Phase(rec.Phase)
	if phase == plan.PhaseRollback || phase == plan.PhaseDone {
		return true // a rollback reads no request
	}
	s, err := plan.LookupStrategy(rec.Strategy)
	if err != nil || phase == "" {
		return false
	}
	next := s.Next(plan.State{Phase: phase, Batch: max(rec.Batch-1, 0)}, plan.Flow{Batches: rec.Batches, CloudGroup: rec.Cloud != nil})
	return next.Phase == plan.PhaseDone
}

// holderAlive reports whether a live run holds the node group's lock.
func (o *ControlOptions) holderAlive(ctx context.Context, po *PlanOptions) bool {
	return o.holder(ctx, po) != nil
}

// holder is the live run that holds the node group's lock, and until
// when, or nil.
func (o *ControlOptions) holder(ctx context.Context, po *PlanOptions) *state.HeldError {
	lock := &state.Lock{Client: po.client, Namespace: o.StateNamespace, Group: o.NodeGroup, Holder: "probe/" + fmt.Sprint(time.Now().UnixNano()), Duration: lockDuration}
	held, err := lock.HeldBy(ctx)
	if err != nil {
		return nil
	}
	return held
}

// rerun runs the recorded run again from its recorded phase (or its
// rollback), as its recorded request asks, with this command's connection.
func (o *ControlOptions) rerun(ctx context.Context, rec *state.Record, req plan.Request, rollback bool) error {
	_, ro := newCmdRun(o.configFlags, o.IOStreams)
	// This command's connection, made once.
	ro.client, ro.context = o.client, o.context
	ro.Request, ro.StateNamespace, ro.Yes, ro.rollback = req, o.StateNamespace, o.Yes, rollback
	if err := ro.loadPlanFile(); err != nil {
		return err
	}
	if err := ro.Validate(); err != nil {
		return err
	}
	what := "resuming"
	if rollback {
		what = "rolling back"
	}
	fmt.Fprintf(o.Out, "%s the run on %q from phase %s\n", what, o.NodeGroup, rec.Phase)
	return ro.Run(ctx)
}

// recordedRequest is the request of the recorded run, or why there is none.
func (o *ControlOptions) recordedRequest(rec *state.Record) (plan.Request, error) {
	if rec.Request == nil {
		return plan.Request{}, usageErrorf("cannot %s: the record of %q holds no request to repeat (made by an older version); run the original command again", o.action, o.NodeGroup)
	}
	return requestToRepeat(rec), nil
}

// requestToRepeat is the recorded run's request, with the provider it ran
// on where the provider was detected: the cloud flags alone need not tell
// which cloud takes them, as the flags given did.
func requestToRepeat(rec *state.Record) plan.Request {
	req := *rec.Request
	if req.Provider == "" && rec.Cloud != nil {
		req.Provider = rec.Cloud.Provider
	}
	return req
}

// rollbackInPlace undoes a partial eks or surge run on a cloud group: the
// same strategy, run again towards the version the group launched before,
// so only the nodes already upgraded are replaced; the others are not
// touched, and the end restores the recorded sizes.
func (o *ControlOptions) rollbackInPlace(ctx context.Context, rec *state.Record, alive bool) error {
	if alive {
		return usageErrorf("cannot roll back: the run on %q is alive (%s); cancel it first", o.NodeGroup, rec.Holder)
	}
	if rec.Cloud == nil || rec.Cloud.FromVersion == "" {
		return usageErrorf("cannot roll back: the run on %q recorded no launch template version to go back to (provider none, or it stopped before Setup); \"kubectl nodeupgrade abort %s\" puts the group back in service", o.NodeGroup, o.NodeGroup)
	}
	req, err := o.recordedRequest(rec)
	if err != nil {
		return err
	}
	req.Cloud.Image, req.Cloud.Version, req.PlanFile = "", rec.Cloud.FromVersion, ""
	if err := (&state.Requests{Store: &state.Store{Client: o.client, Namespace: o.StateNamespace}, Group: o.NodeGroup}).Clear(ctx); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "rolling back the run on %q: the nodes already on version %s go back to version %s\n", o.NodeGroup, rec.Cloud.TargetVersion, rec.Cloud.FromVersion)
	return o.rerun(ctx, rec, req, false)
}
