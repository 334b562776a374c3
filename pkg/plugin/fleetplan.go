package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// FleetPlanOptions are the flags of "fleet plan".
type FleetPlanOptions struct {
	fleetOptions
	Output           string
	DetailedExitCode bool
}

const fleetPlanExample = `  # Every target's plan, the stages and the whole rollout's estimate
  kubectl nodeupgrade fleet plan -f fleet.yaml

  # The same as JSON, for a pull request's check
  kubectl nodeupgrade fleet plan -f fleet.yaml -o json

  # Exit 5 when any target has blockers or a stage cannot fit its quota
  kubectl nodeupgrade fleet plan -f fleet.yaml --detailed-exitcode`

func newCmdFleetPlan(base fleetOptions) *cobra.Command {
	o := &FleetPlanOptions{fleetOptions: base}
	cmd := fleetFileCommand("plan", [3]string{"Show every target's plan, the stages and the whole rollout's estimate", `Plan every target of the fleet in its own cluster, as "plan" does, and show
them stage by stage: each target's strategy, outdated nodes, estimate and
blockers; each stage's estimate (its targets maxConcurrency at once, then its
soak); and the stages whose targets, run at once, need more of a shared quota
(one account's or project's vCPUs in a region) than is free. Nothing changes.`, fleetPlanExample}, o)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (default: tables)")
	cmd.Flags().BoolVar(&o.DetailedExitCode, "detailed-exitcode", false, "Exit 5 when a target has blockers its run would refuse or a stage cannot fit a shared quota, instead of 0")
	return cmd
}

// Complete reads the fleet file.
func (o *FleetPlanOptions) Complete(*cobra.Command, []string) error { return o.load() }

// Validate checks -o.
func (o *FleetPlanOptions) Validate() error {
	return validateFleetOutput(o.Output)
}

// Run plans every target and prints the rollout.
func (o *FleetPlanOptions) Run(ctx context.Context) error {
	r := o.planRollout(ctx)
	if o.Output != "" {
		if err := output.Print(o.Out, o.Output, r); err != nil {
			return err
		}
	} else if err := printRollout(o.Out, r); err != nil {
		return err
	}
	if err := firstTargetError(r); err != nil {
		return err
	}
	if o.DetailedExitCode && r.Refused() {
		return &fleetExit{code: ExitBlockers, msg: fmt.Sprintf("fleet %q has blockers: a target's run would refuse its plan, or a stage cannot fit a shared quota (see above)", r.Name)}
	}
	return nil
}

// planRollout plans every target in its own cluster, a few at once.
func (o *fleetOptions) planRollout(ctx context.Context) *fleet.Rollout {
	x := o.targets()
	plans := map[string]fleet.TargetPlan{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for _, st := range o.fleet.Stages {
		for _, t := range st.Targets {
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				tp := planTarget(ctx, x, t)
				mu.Lock()
				plans[t.ID()] = tp
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return fleet.PlanRollout(o.fleet, plans)
}

// planTarget is "plan --detailed-exitcode -o json" of t in its cluster:
// exit 5 is a plan whose blockers its run would refuse.
func planTarget(ctx context.Context, x targetExec, t fleet.Target) fleet.TargetPlan {
	args := append([]string{"-o", "json", "--detailed-exitcode"}, t.Args...)
	out, err := capture(x.command(ctx, t, "plan", args...), t, "plan")
	tp := fleet.TargetPlan{Target: t}
	if code := ExitCode(err); err != nil && code != ExitBlockers {
		tp.Error, tp.ExitCode = err.Error(), code
		return tp
	}
	tp.Refused = err != nil
	var p plan.Plan
	if jerr := json.Unmarshal(out, &p); jerr != nil {
		tp.Error, tp.ExitCode = fmt.Sprintf("cannot decode the plan of %q: %v", t.ID(), jerr), ExitFailure
		return tp
	}
	tp.Plan = &p
	return tp
}

// firstTargetError is the first target that could not be planned: its
// exit code is the command's.
func firstTargetError(r *fleet.Rollout) error {
	for _, st := range r.Stages {
		for _, t := range st.Targets {
			if t.Error != "" {
				return &fleetExit{code: t.ExitCode, msg: fmt.Sprintf("cannot plan target %q: %s", t.ID(), t.Error)}
			}
		}
	}
	return nil
}

func printRollout(w io.Writer, r *fleet.Rollout) error {
	targets := 0
	for _, st := range r.Stages {
		targets += len(st.Targets)
	}
	approvals := ""
	if r.Approvals > 0 {
		approvals = ", plus " + plan.Count(r.Approvals, "approval")
	}
	fmt.Fprintf(w, "Fleet %q (plan %s): %s, %s, estimated %s%s\n\n", r.Name, r.Hash, plan.Count(len(r.Stages), "stage"), plan.Count(targets, "target"), plan.FormatDuration(time.Duration(r.Estimate)), approvals)
	t := output.NewTable(w, "STAGE", "CLUSTER", "GROUP", "STRATEGY", "OUTDATED", "ESTIMATE", "BLOCKERS")
	for _, st := range r.Stages {
		for _, tp := range st.Targets {
			if err := t.Append(rolloutRow(st.Name, tp)...); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, st := range r.Stages {
		fmt.Fprintf(w, "Stage %q: %s\n", st.Name, stageText(st))
		for _, q := range st.Quotas {
			fmt.Fprintf(w, "  blocker: %s\n", q)
		}
	}
	return nil
}

func rolloutRow(stage string, tp fleet.TargetPlan) []any {
	if tp.Plan == nil {
		return []any{stage, tp.Context, tp.Group(), "-", "-", "-", "cannot plan: " + output.OneLine(tp.Error, 120)}
	}
	p := tp.Plan
	blockers := "<none>"
	if b := p.Blockers(); len(b) > 0 {
		names := make([]string, 0, len(b))
		for _, f := range b {
			names = append(names, f.Check)
		}
		blockers = strings.Join(names, ",")
	}
	estimate := "-"
	if d := tp.Estimate(); d > 0 {
		estimate = plan.FormatDuration(d.Round(time.Second))
	}
	return []any{stage, tp.Context, tp.Group(), p.Strategy, fmt.Sprintf("%d/%d", p.Nodes.Outdated, p.Nodes.Total), estimate, blockers}
}

func stageText(st fleet.StagePlan) string {
	parts := []string{fmt.Sprintf("%s, %d at once, %s tolerated", plan.Count(len(st.Targets), "target"), st.MaxConcurrency, plan.Count(st.MaxFailures, "failure")),
		"~" + plan.FormatDuration(time.Duration(st.Estimate).Round(time.Second))}
	if st.Soak > 0 {
		parts = append(parts, "then a soak of "+plan.FormatDuration(time.Duration(st.Soak)))
	}
	if len(st.Gates) > 0 {
		parts = append(parts, "gates "+strings.Join(st.Gates, ", "))
	}
	if st.Approval {
		parts = append(parts, "then waits for \"fleet approve\"")
	}
	return strings.Join(parts, "; ")
}
