package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// The run of an update the cloud's service carries out (EKS managed node
// groups, GKE node pools): the run sets the service's update settings,
// starts its update once, follows it to its end naming the pods and PDBs
// that hold a node, and puts the settings back. It never marks, drains or
// removes a node itself: the service does.

// ServiceUpdateFailure is a service's update that ended failed: the
// service's errors, which name nodes, and the pods and PDBs that held
// those nodes, which the service never names.
type ServiceUpdateFailure struct {
	Service string
	ID      string
	// Group is the node group's record name, for abort's advice.
	Group  string
	Errors []cloud.UpdateError
	Held   []HeldPod
	// Drain is the record's (state.ManagedRecord.DrainFailure): the drain
	// the service gave up on and what it did then.
	Drain *plan.ServiceDrainFailure
	// SettingsStuck is the record's (state.ManagedRecord): abort cannot
	// put the run's settings back on the failed update's group.
	SettingsStuck bool
}

// Code is the first error's code (PodEvictionFailure, NodeCreationFailure,
// ...), "" when the service gave none.
func (f *ServiceUpdateFailure) Code() string {
	if len(f.Errors) == 0 {
		return ""
	}
	return f.Errors[0].Code
}

func (f *ServiceUpdateFailure) Error() string {
	msg := fmt.Sprintf("the %s's update %s failed", f.Service, f.ID)
	if len(f.Errors) > 0 {
		msg += ": " + f.Errors[0].Error()
		if len(f.Errors) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(f.Errors)-1)
		}
	}
	if len(f.Held) > 0 {
		msg += "; held by " + heldList(f.Held)
	}
	if f.Drain != nil {
		msg += "; " + f.Drain.String()
	}
	// What the service did stays (its added nodes, the taints of the nodes
	// it gave up on, the run's update settings): say who takes it back.
	if f.SettingsStuck {
		return msg + fmt.Sprintf("; what the update left (the nodes the %s added, its scale-up, the run's update settings) stays until a run finishes the group: fix the cause, then \"kubectl nodeupgrade resume %s\" (abort writes nothing to a group whose update failed, as the service takes any write to it as the order to finish the update)", f.Service, f.Group)
	}
	return msg + fmt.Sprintf("; what the update left (the nodes the %s added, its scale-up, its taints, the run's update settings) stays until \"kubectl nodeupgrade abort %s\" puts it back, or a run finishes the group", f.Service, f.Group)
}

// managedRun is the execution of an update the cloud's service carries
// out: three phases, whatever the strategy the service runs.
type managedRun struct {
	toolkit
	service cloud.ManagedUpdater // nil where the provider starts none
	// rollingBack: the run follows the service's rollback of its update
	// (the rollback command, or a command finishing one it started).
	rollingBack bool
}

func newManagedRun(e *Engine) *managedRun {
	u, _ := e.cfg.Provider.(cloud.ManagedUpdater)
	r := &managedRun{toolkit: e.toolkit(), service: u, rollingBack: e.cfg.RollingBack}
	if rec := e.cfg.Record; rec != nil && rec.Managed != nil && len(rec.Managed.Nodes) > 0 {
		// A re-run's plan holds only the nodes left of those the update
		// replaces.
		e.progress.total = len(rec.Managed.Nodes)
	}
	return r
}

func (r *managedRun) steps() map[plan.Phase]step {
	steps := map[plan.Phase]step{
		plan.PhaseConfigure: r.withService(plan.PhaseConfigure, r.configureService),
		plan.PhaseUpdate:    r.withService(plan.PhaseUpdate, r.followService),
		plan.PhaseRestore:   r.withService(plan.PhaseRestore, r.restoreService),
	}
	if r.rollingBack {
		// Only a run that starts rolling back has the step: a live
		// run does not turn around on a request (the service's update
		// goes on until cancelled).
		steps[plan.PhaseRollback] = r.withService(plan.PhaseRollback, r.rollBackService)
	}
	return steps
}

// withService is a step of the service's update, refused where the
// provider starts none.
func (r *managedRun) withService(phase plan.Phase, f func(context.Context, cloud.ManagedUpdater) error) step {
	return func(ctx context.Context, _ int) error {
		if r.service == nil {
			return fmt.Errorf("cannot run phase %s: provider %q does not start a service's update", phase, r.cfg.Provider.Name())
		}
		return f(ctx, r.service)
	}
}

// serviceControls are the plan's controls of the service's update,
// never nil: a record with none says so.
func serviceControls(mp *plan.ManagedPlan) []string {
	return append([]string{}, mp.Controls...)
}

// configureService records the settings before the run, then sets the
// run's: intent first, so an interrupted run puts the right ones back.
func (r *managedRun) configureService(ctx context.Context, u cloud.ManagedUpdater) error {
	rec := r.cfg.Record
	if rec.Managed == nil {
		before, err := u.Settings(ctx)
		if err != nil {
			return err
		}
		mp := r.cfg.Plan.Managed
		rec.Managed = &state.ManagedRecord{Group: u.GroupName(), Service: mp.Service, Target: mp.Target, Controls: serviceControls(mp), Before: before, WriteFinishes: mp.WriteFinishes}
		if rec.Managed.SizesBefore, err = r.shrinkableSizes(ctx); err != nil {
			return err
		}
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	want := r.cfg.Plan.Managed.During
	if want.Equal(rec.Managed.Before) {
		return nil
	}
	if !rec.Managed.Configured {
		rec.Managed.Configured = true
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	r.logf("update settings of %s for the run: %s (were %s)", r.cfg.Plan.Managed.Service, want, rec.Managed.Before)
	return u.Configure(ctx, want)
}

// restoreService takes back the scale-up an earlier failed update of the
// run left, and puts the settings from before the run back.
func (r *managedRun) restoreService(ctx context.Context, u cloud.ManagedUpdater) error {
	m := r.cfg.Record.Managed
	if m != nil && m.FailedUpdate != "" {
		if err := r.takeBackScaleUp(ctx, m.FailedUpdate); err != nil {
			return err
		}
	}
	if m == nil || !m.Configured {
		return nil
	}
	// Said once done: a service that refuses the write (AKS, on a pool
	// left Canceled or Failed) had nothing put back.
	if err := u.Configure(ctx, m.Before); err != nil {
		return err
	}
	r.logf("update settings of %s back to %s", r.cfg.Plan.Managed.Service, m.Before)
	m.Configured = false
	return r.save(ctx)
}

// abortService puts the service's update settings from before the run
// back on abort, unless the service's update still runs: they are its
// settings until it ends (the run after abort, or the service's own
// controls, finish it).
func (r *managedRun) abortService(ctx context.Context) error {
	m := r.cfg.Record.Managed
	if r.service == nil || r.cfg.Plan.Managed == nil || m == nil || !m.Configured {
		return nil
	}
	if m.UpdateID != "" {
		p, err := r.service.Progress(ctx, m.UpdateID)
		if err != nil {
			return err
		}
		if !p.Finished() {
			line := fmt.Sprintf("the %s's update %s still runs: its update settings stay the run's until it ends", r.cfg.Plan.Managed.Service, m.UpdateID)
			r.tally.addNote(line)
			r.logf("%s", line)
			return nil
		}
	}
	return r.restoreService(ctx, r.service)
}

// followService starts the service's update, or finds the one a stopped
// run started, and follows it to its end.
func (r *managedRun) followService(ctx context.Context, u cloud.ManagedUpdater) error {
	m := r.cfg.Record.Managed
	if m == nil {
		return errors.New("cannot start the service's update: the run recorded no settings; run it again")
	}
	mp := r.cfg.Plan.Managed
	if err := r.forgetFailedUpdate(ctx, u, m); err != nil {
		return err
	}
	if m.UpdateID == "" {
		// What the update replaces and the sizes it raises from are this
		// plan's, made before it started: recorded with its ID.
		m.Nodes, m.Sizes = r.cfg.Plan.OutdatedNames(), nil
		if c := r.cfg.Plan.Cloud; c != nil {
			sizes := c.Before
			m.Sizes = &sizes
		}
		// Intent first: a run killed before the update's ID is saved
		// leaves what it replaces, and the next run finds the update
		// (cloud.UpdateFinder) and follows it.
		if err := r.save(ctx); err != nil {
			return err
		}
		id, err := u.StartUpdate(ctx, mp.Force)
		if err != nil {
			return err
		}
		m.UpdateID = id
		if err := r.save(ctx); err != nil {
			return err
		}
		r.logf("%s update %s started towards %s", mp.Service, id, mp.Target)
	} else {
		r.logf("following %s update %s towards %s", mp.Service, m.UpdateID, mp.Target)
	}
	err := r.awaitService(ctx, u, m.UpdateID)
	if errors.Is(err, context.Canceled) {
		// Ctrl-C ends the run, not the service's update.
		r.logf("stopped following %s update %s; the service goes on with it: \"run\" again follows it to its end", mp.Service, m.UpdateID)
	}
	return err
}

// forgetFailedUpdate drops the recorded update when it failed (before
// this run): following it would only say its failure again, so the run
// starts a new one. Its settings and the sizes before the first stay
// recorded: they are still what the end and abort put back.
func (r *managedRun) forgetFailedUpdate(ctx context.Context, u cloud.ManagedUpdater, m *state.ManagedRecord) error {
	if m.UpdateID == "" {
		return nil
	}
	p, err := u.Progress(ctx, m.UpdateID)
	if err != nil || p.State != cloud.UpdateFailed {
		return err
	}
	r.logf("%s update %s failed before this run: starting a new one", r.cfg.Plan.Managed.Service, m.UpdateID)
	m.FailedUpdate, m.UpdateID = m.UpdateID, ""
	return r.save(ctx)
}

// awaitService reads the update every poll interval until it ends; each
// read names the pods and PDBs that hold a node the service drains, and
// applies the maintenance window to it.
func (r *managedRun) awaitService(ctx context.Context, u cloud.ManagedUpdater, id string) error {
	held := newHeldTracker(r.cfg.Now)
	tick := time.NewTicker(r.cfg.PollInterval)
	defer tick.Stop()
	if err := r.nodes.view.watchPDBs(ctx); err != nil {
		return err
	}
	phase := ""
	for {
		p, err := r.readUpdate(ctx, u, id)
		if err != nil {
			return err
		}
		if err := r.countReplaced(ctx); err != nil {
			return err
		}
		if p.Phase != phase && p.Phase != "" {
			// The service's phases (GKE's blue/green) as they come.
			phase = p.Phase
			r.logf("%s update %s: %s, %s", r.cfg.Plan.Managed.Service, id, phase, r.nodesText(p))
		}
		r.reportHeld(held.update(r.heldPods(), r.podOnNode))
		if err := r.recordHeld(ctx, held.all()); err != nil {
			return err
		}
		next, err := r.serviceWindow(ctx, p)
		switch {
		case err != nil:
			return err
		case next != id:
			id = next // resumed: follow the update that goes on
			continue
		case p.Finished():
			return r.serviceEnded(p, held.all())
		}
		r.progress.waitingFor(serviceProgressLine(r.cfg.Plan.Managed, p, r.nodesText(p), held.all(), r.cfg.Now()))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-r.nodes.view.changed:
		case <-r.windowCloses():
		}
	}
}

// readUpdate reads the update, again after a transient failure.
func (r *managedRun) readUpdate(ctx context.Context, u cloud.ManagedUpdater, id string) (cloud.UpdateProgress, error) {
	for failures := 1; ; failures++ {
		p, err := u.Progress(ctx, id)
		if err == nil || !cloud.Transient(err) {
			return p, err
		}
		r.progress.waitingFor(fmt.Sprintf("%s update %s: %v; reading again", r.cfg.Plan.Managed.Service, id, err))
		if err := transport.Sleep(ctx, cloud.Backoff(time.Second, failures)); err != nil {
			return p, err
		}
	}
}

// serviceEnded turns the update's end into the run's: a rollback's
// success replaces no node of the run's own.
func (r *managedRun) serviceEnded(p cloud.UpdateProgress, held []HeldPod) error {
	mp := r.cfg.Plan.Managed
	if rec := r.cfg.Record; rec != nil && rec.Managed != nil {
		rec.Managed.DrainFailure = drainFailureOf(p.Errors)
	}
	switch {
	case p.State == cloud.UpdateSucceeded && r.rollingBack:
		r.logf("%s rollback %s succeeded", mp.Service, p.ID)
		return nil
	case p.State == cloud.UpdateSucceeded:
		for _, name := range r.updateNodes() {
			if !slices.Contains(r.tally.doneNodes(), name) && !slices.Contains(r.cfg.EarlierDone, name) {
				r.tally.markDone(name)
			}
		}
		r.logf("%s update %s succeeded", mp.Service, p.ID)
		return nil
	case p.State == cloud.UpdateCancelled && r.rollingBack:
		return &PausedError{Phase: plan.PhaseRollback}
	case p.State == cloud.UpdateCancelled:
		return &PausedError{Phase: plan.PhaseUpdate}
	case p.State == cloud.UpdateQuarantined:
		return r.serviceQuarantined(p, held)
	}
	return &ServiceUpdateFailure{Service: mp.Service, ID: p.ID, Group: r.cfg.Record.NodeGroup, Errors: p.Errors, Held: held,
		Drain: drainFailureOf(p.Errors), SettingsStuck: r.cfg.Record.Managed.SettingsStuck()}
}

// drainFailureOf is the first drain the service gave up on, nil if none.
func drainFailureOf(errs []cloud.UpdateError) *plan.ServiceDrainFailure {
	for _, e := range errs {
		if e.Drain != nil {
			d := *e.Drain
			return &d
		}
	}
	return nil
}

// recordHeld keeps the pods held now in the record when they changed,
// for status -w to name them from another terminal.
func (r *managedRun) recordHeld(ctx context.Context, held []HeldPod) error {
	var now []state.HeldPod
	for _, h := range held {
		now = append(now, state.HeldPod{Node: h.Node, Pod: h.Namespace + "/" + h.Pod, PDB: h.PDB.Namespace + "/" + h.PDB.Name, Since: h.Since.UTC()})
	}
	m := r.cfg.Record.Managed
	if m == nil || slices.EqualFunc(m.Held, now, func(a, b state.HeldPod) bool { return a.Node == b.Node && a.Pod == b.Pod && a.PDB == b.PDB }) {
		return nil
	}
	m.Held = now
	return r.save(ctx)
}

// reportHeld logs each pod that newly holds a node, once.
func (r *managedRun) reportHeld(fresh []HeldPod) {
	mp := r.cfg.Plan.Managed
	limit := time.Duration(mp.EvictionLimit)
	for _, h := range fresh {
		line := fmt.Sprintf("node %q: %s", h.Node, h)
		switch {
		case limit > 0 && mp.ForcesOut:
			line += fmt.Sprintf("; %s left before the %s's PDB timeout deletes it", roundDuration(limit), mp.Service)
		case limit > 0:
			line += fmt.Sprintf("; the service gives up on the node after %s", roundDuration(limit))
		}
		r.logf("%s", line)
	}
}

// countReplaced counts as done the plan's outdated nodes gone from the
// cluster: the service replaced them. EKS's DescribeUpdate counts no
// nodes, so the cluster says how far the update is; the record and the
// progress count them as they go, and a re-run starts from them.
func (r *managedRun) countReplaced(ctx context.Context) error {
	fresh := false
	nodes := r.updateNodes()
	for _, name := range nodes {
		if slices.Contains(r.tally.doneNodes(), name) || slices.Contains(r.cfg.EarlierDone, name) {
			continue
		}
		if _, exists, err := r.nodes.view.nodes.GetStore().GetByKey(name); err == nil && !exists {
			r.tally.markDone(name)
			fresh = true
			r.logf("%s update: node %q replaced (%d of %d)", r.cfg.Plan.Managed.Service, name, r.replaced(), len(nodes))
		}
	}
	if !fresh {
		return nil
	}
	r.progress.setDone(len(r.cfg.EarlierDone) + len(r.tally.doneNodes()))
	return r.record(ctx, plan.State{Phase: plan.PhaseUpdate})
}

// updateNodes are the nodes the service's update replaces: those the run
// recorded as it set out, of which a re-run's plan holds only the ones
// left (and none of the service's surge or green nodes); the plan's where
// the record has none.
func (r *managedRun) updateNodes() []string {
	if m := r.cfg.Record.Managed; m != nil && len(m.Nodes) > 0 {
		return m.Nodes
	}
	return r.cfg.Plan.OutdatedNames()
}

// replaced counts the nodes of the update replaced so far, by earlier
// runs too.
func (r *managedRun) replaced() int {
	return len(r.tally.doneNodes()) + len(r.cfg.EarlierDone)
}

// nodesText says how many nodes the update has done: the service's count
// where it gives one, else the nodes it replaced in the cluster.
func (r *managedRun) nodesText(p cloud.UpdateProgress) string {
	if p.Total > 0 {
		return fmt.Sprintf("%d of %d nodes", p.Done, p.Total)
	}
	return fmt.Sprintf("%d of %d nodes replaced", r.replaced(), len(r.updateNodes()))
}

// serviceProgressLine is the progress of a service's update.
func serviceProgressLine(mp *plan.ManagedPlan, p cloud.UpdateProgress, nodes string, held []HeldPod, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s update %s", mp.Service, p.ID)
	if p.Phase != "" {
		fmt.Fprintf(&b, " (%s)", p.Phase)
	}
	fmt.Fprintf(&b, ": %s", nodes)
	if len(held) > 0 {
		h := held[0]
		fmt.Fprintf(&b, "; %s for %s", h.Short(), roundDuration(now.Sub(h.Since)))
		if limit := time.Duration(mp.EvictionLimit); mp.ForcesOut && limit > 0 {
			fmt.Fprintf(&b, ", %s left before the PDB timeout deletes it", roundDuration(max(limit-now.Sub(h.Since), 0)))
		}
		if len(held) > 1 {
			fmt.Fprintf(&b, " (and %d more)", len(held)-1)
		}
	}
	return b.String()
}

// serviceQuarantined ends a run whose service left nodes quarantined
// (AKS's undrainableNodeBehavior Cordon): each named with the pods seen
// holding it, in the record as the run's own quarantine is.
func (r *managedRun) serviceQuarantined(p cloud.UpdateProgress, held []HeldPod) error {
	var nodes []state.Quarantined
	for _, e := range p.Errors {
		for _, n := range e.Nodes {
			q := state.Quarantined{Node: n}
			for _, h := range held {
				if h.Node == n {
					q.Held = append(q.Held, state.HeldByPDB{Pod: h.Namespace + "/" + h.Pod, Reason: "blocked by PodDisruptionBudget", PDBs: []string{h.PDB.Namespace + "/" + h.PDB.Name}})
				}
			}
			nodes = append(nodes, q)
		}
	}
	if r.cfg.Record != nil {
		r.cfg.Record.Quarantined = nodes
	}
	r.logf("%s update %s ended with %d node(s) quarantined", r.cfg.Plan.Managed.Service, p.ID, len(nodes))
	return &QuarantinedError{Nodes: nodes}
}
