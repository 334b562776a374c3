package plugin

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
)

// FleetApproveOptions are the flags of "fleet approve".
type FleetApproveOptions struct {
	fleetOptions
	Name, Stage string
}

func newCmdFleetApprove(base fleetOptions) *cobra.Command {
	o := &FleetApproveOptions{fleetOptions: base}
	cmd := &cobra.Command{
		Use:   "approve NAME STAGE",
		Short: "Let a fleet go on past a stage that waits for approval",
		Long: `Record in the fleet's record (in --record-context) that STAGE of fleet NAME is
approved: the fleet's coordinator, waiting after that stage, starts the next.
The approval is recorded with who gave it.`,
		Example: `  # Let fleet "rollout" go on after its canary stage
  kubectl nodeupgrade fleet approve rollout canary`,
		RunE: runE(o),
	}
	o.addRecordFlags(cmd.Flags())
	return cmd
}

// Complete takes the fleet and stage.
func (o *FleetApproveOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) != 2 {
		return usageErrorf("want NAME STAGE: the fleet and the stage to approve, got %d arguments", len(args))
	}
	o.Name, o.Stage = args[0], args[1]
	if o.RecordContext == "" {
		raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return usageErrorf("cannot read the kubeconfig: %v", err)
		}
		o.RecordContext = raw.CurrentContext
	}
	return nil
}

// Validate needs nothing more.
func (o *FleetApproveOptions) Validate() error { return nil }

// Run records the approval.
func (o *FleetApproveOptions) Run(ctx context.Context) error {
	store, rec, err := o.loadRecord(ctx, o.Name)
	if err != nil {
		return err
	}
	if rec == nil {
		return usageErrorf("fleet %q has no record in context %q namespace %q: check --record-context and --state-namespace", o.Name, o.RecordContext, o.StateNamespace)
	}
	if rec.Stage(o.Stage) == nil {
		return usageErrorf("fleet %q has no stage %q", o.Name, o.Stage)
	}
	if err := fleet.Approve(ctx, store, o.Stage, approver(), time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "stage %q of fleet %q approved\n", o.Stage, o.Name)
	return nil
}

// approver names who approves: the user of this machine.
func approver() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	host, _ := os.Hostname()
	return "unknown@" + host
}

// FleetFanOutOptions are the flags of "fleet cancel" and "fleet abort":
// the command on each target of the fleet (or of one stage) that has a
// run to act on.
type FleetFanOutOptions struct {
	fleetOptions
	verb  string
	Stage string
	Yes   bool
	// stopAlive has abort stop a live target first (abort --wait): its
	// coordinator's Job was deleted, which leaves no one to cancel it.
	stopAlive bool
}

var fleetFanOutHelp = map[string][3]string{
	"cancel": {"Pause every running target of a fleet",
		`Run "cancel" on every target of the fleet of -f (or of --stage) whose run is
alive: each pauses at its next safe point and exits 8, and the fleet's
coordinator starts no new target and stops. "fleet resume" goes on.`,
		`  # Pause the fleet
  kubectl nodeupgrade fleet cancel -f fleet.yaml`},
	"abort": {"Put every target of a fleet (or of one stage) back in service",
		`Run "abort --yes" on every target of the fleet of -f (or of --stage) whose
run did not finish: each is put back in service as "abort" does. Cancel the
fleet first ("fleet cancel"): a target whose run is alive is refused. A
coordinator running as a Job ("fleet run --in-cluster", in --state-namespace
of --context) is deleted first, and the targets it left alive are stopped
("abort --wait"). Without --stage, the fleet's record is deleted once every
target is back, so the fleet can start again, with this file or another.`,
		`  # Put the targets of stage "canary" back
  kubectl nodeupgrade fleet abort -f fleet.yaml --stage canary --yes`},
}

func newCmdFleetFanOut(verb string, base fleetOptions) *cobra.Command {
	o := &FleetFanOutOptions{fleetOptions: base, verb: verb}
	cmd := fleetFileCommand(verb, fleetFanOutHelp[verb], o)
	o.addRecordFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.Stage, "stage", "", "Only the targets of this stage")
	if verb == "abort" {
		cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Abort without asking (required)")
	}
	return cmd
}

// Complete reads the fleet file.
func (o *FleetFanOutOptions) Complete(*cobra.Command, []string) error { return o.load() }

// Validate checks --stage and --yes.
func (o *FleetFanOutOptions) Validate() error {
	if _, err := o.targetsOf(o.Stage); err != nil {
		return err
	}
	if o.verb == "abort" && !o.Yes {
		return usageErrorf("fleet abort puts the targets' node groups back: give --yes")
	}
	return nil
}

// Run acts on every target with a run to act on, all at once, and says
// what each did.
func (o *FleetFanOutOptions) Run(ctx context.Context) error {
	targets, _ := o.targetsOf(o.Stage)
	if o.verb == "abort" {
		deleted, err := o.deleteCoordinator(ctx)
		if err != nil {
			return err
		}
		o.stopAlive = deleted
	}
	x := o.targets()
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, t := range targets {
		wg.Go(func() {
			msg, err := o.fanOut(ctx, x, t)
			mu.Lock()
			defer mu.Unlock()
			errs[i] = err
			if err != nil {
				msg = "error: " + err.Error()
			}
			fmt.Fprintf(o.Out, "%s: %s\n", t.ID(), msg)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return &fleetExit{code: ExitCode(err), msg: fmt.Sprintf("fleet %s: not every target answered: %v", o.verb, err)}
		}
	}
	if o.verb == "abort" && o.Stage == "" {
		return o.forget(ctx)
	}
	return nil
}

// fanOut runs the verb on t where its run is one to act on.
func (o *FleetFanOutOptions) fanOut(ctx context.Context, x targetExec, t fleet.Target) (string, error) {
	st, ok, err := x.lookStatus(ctx, t)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "no run recorded: nothing to " + o.verb, nil
	case o.verb == "cancel" && !st.Alive:
		return fmt.Sprintf("%s, not running: nothing to cancel", st.Status), nil
	case o.verb == "abort" && (st.Status == StatusFinished || st.Status == StatusAborted):
		return fmt.Sprintf("%s: nothing to abort", st.Status), nil
	}
	args := stateFlags(t)
	if o.verb == "abort" {
		args = append(args, "--yes")
	}
	if o.stopAlive && st.Alive {
		args = append(args, "--wait")
	}
	if _, err := capture(x.command(ctx, t, o.verb, args...), t, o.verb); err != nil {
		return "", err
	}
	return o.verb + ": done", nil
}

// forget deletes the fleet's record once every target is back.
func (o *FleetFanOutOptions) forget(ctx context.Context) error {
	store, err := o.recordStore(o.fleet.Name)
	if err != nil {
		return err
	}
	if err := store.Delete(ctx); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "fleet %q: every target is back in service; its record is deleted\n", o.fleet.Name)
	return nil
}
