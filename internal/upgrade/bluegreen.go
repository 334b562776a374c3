package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Blue/green: green beside blue, blue cordoned and drained in batches with
// soaks, then deleted; or turned around by rollback before that. The
// autoscaled variant lets the cluster autoscaler move the pods through its
// wait period (the Soak phase) and has no rollback.
func init() {
	blueGreen := map[plan.Phase]step{
		plan.PhasePrepareTarget: unbatched((*Engine).prepareTarget),
		plan.PhaseCreateGreen:   unbatched((*Engine).createGreen),
		plan.PhaseCordonBlue:    unbatched((*Engine).cordonBlue),
		plan.PhaseBatchSoak:     (*Engine).batchSoak,
		plan.PhaseSoak:          unbatched((*Engine).soak),
		plan.PhaseDeleteBlue:    unbatched((*Engine).deleteBlue),
		plan.PhaseRollback:      unbatched((*Engine).rollback),
	}
	registerSteps("blue-green", blueGreen)
	delete(blueGreen, plan.PhaseRollback)
	delete(blueGreen, plan.PhaseBatchSoak)
	registerSteps("autoscaled-blue-green", blueGreen)
}

// batchSoak waits out --batch-soak after batch i.
func (e *Engine) batchSoak(ctx context.Context, i int) error {
	return e.soakFor(ctx, time.Duration(e.cfg.Plan.BlueGreen.BatchSoak), plan.PhaseBatchSoak, fmt.Sprintf("%s: soak", e.batchLabel(i)))
}

// Control carries requests from other terminals to a run.
type Control interface {
	Pending(ctx context.Context) (string, error)
	Watch(ctx context.Context) (<-chan string, error)
	Clear(ctx context.Context) error
}

// PausedError ends a run paused by "cancel": "resume" continues it.
type PausedError struct{ Phase plan.Phase }

func (e *PausedError) Error() string {
	return fmt.Sprintf("paused by cancel in phase %s; continue with resume, undo with rollback, or put the group back in service with abort", e.Phase)
}

// SoakingError ends a run left at its soak (--no-wait): a later run or
// resume goes on once the soak is over, or after "complete".
type SoakingError struct{ Until time.Time }

func (e *SoakingError) Error() string {
	return fmt.Sprintf("soaking until %s (%s left); run again or resume after that, or end the soak now with complete",
		e.Until.UTC().Format(time.RFC3339), time.Until(e.Until).Round(time.Second))
}

// errRollbackRequested turns a waiting phase into the rollback.
var errRollbackRequested = errors.New("rollback requested")

// checkRequests acts on a pending request at a safe point: cancel pauses
// (except while blue is deleted: that cannot be paused), rollback turns a
// blue/green run around before blue is deleted.
func (e *Engine) checkRequests(ctx context.Context, s plan.State) (*plan.State, error) {
	if e.cfg.Control == nil || s.Phase == plan.PhaseDeleteBlue || s.Phase == plan.PhaseRollback {
		return nil, nil
	}
	req, err := e.cfg.Control.Pending(ctx)
	if err != nil {
		return nil, err
	}
	switch req {
	case state.RequestCancel:
		return nil, &PausedError{Phase: s.Phase}
	case state.RequestRollback:
		// Only a run that can be turned around live takes it; the others
		// are rolled back once stopped.
		if e.traits.Rollback != plan.RollbackGreen {
			return nil, nil
		}
		if err := e.cfg.Control.Clear(ctx); err != nil {
			return nil, err
		}
		return &plan.State{Phase: plan.PhaseRollback, Batch: s.Batch}, nil
	}
	return nil, nil
}

func (e *Engine) blueGreen() (cloud.BlueGreen, error) {
	bg, ok := e.group.(cloud.BlueGreen)
	if !ok {
		return nil, fmt.Errorf("cannot run --strategy %s: provider %q cannot create node groups", e.strategy.Name(), e.cfg.Provider.Name())
	}
	return bg, nil
}

// prepareTarget makes the target version exist; blue keeps launching its
// own.
func (e *Engine) prepareTarget(ctx context.Context) error {
	bg, err := e.blueGreen()
	if err != nil {
		return err
	}
	cr := e.cloudRecord()
	if cr.TargetVersion != "" {
		return nil // made by the interrupted run this one finishes
	}
	version, err := bg.PrepareTarget(ctx)
	if err != nil {
		return err
	}
	cr.TargetVersion = version
	return e.save(ctx)
}

// greenName is the green group's name: the plan's, or blue's with the
// version the Setup made.
func (e *Engine) greenName(cr *state.CloudRecord) string {
	if cr.Green != "" {
		return cr.Green
	}
	bgp := e.cfg.Plan.BlueGreen
	if bgp.GreenSelector != "" && !bgp.Create {
		return "" // green is nodes, not a group
	}
	if bgp.Create {
		if bg, err := e.blueGreen(); err == nil {
			return bg.GreenName(cr.TargetVersion)
		}
	}
	return bgp.Green
}

// createGreen pins blue at its size (so nothing scales it during the run),
// creates green beside it with the same size, and waits for green's nodes.
func (e *Engine) createGreen(ctx context.Context) error {
	bg, err := e.blueGreen()
	if err != nil {
		return err
	}
	orig, err := e.recordOriginal(ctx, 0)
	if err != nil {
		return err
	}
	cr := e.cloudRecord()
	green := e.greenName(cr)
	if e.cfg.Plan.BlueGreen.Create && !cr.GreenCreated {
		if err := bg.CheckQuota(ctx); err != nil {
			return err
		}
	}
	blueSizes, greenSizes := e.blueGreenSizes(orig)
	if e.traits.GreenFromZero {
		// The autoscaler takes blue's nodes away one by one, unevenly
		// between zones: the group's own rebalancing would then terminate
		// a blue node nobody drained. Held until blue is deleted.
		if err := e.holdRebalance(ctx); err != nil {
			return err
		}
	}
	// Only once: a resumed run must not undo what the autoscaler did to blue.
	if cr.Green == "" {
		if err := bg.SetGroupSizes(ctx, e.group.GroupName(), blueSizes); err != nil {
			return err
		}
	}
	if e.cfg.Plan.BlueGreen.Create {
		// Before the clone, so green follows the default as blue does.
		if err := e.keepDefault(ctx, cr.TargetVersion); err != nil {
			return err
		}
		e.logf("creating %s %q beside %q: %d nodes (max %d) of %s version %s", e.groupKind(), green, e.group.GroupName(), greenSizes.Desired, greenSizes.Max, e.templateKind(), cr.TargetVersion)
		if err := bg.CreateGreen(ctx, green, cr.TargetVersion, greenSizes); err != nil {
			return err
		}
	}
	cr.Green, cr.GreenCreated = green, e.cfg.Plan.BlueGreen.Create
	if err := e.save(ctx); err != nil {
		return err
	}
	if green != "" {
		bg.UseGreen(green)
	}
	if e.traits.GreenFromZero {
		return nil // green grows when blue's pods need it
	}
	if sel := e.greenSelector(); sel != "" {
		return e.waitGreenSelected(ctx, sel)
	}
	// Blue and green together: blue's nodes plus as many green ones.
	if err := e.waitNewNodes(ctx, cr, e.cfg.Plan.OutdatedZones(), int(2*orig.Desired)); err != nil {
		return err
	}
	return e.protectNewNodes(ctx, true)
}

// blueGreenSizes are blue's and green's sizes for the run from blue's
// original ones: blue pinned so nothing scales it and green as large; or,
// autoscaled, blue free to shrink to 0 while green starts at 0 and grows.
func (e *Engine) blueGreenSizes(orig plan.Sizes) (blue, green plan.Sizes) {
	if e.traits.GreenFromZero {
		return plan.Sizes{Min: 0, Desired: orig.Desired, Max: orig.Max}, plan.Sizes{Min: 0, Desired: 0, Max: orig.Max}
	}
	return plan.Sizes{Min: orig.Desired, Desired: orig.Desired, Max: orig.Desired}, orig
}

// cordonBlue cordons every blue node: new pods go to green only.
func (e *Engine) cordonBlue(ctx context.Context) error {
	names := e.cfg.Plan.OutdatedNames()
	e.logf("cordoning the %d blue nodes", len(names))
	return e.setUnschedulable(ctx, names, true)
}

// soak waits out the node-pool soak, recorded as an end time so a later
// run waits only for what is left.
func (e *Engine) soak(ctx context.Context) error {
	cr := e.cloudRecord()
	if cr.SoakUntil == nil {
		until := e.cfg.Now().Add(time.Duration(e.cfg.Plan.BlueGreen.NodePoolSoak)).UTC().Truncate(time.Second)
		cr.SoakUntil = &until
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	left := cr.SoakUntil.Sub(e.cfg.Now())
	if left > 0 && e.cfg.NoWait {
		if e.completeRequested(ctx) {
			return nil
		}
		return &SoakingError{Until: *cr.SoakUntil}
	}
	return e.soakFor(ctx, left, plan.PhaseSoak, e.traits.SoakName)
}

func (e *Engine) completeRequested(ctx context.Context) bool {
	if e.cfg.Control == nil {
		return false
	}
	req, err := e.cfg.Control.Pending(ctx)
	if err == nil && req == state.RequestComplete {
		_ = e.cfg.Control.Clear(ctx)
		e.logf("soak ended by complete")
		return true
	}
	return false
}

// soakFor waits d, showing the time left, unless complete ends it early,
// cancel pauses it (in phase, as recorded), or rollback turns the run
// around.
func (e *Engine) soakFor(ctx context.Context, d time.Duration, phase plan.Phase, what string) error {
	if d <= 0 || e.completeRequested(ctx) {
		return nil
	}
	until := e.cfg.Now().Add(d)
	// Whole seconds, rounded up: a soak of 1h resumed a moment later still
	// reads 1h0m0s, not 59m59s.
	shown := d.Truncate(time.Second)
	if shown < d {
		shown += time.Second
	}
	e.logf("%s: %s, until %s", what, shown, until.Format("15:04:05"))
	e.progress.waitingFor(fmt.Sprintf("the soak to end at %s (\"complete\" ends it now)", until.Format("15:04:05")))
	timer := time.NewTimer(d)
	defer timer.Stop()
	report := time.NewTicker(max(min(10*time.Minute, d/4), 5*time.Second))
	defer report.Stop()
	var requests <-chan string
	for {
		if requests == nil && e.cfg.Control != nil {
			ch, err := e.cfg.Control.Watch(ctx)
			if err != nil {
				return err
			}
			requests = ch
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			e.logf("%s over", what)
			return nil
		case <-report.C:
			e.logf("%s: %s left", what, time.Until(until).Round(time.Second))
		case req, ok := <-requests:
			if !ok {
				requests = nil // the watch ended; watch again
				continue
			}
			switch req {
			case state.RequestComplete:
				_ = e.cfg.Control.Clear(ctx)
				e.logf("%s ended by complete", what)
				return nil
			case state.RequestCancel:
				return &PausedError{Phase: phase}
			case state.RequestRollback:
				if err := e.cfg.Control.Clear(ctx); err != nil {
					return err
				}
				return errRollbackRequested
			}
		}
	}
}

// deleteBlue deletes what is left on blue, pods deleted rather than
// evicted with their grace capped at an hour, then the blue group.
func (e *Engine) deleteBlue(ctx context.Context) error {
	if blue := e.cfg.BlueDeleted; blue != "" {
		e.logf("deleting blue: %s %q is gone already", e.groupKind(), blue)
		return e.blueDeleted(ctx, blue, nil)
	}
	bg, err := e.blueGreen()
	if err != nil {
		return err
	}
	names := slices.DeleteFunc(e.cfg.Plan.OutdatedNames(), func(n string) bool { return !e.nodeExists(n) })
	e.logf("deleting blue: the pods left on its %d nodes, then %s %q", len(names), e.groupKind(), e.group.GroupName())
	opts := drain.Options{
		DeleteInsteadOfEvict: true, Force: true, DeleteEmptyDirData: true,
		GracePeriodSeconds: -1, MaxGracePeriod: time.Hour, Timeout: time.Hour + 5*time.Minute,
		OnEvent: e.reportDrainEvent,
	}
	if e.view != nil {
		// blue's pods are followed in the run's cache, as every drain's
		opts.Pods = e.view
	}
	d := drain.New(e.cfg.Client, opts)
	// Every blue node gets each hook once: those its batch drained are
	// recorded done; the others (batch size 0) get theirs here.
	if err := e.runHooks(ctx, plan.HookPreDrain, names); err != nil {
		return err
	}
	if err := e.excludeFromLoadBalancers(ctx, names); err != nil {
		return err
	}
	if _, err := d.DrainNodes(ctx, names); err != nil {
		return err
	}
	if err := e.runHooks(ctx, plan.HookPostDrain, names); err != nil {
		return err
	}
	if err := e.runHooks(ctx, plan.HookPreTerminate, names); err != nil {
		return err
	}
	if err := e.deregister(ctx, "deleting blue", names); err != nil {
		return err
	}
	if err := bg.DeleteGroup(ctx, e.group.GroupName()); err != nil {
		return err
	}
	return e.blueDeleted(ctx, e.group.GroupName(), names)
}

// blueDeleted records blue's nodes done once its group is gone, and lets
// the autoscaler have green's nodes again.
func (e *Engine) blueDeleted(ctx context.Context, blue string, names []string) error {
	e.done = append(e.done, names...)
	// Blue's rebalancing, held for an autoscaled run, went with its group:
	// there is nothing to resume.
	e.cloudRecord().RebalanceHeld, e.rebalanceHeld = false, false
	if err := e.record(ctx, plan.State{Phase: plan.PhaseDeleteBlue}); err != nil {
		return err
	}
	cr := e.cloudRecord()
	e.note = fmt.Sprintf("node group now runs in %s %q; %q was deleted", e.groupKind(), cr.Green, blue)
	switch bgp := e.cfg.Plan.BlueGreen; {
	case bgp.GreenLabel != "":
		e.note += fmt.Sprintf("; its nodes carry %s=%s, so the node group is %q from now on: rename it where infrastructure as code declares it", bgp.GreenLabel, cr.Green, cr.Green)
	case bgp.GreenSelector != "":
		e.note = fmt.Sprintf("node group now runs on the nodes of %s; %s %q was deleted", bgp.GreenSelector, e.groupKind(), blue)
	}
	e.logf("%s", e.note)
	return e.protectNewNodes(ctx, false)
}

// rollback undoes a blue/green run before blue is deleted: blue back in
// service at its own sizes, green drained (its pods go back to blue) and,
// if the run made it, deleted.
func (e *Engine) rollback(ctx context.Context) error {
	bg, err := e.blueGreen()
	if err != nil {
		return err
	}
	cr := e.cloudRecord()
	blue := sets.New(e.cfg.Plan.OutdatedNames()...)
	e.logf("rolling back: blue back in service, green drained")
	always := func(*corev1.Node) bool { return true }
	if _, err := e.releaseMarks(ctx, sets.List(blue), always, "NodeUpgradeRolledBack", "back in service: blue serves again"); err != nil {
		return err
	}
	if cr.Original != nil {
		if err := bg.SetGroupSizes(ctx, e.group.GroupName(), *cr.Original); err != nil {
			return err
		}
	}
	nodes, err := e.groupNodes()
	if err != nil {
		return err
	}
	var green []string
	for _, n := range nodes {
		if !blue.Has(n.Name) {
			green = append(green, n.Name)
		}
	}
	if sel := e.greenSelector(); sel != "" {
		selected, err := e.selectedNodes(sel)
		if err != nil {
			return err
		}
		green = green[:0]
		for _, n := range selected {
			if !blue.Has(n.Name) {
				green = append(green, n.Name)
			}
		}
	}
	if err := e.setUnschedulable(ctx, green, true); err != nil {
		return err
	}
	if cr.Green != "" && cr.GreenCreated {
		// Green goes: its load balancers let go of it before its drain.
		if err := e.excludeFromLoadBalancers(ctx, green); err != nil {
			return err
		}
	}
	if len(green) > 0 {
		// Green's nodes leave service like any drained node: with the hooks.
		if err := e.runHooks(ctx, plan.HookPreDrain, green); err != nil {
			return err
		}
		if _, err := e.drainer.DrainNodes(ctx, green); err != nil {
			return err
		}
		if err := e.runHooks(ctx, plan.HookPostDrain, green); err != nil {
			return err
		}
	}
	if cr.Green != "" && cr.GreenCreated {
		if err := e.runHooks(ctx, plan.HookPreTerminate, green); err != nil {
			return err
		}
		if err := e.deregister(ctx, "rolling back", green); err != nil {
			return err
		}
		if err := bg.DeleteGroup(ctx, cr.Green); err != nil {
			return err
		}
	}
	// Blue launches the default: the one of before the run again.
	if _, err := e.restoreDefault(ctx); err != nil {
		return err
	}
	e.rolledBack = true
	e.blueBack = len(slices.DeleteFunc(sets.List(blue), func(n string) bool { return !e.nodeExists(n) }))
	e.greenDrained = len(green)
	e.note = fmt.Sprintf("rolled back: blue (%s %q) serves again", e.groupKind(), e.group.GroupName())
	if cr.Green != "" && !cr.GreenCreated {
		e.note += fmt.Sprintf("; green %q was given, so it is left drained and cordoned", cr.Green)
	}
	e.logf("%s", e.note)
	return e.protectNewNodes(ctx, false)
}

// greenSelector selects green's nodes where they do not carry the node
// group's label: the nodes --green-selector gives, or those of the green
// group the run created (recorded) where the cloud labels them with
// their group's own name (plan.CloudGroup.GreenLabel). "" when green's
// nodes are the node group's.
func (e *Engine) greenSelector() string {
	bgp := e.cfg.Plan.BlueGreen
	if bgp == nil {
		return ""
	}
	if cr := e.cfg.Record.Cloud; bgp.GreenLabel != "" && cr != nil && cr.Green != "" {
		return labels.SelectorFromSet(labels.Set{bgp.GreenLabel: cr.Green}).String()
	}
	return bgp.GreenSelector
}

// selectedNodes returns the nodes a label selector selects, from the cache.
func (e *Engine) selectedNodes(selector string) ([]*corev1.Node, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	return e.nodesMatching(sel), nil
}

// waitGreenSelected waits, event-driven, until the green nodes a selector
// gives are all Ready, with one at least in every zone of blue's nodes.
func (e *Engine) waitGreenSelected(ctx context.Context, selector string) error {
	zones := e.cfg.Plan.OutdatedZones()
	e.logf("waiting up to %s for the green nodes %s to be Ready in zones %s", e.cfg.NodeReadyTimeout, selector, quoteAll(zones))
	var notReady, missing []string
	return e.awaitNodes(ctx, func(context.Context) (bool, error) {
		nodes, err := e.selectedNodes(selector)
		if err != nil {
			return false, err
		}
		notReady, missing = nil, nil
		ready := map[string]bool{}
		for _, n := range nodes {
			if capacity.NodeReady(n) && capacity.StartupTaint(n) == "" {
				ready[n.Labels[plan.ZoneLabel]] = true
			} else {
				notReady = append(notReady, n.Name)
			}
		}
		for _, z := range zones {
			if !ready[z] {
				missing = append(missing, z)
			}
		}
		e.progress.waitingFor(greenWait(notReady, missing))
		if len(nodes) > 0 && len(notReady) == 0 && len(missing) == 0 {
			e.logf("%d green nodes Ready", len(nodes))
			return true, nil
		}
		return false, nil
	}, func() *NodeCreationFailure {
		return &NodeCreationFailure{Group: selector, GroupKind: "green", Timeout: e.cfg.NodeReadyTimeout, Zones: missing, Instances: notReady, Original: *e.cloudRecord().Original}
	})
}

// greenWait says what the wait for green nodes given by a selector still
// waits for.
func greenWait(notReady, missingZones []string) string {
	s := "green nodes Ready"
	if len(notReady) > 0 {
		s += ": not yet " + listNames(quoteEach(notReady), waitNamesShown)
	}
	if len(missingZones) > 0 {
		s += "; none yet in zones " + listNames(quoteEach(missingZones), waitNamesShown)
	}
	return s
}
