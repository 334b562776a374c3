package upgrade

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
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
	registerSteps(plan.StrategyBlueGreen, func(t toolkit) strategyRun { return &blueGreenRun{toolkit: t} })
	registerSteps(plan.StrategyAutoscaledBlueGreen, func(t toolkit) strategyRun { return &blueGreenRun{toolkit: t, autoscaled: true} })
}

// blueGreenRun is the execution of the blue/green strategies.
type blueGreenRun struct {
	toolkit
	// autoscaled: the autoscaler moves the pods, with no batch soaks and
	// no rollback.
	autoscaled bool
	// rolledBack says the rollback step ran, and blueBack and
	// greenDrained what it did.
	rolledBack             bool
	blueBack, greenDrained int
}

func (r *blueGreenRun) steps() map[plan.Phase]step {
	steps := map[plan.Phase]step{
		plan.PhasePrepareTarget: unbatched(r.prepareTarget),
		plan.PhaseCreateGreen:   unbatched(r.createGreen),
		plan.PhaseCordonBlue:    unbatched(r.cordonBlue),
		plan.PhaseSoak:          unbatched(r.soak),
		plan.PhaseDeleteBlue:    unbatched(r.deleteBlue),
	}
	if !r.autoscaled {
		steps[plan.PhaseBatchSoak] = r.batchSoak
		steps[plan.PhaseRollback] = unbatched(r.rollback)
	}
	return steps
}

// holdsOutdatedOff: cordonBlue cordons every blue node.
func (r *blueGreenRun) holdsOutdatedOff() {}

// soakName names the soak in progress lines.
func (r *blueGreenRun) soakName() string {
	if r.autoscaled {
		return "wait period" // the autoscaler's, which moves the pods
	}
	return "node pool soak"
}

// green is the blue/green strategies' part of the run's record.
func (r *blueGreenRun) green() *state.GreenRecord { return &r.group.cloudRecord().GreenRecord }

// summarize adds what a rollback did to the run's final line.
func (r *blueGreenRun) summarize(s *runSummary) {
	s.BlueGreen, s.BlueBack, s.GreenDrained = r.rolledBack, r.blueBack, r.greenDrained
}

// batchSoak waits out --batch-soak after batch i.
func (r *blueGreenRun) batchSoak(ctx context.Context, i int) error {
	return r.soakFor(ctx, time.Duration(r.cfg.Plan.BlueGreen.BatchSoak), plan.PhaseBatchSoak, fmt.Sprintf("%s: soak", batchLabel(r.cfg.Plan, i)))
}

func (r *blueGreenRun) blueGreen() (cloud.BlueGreen, error) {
	bg, ok := r.group.pool.(cloud.BlueGreen)
	if !ok {
		return nil, fmt.Errorf("cannot run --strategy %s: provider %q cannot create node groups", r.strategy, r.cfg.Provider.Name())
	}
	return bg, nil
}

// prepareTarget makes the target version exist; blue keeps launching its
// own.
func (r *blueGreenRun) prepareTarget(ctx context.Context) error {
	bg, err := r.blueGreen()
	if err != nil {
		return err
	}
	cr := r.group.cloudRecord()
	if cr.TargetVersion != "" {
		return nil // made by the interrupted run this one finishes
	}
	version, err := bg.PrepareTarget(ctx)
	if err != nil {
		return err
	}
	cr.TargetVersion = version
	return r.save(ctx)
}

// greenName is the green group's name: the plan's, or blue's with the
// version the Setup made.
func (r *blueGreenRun) greenName(target string) string {
	if g := r.green(); g.Green != "" {
		return g.Green
	}
	bgp := r.cfg.Plan.BlueGreen
	if bgp.GreenSelector != "" && !bgp.Create {
		return "" // green is nodes, not a group
	}
	if bgp.Create {
		if bg, err := r.blueGreen(); err == nil {
			return bg.GreenName(target)
		}
	}
	return bgp.Green
}

// createGreen pins blue at its size (so nothing scales it during the run),
// creates green beside it with the same size, and waits for green's nodes.
func (r *blueGreenRun) createGreen(ctx context.Context) error {
	bg, err := r.blueGreen()
	if err != nil {
		return err
	}
	orig, err := r.group.recordOriginal(ctx, 0)
	if err != nil {
		return err
	}
	cr, gr := r.group.cloudRecord(), r.green()
	green := r.greenName(cr.TargetVersion)
	if r.cfg.Plan.BlueGreen.Create && !gr.GreenCreated {
		if err := bg.CheckQuota(ctx); err != nil {
			return err
		}
	}
	blueSizes, greenSizes := r.blueGreenSizes(orig)
	if r.autoscaled {
		// The autoscaler takes blue's nodes away one by one, unevenly
		// between zones: the group's own rebalancing would then terminate
		// a blue node nobody drained. Held until blue is deleted.
		if err := r.group.holdRebalance(ctx); err != nil {
			return err
		}
	}
	// Only once: a resumed run must not undo what the autoscaler did to blue.
	if gr.Green == "" {
		if err := bg.SetGroupSizes(ctx, r.group.pool.GroupName(), blueSizes); err != nil {
			return err
		}
	}
	switch bgp := r.cfg.Plan.BlueGreen; {
	case bgp.Create:
		err = r.makeGreen(ctx, bg, green, greenSizes)
	case bgp.Kept:
		err = r.scaleKept(ctx, bg, green, greenSizes)
	}
	if err != nil {
		return err
	}
	gr.Green, gr.GreenCreated = green, r.cfg.Plan.BlueGreen.Create
	if err := r.save(ctx); err != nil {
		return err
	}
	if green != "" {
		bg.UseGreen(green)
	}
	if r.autoscaled {
		return nil // green grows when blue's pods need it
	}
	if sel := r.nodes.greenSelector(); sel != "" {
		return r.waitGreenSelected(ctx, sel)
	}
	// Blue and green together: blue's nodes plus as many green ones.
	if err := r.group.waitNewNodes(ctx, &cr.GroupRecord, r.cfg.Plan.OutdatedZones(), int(2*orig.Desired)); err != nil {
		return err
	}
	return r.group.protectNewNodes(ctx, true)
}

// makeGreen creates green of the target version at sizes, its name
// recorded first: a run killed while the cloud makes it (an Azure scale
// set takes minutes) leaves a record from which abort deletes it;
// deleting a group that was never made does nothing.
func (r *blueGreenRun) makeGreen(ctx context.Context, bg cloud.BlueGreen, green string, sizes plan.Sizes) error {
	cr, gr := r.group.cloudRecord(), r.green()
	// Before the clone, so green follows the default as blue does.
	if err := r.group.pin.keepDefault(ctx, cr.TargetVersion); err != nil {
		return err
	}
	if gr.Green == "" {
		gr.Green, gr.GreenCreated = green, true
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	r.logf("creating %s %q beside %q at %s, of %s", r.words.groupKind(), green, r.group.pool.GroupName(), r.cfg.Plan.Cloud.SizeText(sizes), r.words.templateVersion(cr.TargetVersion))
	return bg.CreateGreen(ctx, green, cr.TargetVersion, sizes)
}

// scaleKept scales the blue a finished run kept (--keep-blue), green now,
// back up to sizes. Where the group follows its template's default, the
// run it undoes moved the default on: the target is made the default
// again first, so the kept group launches it. Green's name is recorded
// first: abort and rollback scale it back to 0.
func (r *blueGreenRun) scaleKept(ctx context.Context, bg cloud.BlueGreen, green string, sizes plan.Sizes) error {
	cr, gr := r.group.cloudRecord(), r.green()
	if err := r.group.pin.keepDefault(ctx, cr.TargetVersion); err != nil {
		return err
	}
	if gr.Green == "" {
		gr.Green = green
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	r.logf("scaling the kept %s %q back up to %s, of %s", r.words.groupKind(), green, r.cfg.Plan.Cloud.SizeText(sizes), r.words.templateVersion(cr.TargetVersion))
	return bg.SetGroupSizes(ctx, green, sizes)
}

// blueGreenSizes are blue's and green's sizes for the run from blue's
// original ones: blue pinned so nothing scales it and green as large; or,
// autoscaled, blue free to shrink to 0 while green starts at 0 and grows.
func (r *blueGreenRun) blueGreenSizes(orig plan.Sizes) (blue, green plan.Sizes) {
	if r.autoscaled {
		return plan.Sizes{Min: 0, Desired: orig.Desired, Max: orig.Max}, plan.Sizes{Min: 0, Desired: 0, Max: orig.Max}
	}
	return plan.Sizes{Min: orig.Desired, Desired: orig.Desired, Max: orig.Desired}, orig
}

// cordonBlue cordons every blue node: new pods go to green only.
func (r *blueGreenRun) cordonBlue(ctx context.Context) error {
	names := r.cfg.Plan.OutdatedNames()
	r.logf("cordoning the %d blue nodes", len(names))
	return r.nodes.setUnschedulable(ctx, names, true)
}

// soak waits out the node-pool soak, recorded as an end time so a later
// run waits only for what is left.
func (r *blueGreenRun) soak(ctx context.Context) error {
	gr := r.green()
	if gr.SoakUntil == nil {
		until := r.cfg.Now().Add(time.Duration(r.cfg.Plan.BlueGreen.NodePoolSoak)).UTC().Truncate(time.Second)
		gr.SoakUntil = &until
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	left := gr.SoakUntil.Sub(r.cfg.Now())
	if left > 0 && r.cfg.NoWait {
		if r.completeRequested(ctx) {
			return nil
		}
		return &SoakingError{Until: *gr.SoakUntil}
	}
	return r.soakFor(ctx, left, plan.PhaseSoak, r.soakName())
}

func (r *blueGreenRun) completeRequested(ctx context.Context) bool {
	if r.cfg.Control == nil {
		return false
	}
	req, err := r.cfg.Control.Pending(ctx)
	if err == nil && req == state.RequestComplete {
		_ = r.cfg.Control.Clear(ctx)
		r.logf("soak ended by complete")
		return true
	}
	return false
}

// soakFor waits d, showing the time left, unless complete ends it early,
// cancel pauses it (in phase, as recorded), or rollback turns the run
// around.
func (r *blueGreenRun) soakFor(ctx context.Context, d time.Duration, phase plan.Phase, what string) error {
	if d <= 0 || r.completeRequested(ctx) {
		return nil
	}
	until := r.cfg.Now().Add(d)
	// Whole seconds, rounded up: a soak of 1h resumed a moment later still
	// reads 1h0m0s, not 59m59s.
	shown := d.Truncate(time.Second)
	if shown < d {
		shown += time.Second
	}
	r.logf("%s: %s, until %s", what, shown, until.Format("15:04:05"))
	r.progress.waitingFor(fmt.Sprintf("the soak to end at %s (\"complete\" ends it now)", until.Format("15:04:05")))
	completed := false
	err := r.windows.waitOrRequest(ctx, d, max(min(10*time.Minute, d/4), 5*time.Second), func() {
		r.logf("%s: %s left", what, time.Until(until).Round(time.Second))
	}, func(req string) (bool, error) {
		switch req {
		case state.RequestComplete:
			_ = r.cfg.Control.Clear(ctx)
			r.logf("%s ended by complete", what)
			completed = true
			return true, nil
		case state.RequestCancel:
			return false, &PausedError{Phase: phase}
		case state.RequestRollback:
			if err := r.cfg.Control.Clear(ctx); err != nil {
				return false, err
			}
			return false, errRollbackRequested
		}
		return false, nil
	})
	if err == nil && !completed {
		r.logf("%s over", what)
	}
	return err
}

// deleteBlue deletes what is left on blue, pods deleted rather than
// evicted with their grace capped at an hour, then the blue group.
func (r *blueGreenRun) deleteBlue(ctx context.Context) error {
	if blue := r.cfg.BlueDeleted; blue != "" {
		r.logf("deleting blue: %s %q is gone already", r.words.groupKind(), blue)
		return r.blueDeleted(ctx, blue, r.green().BlueNodes)
	}
	bg, err := r.blueGreen()
	if err != nil {
		return err
	}
	names := slices.DeleteFunc(r.cfg.Plan.OutdatedNames(), func(n string) bool { return !r.nodes.nodeExists(n) })
	r.logf("deleting blue: the pods left on its %d nodes, then %s %q", len(names), r.words.groupKind(), r.group.pool.GroupName())
	opts := drain.Options{
		DeleteInsteadOfEvict: true, Force: true, DeleteEmptyDirData: true,
		GracePeriodSeconds: -1, MaxGracePeriod: time.Hour, Timeout: time.Hour + 5*time.Minute,
		OnEvent: func(ev drain.Event) { r.drains.reportDrainEvent(ctx, ev) },
	}
	if view := r.nodes.view; view != nil {
		// blue's pods are followed in the run's cache, as every drain's
		opts.Pods = view
	}
	d := drain.New(r.cfg.Client, opts)
	// Every blue node gets each hook once: those its batch drained are
	// recorded done; the others (batch size 0) get theirs here.
	if err := r.hooks.run(ctx, plan.HookPreDrain, names); err != nil {
		return err
	}
	if err := r.nodes.excludeFromLoadBalancers(ctx, names); err != nil {
		return err
	}
	if _, err := d.DrainNodes(ctx, names); err != nil {
		return err
	}
	if err := r.hooks.run(ctx, plan.HookPostDrain, names); err != nil {
		return err
	}
	if err := r.hooks.run(ctx, plan.HookPreTerminate, names); err != nil {
		return err
	}
	if err := r.batches.deregister(ctx, "deleting blue", names); err != nil {
		return err
	}
	// Intent first: a run killed once the group is gone, before it
	// counted them done, leaves the next run the nodes it deleted.
	r.green().BlueNodes = names
	if keep := time.Duration(r.cfg.Plan.BlueGreen.KeepBlue); keep > 0 {
		return r.keepBlue(ctx, bg, names, keep)
	}
	if err := r.save(ctx); err != nil {
		return err
	}
	if err := bg.DeleteGroup(ctx, r.group.pool.GroupName()); err != nil {
		return err
	}
	return r.blueDeleted(ctx, r.group.pool.GroupName(), names)
}

// keepBlue scales blue to 0 nodes (max 0 too: no autoscaler grows it)
// instead of deleting it, kept until --keep-blue from now: a rollback
// scales it back up, the next run after that deletes it.
func (r *blueGreenRun) keepBlue(ctx context.Context, bg cloud.BlueGreen, names []string, keep time.Duration) error {
	gr, blue := r.green(), r.group.pool.GroupName()
	if gr.BlueKeptUntil == nil {
		until := r.cfg.Now().Add(keep).UTC().Truncate(time.Second)
		gr.BlueKeptUntil = &until
	}
	if err := r.save(ctx); err != nil {
		return err
	}
	if err := bg.SetGroupSizes(ctx, blue, plan.Sizes{}); err != nil {
		return err
	}
	return r.blueLeft(ctx, names, fmt.Sprintf("node group now runs in %s %q; blue %q is kept at 0 nodes until %s (--keep-blue): \"rollback\" scales it back up, the next run after that deletes it", r.words.groupKind(), gr.Green, blue, gr.BlueKeptUntil.Format(time.RFC3339)))
}

// blueDeleted records blue's nodes done once its group is gone, and lets
// the autoscaler have green's nodes again.
func (r *blueGreenRun) blueDeleted(ctx context.Context, blue string, names []string) error {
	gr := r.green()
	note := fmt.Sprintf("node group now runs in %s %q; %q was deleted", r.words.groupKind(), gr.Green, blue)
	switch bgp := r.cfg.Plan.BlueGreen; {
	case bgp.GreenLabel != "":
		note += fmt.Sprintf("; its nodes carry %s=%s, so the node group is %q from now on: rename it where infrastructure as code declares it", bgp.GreenLabel, gr.Green, gr.Green)
	case bgp.GreenSelector != "":
		note = fmt.Sprintf("node group now runs on the nodes of %s; %s %q was deleted", bgp.GreenSelector, r.words.groupKind(), blue)
	}
	return r.blueLeft(ctx, names, note)
}

// blueLeft records blue's nodes done once its group is gone or at 0
// nodes, notes where the node group runs now, and lets the autoscaler
// have green's nodes again.
func (r *blueGreenRun) blueLeft(ctx context.Context, names []string, note string) error {
	r.tally.markDone(names...)
	// Blue's rebalancing, held for an autoscaled run, went with its
	// machines: there is nothing to resume.
	r.group.cloudRecord().RebalanceHeld, r.group.rebalanceHeld = false, false
	if err := r.record(ctx, plan.State{Phase: plan.PhaseDeleteBlue}); err != nil {
		return err
	}
	r.tally.setNote(note)
	r.logf("%s", note)
	return r.group.protectNewNodes(ctx, false)
}

// rollback undoes a blue/green run before blue is deleted: blue back in
// service at its own sizes, green drained (its pods go back to blue) and,
// if the run made it, deleted.
func (r *blueGreenRun) rollback(ctx context.Context) error {
	bg, err := r.blueGreen()
	if err != nil {
		return err
	}
	cr := r.group.cloudRecord()
	blue := sets.New(r.cfg.Plan.OutdatedNames()...)
	r.logf("rolling back: blue back in service, green drained")
	always := func(*corev1.Node) bool { return true }
	if _, err := r.nodes.releaseMarks(ctx, sets.List(blue), always, "NodeUpgradeRolledBack", "back in service: blue serves again"); err != nil {
		return err
	}
	if cr.Original != nil {
		if err := bg.SetGroupSizes(ctx, r.group.pool.GroupName(), *cr.Original); err != nil {
			return err
		}
	}
	green, err := r.greenNodes(blue)
	if err != nil {
		return err
	}
	if err := r.retireGreen(ctx, bg, &cr.GreenRecord, green); err != nil {
		return err
	}
	// Blue launches the default: the one of before the run again.
	if _, err := r.group.pin.restoreDefault(ctx); err != nil {
		return err
	}
	r.rolledBack = true
	r.blueBack = len(slices.DeleteFunc(sets.List(blue), func(n string) bool { return !r.nodes.nodeExists(n) }))
	r.greenDrained = len(green)
	note := fmt.Sprintf("rolled back: blue (%s %q) serves again", r.words.groupKind(), r.group.pool.GroupName())
	if gr := cr.GreenRecord; gr.Green != "" && r.cfg.Plan.BlueGreen.Kept {
		note += fmt.Sprintf("; %q is back at 0 nodes, as the finished run kept it", gr.Green)
	} else if gr.Green != "" && !gr.GreenCreated {
		note += fmt.Sprintf("; green %q was given, so it is left drained and cordoned", gr.Green)
	}
	r.tally.setNote(note)
	r.logf("%s", note)
	return r.group.protectNewNodes(ctx, false)
}

// greenNodes are the nodes that are not blue: the group's, or those of
// the green selector.
func (r *blueGreenRun) greenNodes(blue sets.Set[string]) ([]string, error) {
	nodes, err := r.nodes.groupNodes()
	if sel := r.nodes.greenSelector(); sel != "" && err == nil {
		nodes, err = r.nodes.selectedNodes(sel)
	}
	if err != nil {
		return nil, err
	}
	var green []string
	for _, n := range nodes {
		if !blue.Has(n.Name) {
			green = append(green, n.Name)
		}
	}
	return green, nil
}

// retireGreen cordons and drains green's nodes, with the hooks, and
// deletes green where the run made it.
func (r *blueGreenRun) retireGreen(ctx context.Context, bg cloud.BlueGreen, gr *state.GreenRecord, green []string) error {
	if err := r.nodes.setUnschedulable(ctx, green, true); err != nil {
		return err
	}
	kept := gr.Green != "" && r.cfg.Plan.BlueGreen.Kept
	made := gr.Green != "" && gr.GreenCreated
	if made || kept {
		// Green goes: its load balancers let go of it before its drain.
		if err := r.nodes.excludeFromLoadBalancers(ctx, green); err != nil {
			return err
		}
	}
	if len(green) > 0 {
		// Green's nodes leave service like any drained node: with the hooks.
		if err := r.hooks.run(ctx, plan.HookPreDrain, green); err != nil {
			return err
		}
		if err := r.batches.drainNodes(ctx, green); err != nil {
			return err
		}
		if err := r.hooks.run(ctx, plan.HookPostDrain, green); err != nil {
			return err
		}
	}
	if !made && !kept {
		return nil
	}
	if err := r.hooks.run(ctx, plan.HookPreTerminate, green); err != nil {
		return err
	}
	if err := r.batches.deregister(ctx, "rolling back", green); err != nil {
		return err
	}
	if kept {
		// Kept as the finished run left it: at 0 nodes.
		return bg.SetGroupSizes(ctx, gr.Green, plan.Sizes{})
	}
	return bg.DeleteGroup(ctx, gr.Green)
}

// abortGreen ends a blue/green run before blue is deleted. Blue is back in
// service already; a green the run created is drained and deleted like a
// rollback does it, because once the record says aborted nothing leads
// back to it: it would run, and be paid for, with no command that removes
// it. A green given by the user (--green-asg, --green-selector) is theirs:
// it is left serving as it is, and named.
func (r *blueGreenRun) abortGreen(ctx context.Context) error {
	cr, gr := r.cfg.Record.Cloud, &r.cfg.Record.Cloud.GreenRecord
	if gr.Green != "" && (gr.GreenCreated || r.cfg.Plan.BlueGreen.Kept) {
		return r.rollback(ctx)
	}
	bg, ok := r.group.pool.(cloud.BlueGreen)
	if !ok {
		return nil
	}
	if cr.Original != nil {
		if err := bg.SetGroupSizes(ctx, r.group.pool.GroupName(), *cr.Original); err != nil {
			return err
		}
		r.logf("%s %q is back to %s", r.words.groupKind(), r.group.pool.GroupName(), r.cfg.Plan.Cloud.SizeText(*cr.Original))
	}
	green := gr.Green
	if sel := r.cfg.Plan.BlueGreen; sel != nil && sel.GreenSelector != "" {
		green = sel.GreenSelector
	}
	if green != "" {
		r.tally.addNote(fmt.Sprintf("green %q was given, not made by the run: it is left serving as it is", green))
	}
	return nil
}

// greenSelector selects green's nodes where they do not carry the node
// group's label: the nodes --green-selector gives, or those of the green
// group the run created (recorded) where the cloud labels them with
// their group's own name (plan.CloudGroup.GreenLabel). "" when green's
// nodes are the node group's.
func (nw *nodeWriter) greenSelector() string {
	bgp := nw.plan.BlueGreen
	if bgp == nil {
		return ""
	}
	if cr := nw.record.Cloud; bgp.GreenLabel != "" && cr != nil && cr.Green != "" {
		return labels.SelectorFromSet(labels.Set{bgp.GreenLabel: cr.Green}).String()
	}
	return bgp.GreenSelector
}

// selectedNodes returns the nodes a label selector selects, from the cache.
func (nw *nodeWriter) selectedNodes(selector string) ([]*corev1.Node, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	return nw.nodesMatching(sel), nil
}

// waitGreenSelected waits, event-driven, until the green nodes a selector
// gives are all Ready, with one at least in every zone of blue's nodes.
func (r *blueGreenRun) waitGreenSelected(ctx context.Context, selector string) error {
	zones := r.cfg.Plan.OutdatedZones()
	r.logf("waiting up to %s for the green nodes %s to be Ready in zones %s", r.cfg.NodeReadyTimeout, selector, quoteAll(zones))
	var notReady, missing []string
	return r.arrivals.awaitNodes(ctx, func(context.Context) (bool, error) {
		nodes, err := r.nodes.selectedNodes(selector)
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
		r.progress.waitingFor(greenWait(notReady, missing))
		if len(nodes) > 0 && len(notReady) == 0 && len(missing) == 0 {
			r.logf("%d green nodes Ready", len(nodes))
			return true, nil
		}
		return false, nil
	}, func() *NodeCreationFailure {
		return &NodeCreationFailure{Group: selector, GroupKind: "green", Timeout: r.cfg.NodeReadyTimeout, Zones: missing, Instances: notReady, Original: *r.group.cloudRecord().Original}
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

// cordonedWholesale are the nodes the run cordoned wholesale: blue once
// the run got past creating green, and green during a rollback.
func (r *blueGreenRun) cordonedWholesale() sets.Set[string] {
	out := sets.New[string]()
	switch plan.Phase(r.cfg.Record.Phase) {
	case "", plan.PhaseSetup, plan.PhasePrepareTarget, plan.PhaseCreateGreen:
		return out
	case plan.PhaseRollback:
		blue := sets.New(r.cfg.Plan.OutdatedNames()...)
		nodes, _ := r.nodes.groupNodes()
		for _, n := range nodes {
			if !blue.Has(n.Name) {
				out.Insert(n.Name)
			}
		}
	}
	return out.Insert(r.cfg.Plan.OutdatedNames()...)
}
