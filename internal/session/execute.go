package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Prompt is how a command shows the plan and asks before a run.
type Prompt struct {
	// Print shows the plan as the command's -o asks.
	Print func(*plan.Plan) error
	// DryRun prints the plan and changes nothing; DetailedExitCode then
	// answers a plan with blockers with a BlockerRefusal.
	DryRun, DetailedExitCode bool
	// Yes runs without asking; otherwise Confirm asks question, on a
	// Terminal (resume and rollback refuse to ask without one).
	Yes, Terminal bool
	Confirm       func(question string) (bool, error)
	// Submit, when set, is given the agreed plan instead of Session.Run:
	// run --in-cluster hands it to a Job.
	Submit func(context.Context, *Planned) error
}

// Execute plans r, shows the plan, refuses its blockers, asks, and runs
// it: run's path, and resume's and rollback's with a recorded request.
func (s *Session) Execute(ctx context.Context, r *Request, ui Prompt) error {
	if !ui.DryRun {
		// A machine launched but not yet a node would be left out of the
		// plan (the replacement of a node an interrupted run removed, say).
		r.JoinTimeout = r.NodeReadyTimeout
	}
	pl, err := s.Plan(ctx, r)
	if err != nil {
		return err
	}
	if err := ui.Print(pl.Plan); err != nil {
		return err
	}
	if ui.DryRun {
		if ui.DetailedExitCode {
			return r.RefuseBlockers(pl.Plan, "run would refuse this plan")
		}
		return nil
	}
	if pl.NothingToDo() && !r.Rollback {
		return s.settleIdle(ctx, pl, ui)
	}
	rec, err := s.store().Load(ctx, r.RecordName())
	if err != nil {
		return err
	}
	if err := s.auditOrFollow(ctx, r, pl, rec); err != nil {
		return err
	}
	if !ui.Yes {
		ok, err := ui.Confirm(question(r, pl.Plan, rec))
		if err != nil || !ok {
			return Usagef("aborted: nothing was changed")
		}
	}
	if r.Control != "" && rec != nil {
		// Agreed: what was asked is recorded before anything changes.
		if err := s.Controls().recordAsk(ctx, &Run{Record: rec}, r.Control, ""); err != nil {
			return err
		}
	}
	fmt.Fprintln(s.Out)
	if ui.Submit != nil {
		return ui.Submit(ctx, pl)
	}
	return s.Run(ctx, pl)
}

// auditOrFollow refuses the plan's blockers, unless the run follows a
// service's update under way: the audit would see the service's own drain
// (a PDB at 0 disruptions, pods it deletes), and the update was audited
// when it started.
func (s *Session) auditOrFollow(ctx context.Context, r *Request, pl *Planned, rec *state.Record) error {
	if err := FindStartedUpdate(ctx, pl.Provider, rec); err != nil {
		return err
	}
	follows := followsServiceUpdate(pl, rec)
	if follows {
		var err error
		if follows, err = serviceUpdateGoesOn(ctx, pl, rec); err != nil {
			return err
		}
	}
	if follows {
		fmt.Fprintf(s.ErrOut, "the %s's update %s is under way: following it to its end, not auditing it again\n", pl.Managed.Service, rec.Managed.UpdateID)
		return nil
	}
	if err := r.RefuseBlockers(pl.Plan, "refusing to run"); err != nil && !r.Rollback && !ManagedRollingBack(rec) {
		return err
	}
	return nil
}

// RefuseBlockers stops a run whose audit found blockers, unless --force or
// --ignore-check says to go on (for machine-left-running, only
// --leave-machines-running, which the plan already heard; for
// missing-permission, only its --ignore-check; node-do-not-disrupt, only
// the annotation's removal). what is what is refused
// ("refusing to run").
func (r *Request) RefuseBlockers(p *plan.Plan, what string) error {
	var left, ignorable, forceable []string
	var only check.Finding
	for _, f := range p.Blockers() {
		ignored := slices.Contains(r.IgnoreChecks, f.Check)
		if !heldDespite(f.Check, ignored, r.Force) {
			continue
		}
		left = append(left, fmt.Sprintf("%s (%s)", f.Check, f.Object()))
		only = f
		if f.Check != check.CheckMachineLeftRunning && f.Check != check.CheckNodeDoNotDisrupt && !slices.Contains(ignorable, f.Check) {
			ignorable = append(ignorable, f.Check)
			if !slices.Contains(check.IgnoredOnly, f.Check) {
				forceable = append(forceable, f.Check)
			}
		}
	}
	machines := slices.ContainsFunc(p.Blockers(), func(f check.Finding) bool { return f.Check == check.CheckMachineLeftRunning })
	override := overrideOf(ignorable, forceable, machines)
	if override != "" && slices.ContainsFunc(p.Blockers(), func(f check.Finding) bool { return f.Check == check.CheckNodeDoNotDisrupt }) {
		override += " (" + check.CheckNodeDoNotDisrupt + " only yields to the annotation's removal)"
	}
	switch len(left) {
	case 0:
		return nil
	case 1:
		// One blocker: say it whole, with its fix.
		return &BlockerRefusal{fmt.Sprintf("%s: %s: %s; %s%s", what, left[0], only.Message, only.Fix, override)}
	}
	return &BlockerRefusal{fmt.Sprintf("%s: %d blockers: %s; fix them%s", what, len(left), strings.Join(left, ", "), override)}
}

// heldDespite reports whether a blocker of check still holds the run:
// --force is about pods; machines left running take a flag that says so,
// a missing permission its own --ignore-check, and a node the user
// protected from Karpenter's disruption the annotation's removal.
func heldDespite(name string, ignored, force bool) bool {
	switch {
	case name == check.CheckMachineLeftRunning || name == check.CheckNodeDoNotDisrupt:
		return true
	case slices.Contains(check.IgnoredOnly, name):
		return !ignored
	}
	return !ignored && !force
}

// overrideOf says what lifts the blockers left: the --ignore-check of
// each that has one, --force where it lifts them all, and what lifts
// machines left running.
func overrideOf(ignorable, forceable []string, machines bool) string {
	if len(ignorable) == 0 {
		return ""
	}
	override := ", or use --ignore-check " + strings.Join(ignorable, " --ignore-check ")
	switch {
	case len(forceable) == len(ignorable):
		override += " or --force"
	case len(forceable) > 0:
		override += " (--force lifts " + strings.Join(forceable, ", ") + " only)"
	}
	if machines {
		// Neither lifts machines left running: say what does.
		override += " (" + check.CheckMachineLeftRunning + " only yields to --" + LeaveMachinesRunningFlag + " or --delete-node=false)"
	}
	return override
}

// question is what the run asks before it changes anything: what it will
// do, in the words of what it is (an upgrade, a rollback, the end of an
// interrupted run).
func question(r *Request, p *plan.Plan, rec *state.Record) string {
	unfinished := rec != nil && rec.FinishedAt == nil
	batches := plan.Count(len(p.Batches), "batch")
	switch {
	case p.Managed != nil && (r.Rollback || ManagedRollingBack(rec)):
		return fmt.Sprintf("Roll back the run on %q: have the %s roll back its update (the nodes it replaced run the previous version again), then put the update settings from before the run back?", r.RecordName(), p.Managed.Service)
	case r.Rollback:
		return rollbackQuestion(r, p, rec)
	case rollsBackInPlace(rec, r.Request):
		return inPlaceRollbackQuestion(p, rec)
	case unfinished && p.Nodes.Outdated == 0:
		return fmt.Sprintf("Finish the interrupted run on %q from phase %s (%s already replaced, none left to upgrade)?", rec.NodeGroup, rec.Phase, plan.Count(len(rec.Done), "node"))
	case unfinished && len(rec.Done) > 0:
		return fmt.Sprintf("Upgrade the %s left in %s (%s replaced by the interrupted run)?", plan.Count(p.Nodes.Outdated, "node"), batches, plan.Count(len(rec.Done), "node"))
	}
	return fmt.Sprintf("Upgrade %s in %s?", plan.Count(p.Nodes.Outdated, "node"), batches)
}

// inPlaceRollbackQuestion is the question of an eks or surge rollback:
// the nodes it replaces, and those its scale-down removes unreplaced.
func inPlaceRollbackQuestion(p *plan.Plan, rec *state.Record) string {
	c := rec.Cloud
	if p.Nodes.Outdated+p.Nodes.Deferred == 0 {
		return fmt.Sprintf("Roll back the run on %q: no node runs version %s yet; point the group back at version %s and restore its sizes?", rec.NodeGroup, c.TargetVersion, c.FromVersion)
	}
	removed := fmt.Sprintf("remove the %s on version %s in the scale-down to the sizes before the run, unreplaced", plan.Count(p.Nodes.Deferred, "other node"), c.TargetVersion)
	if p.Nodes.Outdated == 0 {
		removed = strings.Replace(removed, " other", "", 1)
		return fmt.Sprintf("Roll back the run on %q: point the group back at version %s and %s?", rec.NodeGroup, c.FromVersion, removed)
	}
	replace := fmt.Sprintf("replace the %s on version %s with version %s, in %s", plan.Count(p.Nodes.Outdated, "node"), c.TargetVersion, c.FromVersion, plan.Count(len(p.Batches), "batch"))
	if p.Nodes.Deferred > 0 {
		replace += ", and " + removed
	}
	return fmt.Sprintf("Roll back the run on %q: %s (nodes never upgraded are not touched)?", rec.NodeGroup, replace)
}

// rollbackQuestion is the rollback command's question: blue back in
// service, green drained (and deleted where the run made it).
func rollbackQuestion(r *Request, p *plan.Plan, rec *state.Record) string {
	blue := "blue"
	if p.Nodes.Outdated > 0 {
		blue = fmt.Sprintf("blue's %s", plan.Count(p.Nodes.Outdated, "node"))
	}
	green := "drain the green nodes"
	if rec != nil && rec.FinishedAt == nil && rec.Cloud != nil && rec.Cloud.Green != "" {
		green = fmt.Sprintf("drain green %q", rec.Cloud.Green)
		if rec.Cloud.GreenCreated {
			green += " and delete it"
		}
	}
	return fmt.Sprintf("Roll back the run on %q: put %s back in service, then %s?", r.RecordName(), blue, green)
}

// rollsBackInPlace reports whether req takes an unfinished run's cloud
// group back to the version it launched before the run: an eks or surge
// rollback, the rollback command's or the same request given again.
func rollsBackInPlace(rec *state.Record, req plan.Request) bool {
	return rec != nil && rec.FinishedAt == nil && rec.Cloud != nil && rec.Cloud.FromVersion != "" &&
		req.Cloud.Image == "" && req.Cloud.Version == rec.Cloud.FromVersion
}

// followsServiceUpdate reports whether running pl only follows the
// service's update rec's run started (an EKS or GKE update killed while
// the service drains), as startPhase resumes it.
func followsServiceUpdate(pl *Planned, rec *state.Record) bool {
	if rec == nil || rec.FinishedAt != nil || rec.Managed == nil || rec.Managed.UpdateID == "" || pl.Managed == nil || pl.Request.Rollback {
		return false
	}
	start, resumesGroup := startPhase(pl, rec)
	return start != "" && !resumesGroup
}

// serviceUpdateGoesOn reports whether the service's update rec's run
// started has not failed: one that failed (a PodEvictionFailure) is
// followed no more; the run audits the group again and starts a new one.
func serviceUpdateGoesOn(ctx context.Context, pl *Planned, rec *state.Record) (bool, error) {
	u, ok := pl.Provider.(cloud.ManagedUpdater)
	if !ok {
		return true, nil
	}
	p, err := u.Progress(ctx, rec.Managed.UpdateID)
	if err != nil {
		return false, err
	}
	return p.State != cloud.UpdateFailed, nil
}
