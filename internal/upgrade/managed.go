package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
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
	Errors  []cloud.UpdateError
	Held    []HeldPod
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
	return msg
}

// serviceStep performs a phase of a service's update.
func (e *Engine) serviceStep(ctx context.Context, s plan.State) error {
	u, ok := e.cfg.Provider.(cloud.ManagedUpdater)
	if !ok {
		return fmt.Errorf("cannot run phase %s: provider %q does not start a service's update", s.Phase, e.cfg.Provider.Name())
	}
	switch s.Phase {
	case plan.PhaseConfigure:
		return e.configureService(ctx, u)
	case plan.PhaseUpdate:
		return e.followService(ctx, u)
	case plan.PhaseRestore:
		return e.restoreService(ctx, u)
	}
	return fmt.Errorf("cannot run phase %q of a service's update: no step does it", s.Phase)
}

// configureService records the settings before the run, then sets the
// run's: intent first, so an interrupted run puts the right ones back.
func (e *Engine) configureService(ctx context.Context, u cloud.ManagedUpdater) error {
	rec := e.cfg.Record
	if rec.Managed == nil {
		before, err := u.Settings(ctx)
		if err != nil {
			return err
		}
		rec.Managed = &state.ManagedRecord{Group: u.GroupName(), Before: before}
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	want := e.cfg.Plan.Managed.During
	if want.Equal(rec.Managed.Before) {
		return nil
	}
	if !rec.Managed.Configured {
		rec.Managed.Configured = true
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	e.logf("update settings of %s for the run: %s (were %s)", e.cfg.Plan.Managed.Service, want, rec.Managed.Before)
	return u.Configure(ctx, want)
}

// restoreService puts the settings from before the run back.
func (e *Engine) restoreService(ctx context.Context, u cloud.ManagedUpdater) error {
	m := e.cfg.Record.Managed
	if m == nil || !m.Configured {
		return nil
	}
	e.logf("update settings of %s back to %s", e.cfg.Plan.Managed.Service, m.Before)
	if err := u.Configure(ctx, m.Before); err != nil {
		return err
	}
	m.Configured = false
	return e.save(ctx)
}

// abortService puts the service's update settings from before the run
// back on abort, unless the service's update still runs: they are its
// settings until it ends (the run after abort, or the service's own
// controls, finish it).
func (e *Engine) abortService(ctx context.Context) error {
	u, ok := e.cfg.Provider.(cloud.ManagedUpdater)
	m := e.cfg.Record.Managed
	if !ok || e.cfg.Plan.Managed == nil || m == nil || !m.Configured {
		return nil
	}
	if m.UpdateID != "" {
		p, err := u.Progress(ctx, m.UpdateID)
		if err != nil {
			return err
		}
		if !p.Finished() {
			line := fmt.Sprintf("the %s's update %s still runs: its update settings stay the run's until it ends", e.cfg.Plan.Managed.Service, m.UpdateID)
			e.note = joinNote(e.note, line)
			e.logf("%s", line)
			return nil
		}
	}
	return e.restoreService(ctx, u)
}

// followService starts the service's update, or finds the one a stopped
// run started, and follows it to its end.
func (e *Engine) followService(ctx context.Context, u cloud.ManagedUpdater) error {
	m := e.cfg.Record.Managed
	if m == nil {
		return errors.New("cannot start the service's update: the run recorded no settings; run it again")
	}
	mp := e.cfg.Plan.Managed
	if m.UpdateID == "" {
		id, err := u.StartUpdate(ctx, mp.Force)
		if err != nil {
			return err
		}
		m.UpdateID = id
		if err := e.save(ctx); err != nil {
			return err
		}
		e.logf("%s update %s started towards %s", mp.Service, id, mp.Target)
	} else {
		e.logf("following %s update %s towards %s", mp.Service, m.UpdateID, mp.Target)
	}
	err := e.awaitService(ctx, u, m.UpdateID)
	if errors.Is(err, context.Canceled) {
		// Ctrl-C ends the run, not the service's update.
		e.logf("stopped following %s update %s; the service goes on with it: \"run\" again follows it to its end", mp.Service, m.UpdateID)
	}
	return err
}

// awaitService reads the update every poll interval until it ends; each
// read names the pods and PDBs that hold a node the service drains.
func (e *Engine) awaitService(ctx context.Context, u cloud.ManagedUpdater, id string) error {
	held := newHeldTracker(e.cfg.Now)
	tick := time.NewTicker(e.cfg.PollInterval)
	defer tick.Stop()
	if err := e.view.watchPDBs(ctx); err != nil {
		return err
	}
	failures, phase := 0, ""
	for {
		p, err := u.Progress(ctx, id)
		switch {
		case err != nil && cloud.Transient(err):
			failures++
			e.progress.waitingFor(fmt.Sprintf("%s update %s: %v; reading again", e.cfg.Plan.Managed.Service, id, err))
			if err := sleep(ctx, cloud.Backoff(time.Second, failures)); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		failures = 0
		if p.Phase != phase {
			// The service's phases (GKE's blue/green) as they come.
			phase = p.Phase
			e.logf("%s update %s: %s, %d of %d nodes", e.cfg.Plan.Managed.Service, id, phase, p.Done, p.Total)
		}
		e.reportHeld(held.update(e.heldPods(), e.podOnNode))
		if p.Finished() {
			return e.serviceEnded(p, held.all())
		}
		e.progress.waitingFor(serviceProgressLine(e.cfg.Plan.Managed, p, held.all(), e.cfg.Now()))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-e.view.changed:
		}
	}
}

// serviceEnded turns the update's end into the run's.
func (e *Engine) serviceEnded(p cloud.UpdateProgress, held []HeldPod) error {
	mp := e.cfg.Plan.Managed
	switch p.State {
	case cloud.UpdateSucceeded:
		e.done = append(e.done, e.cfg.Plan.OutdatedNames()...)
		e.logf("%s update %s succeeded", mp.Service, p.ID)
		return nil
	case cloud.UpdateCancelled:
		return &PausedError{Phase: plan.PhaseUpdate}
	}
	return &ServiceUpdateFailure{Service: mp.Service, ID: p.ID, Errors: p.Errors, Held: held}
}

// reportHeld logs each pod that newly holds a node, once.
func (e *Engine) reportHeld(fresh []HeldPod) {
	mp := e.cfg.Plan.Managed
	limit := time.Duration(mp.EvictionLimit)
	for _, h := range fresh {
		line := fmt.Sprintf("node %q: %s", h.Node, h)
		switch {
		case limit > 0 && mp.ForcesOut:
			line += fmt.Sprintf("; %s left before the %s's PDB timeout deletes it", roundDuration(limit), mp.Service)
		case limit > 0:
			line += fmt.Sprintf("; the service gives up on the node after %s", roundDuration(limit))
		}
		e.logf("%s", line)
	}
}

// serviceProgressLine is the progress of a service's update.
func serviceProgressLine(mp *plan.ManagedPlan, p cloud.UpdateProgress, held []HeldPod, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s update %s", mp.Service, p.ID)
	if p.Phase != "" {
		fmt.Fprintf(&b, " (%s)", p.Phase)
	}
	if p.Total > 0 {
		fmt.Fprintf(&b, ": %d of %d nodes", p.Done, p.Total)
	}
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
