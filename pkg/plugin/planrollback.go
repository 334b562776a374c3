package plugin

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// rollbackPlanOptions are --rollback and --rollback-window of plan and
// run: the rollback of a finished run, as "rollback" runs it, planned
// (plan) or run (run, the same as "rollback").
type rollbackPlanOptions struct {
	plan   bool
	window time.Duration
	// schedule says windowFlags were given: they replace the windows the
	// finished run's record kept.
	schedule bool
	// other are the plan's own flags given beside --rollback: the
	// recorded request decides what they would, so they are refused.
	other []string
}

// rollbackPlanFlags are the plan's flags --rollback takes.
var rollbackPlanFlags = append([]string{"rollback", "rollback-window", "state-namespace", "output", "detailed-exitcode", "yes", "dry-run"}, windowFlags...)

// windowFlags are the maintenance-window flags that, given to the
// rollback of a finished run, replace the windows of its record.
var windowFlags = []string{"window", "not-before", "not-after"}

// withSchedule puts the windows of given into r, in place of those the
// record kept.
func withSchedule(r *session.Request, given plan.Request) {
	r.Windows, r.NotBefore, r.NotAfter = given.Windows, given.NotBefore, given.NotAfter
}

func (o *rollbackPlanOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.plan, "rollback", false, "The rollback of NODEGROUP's finished run: back to the version its record says the group ran before, as \"rollback\" runs it, in the run's maintenance windows unless --window, --not-before or --not-after are given again; takes no other planning flag")
	durationVar(f, &o.window, "rollback-window", state.DefaultRollbackWindow, "With --rollback: how long after a run finished it can be rolled back")
}

// complete notes the plan's own flags given beside --rollback.
func (o *rollbackPlanOptions) complete(cmd *cobra.Command) {
	own := cmd.LocalNonPersistentFlags() // a copy that records no flag as given
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if own.Lookup(f.Name) != nil && !slices.Contains(rollbackPlanFlags, f.Name) {
			o.other = append(o.other, "--"+f.Name)
		}
		o.schedule = o.schedule || slices.Contains(windowFlags, f.Name)
	})
	sort.Strings(o.other)
}

// validate refuses a rollback plan with no NODEGROUP, a window that is no
// window, or planning flags the record decides.
func (o *rollbackPlanOptions) validate(group string) error {
	switch {
	case !o.plan:
		return nil
	case group == "":
		return usageErrorf("missing NODEGROUP: --rollback plans the rollback of a node group's finished run")
	case o.window <= 0:
		return usageErrorf("--rollback-window must be positive, got %s", o.window)
	case len(o.other) > 0:
		return usageErrorf("--rollback plans the finished run's own request towards the version before it (only --window, --not-before and --not-after replace its own): drop %s", strings.Join(o.other, ", "))
	}
	return nil
}

// planRollback plans the rollback of group's finished run: printed only
// (plan, --dry-run), or run once confirmed.
func (o *RunOptions) planRollback(ctx context.Context) error {
	if err := o.connect(); err != nil {
		return err
	}
	sess := o.session()
	run, err := sess.Look(ctx, o.NodeGroup)
	if err != nil {
		return err
	}
	if run == nil {
		return usageErrorf("cannot plan the rollback: node group %q has no run recorded in namespace %q; check --state-namespace", o.NodeGroup, o.StateNamespace)
	}
	if run.Status != state.StateFinished {
		return usageErrorf("cannot plan the rollback: the run on %q is %s, not finished; \"kubectl nodeupgrade rollback %s\" undoes a run that has not finished", o.NodeGroup, run.Status, o.NodeGroup)
	}
	r, _, err := session.RollbackRequest(run.Record, time.Now(), o.rollback.window)
	if err != nil {
		return err
	}
	if o.rollback.schedule {
		withSchedule(r, o.Request.Request)
	}
	if err := r.ValidateRun(); err != nil {
		return err
	}
	return sess.Execute(ctx, r, session.Prompt{
		Print: planPrinter(o.Out, o.Output), DryRun: o.DryRun == dryRunClient, DetailedExitCode: o.detailedExitCode,
		Yes: o.Yes, Confirm: func(q string) (bool, error) { return askYes(o.In, o.ErrOut, q) },
	})
}
