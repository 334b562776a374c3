package upgrade

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// ScaleDownDisabledAnnotation keeps the cluster autoscaler from removing a
// node; new nodes carry it while a run is in progress, so the autoscaler
// does not take away the capacity the upgrade counts on.
const ScaleDownDisabledAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled"

// cloudGroup is the provider's cloud group and the run's record of it:
// the toolkit of the strategies that change a group (point it at the
// target, resize it, wait for its new nodes, scale it back down), each
// change recorded before it is made. pool is nil where the provider's
// nodes are no cloud group.
type cloudGroup struct {
	toolkit // group is this cloudGroup
	pool    cloud.Pool
	// shrunk are the nodes the run removed with the desired size lowered.
	shrunk sets.Set[string]
	// protected are the nodes this process annotated scale-down-disabled:
	// the informer may not show the annotation yet when it is taken off.
	protected sets.Set[string]
	// rebalanceHeld says this process suspended the group's rebalancing.
	rebalanceHeld bool
	// wholeGroup: the strategy's run aborts by putting a whole group back
	// (groupAborter: blue/green), which settles the default itself.
	wholeGroup bool
	pin        *defaultPin // the template default the group follows
	shrink     *shrinker   // the scale-down back to the sizes before the run
	refusals   launchRefusals
}

// newCloudGroup makes the group of provider; its toolkit is set once the
// engine's parts are made (some of them hold the group).
func newCloudGroup(provider cloud.Provider) *cloudGroup {
	g := &cloudGroup{shrunk: sets.New[string](), protected: sets.New[string]()}
	if p, ok := provider.(cloud.Pool); ok {
		g.pool = p
	}
	g.pin, g.shrink = &defaultPin{cloudGroup: g}, &shrinker{cloudGroup: g}
	return g
}

// cloudRecord is the run's cloud record, created on first use.
func (cg *cloudGroup) cloudRecord() *state.CloudRecord {
	if cg.cfg.Record.Cloud == nil {
		cg.cfg.Record.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: cg.cfg.Provider.Name(), Group: cg.pool.GroupName(), GroupKind: cg.words.groupKind(), TemplateKind: cg.words.templateKind()}}
		if c := cg.cfg.Plan.Cloud; c != nil {
			cg.cfg.Record.Cloud.Template = c.Template
		}
	}
	return cg.cfg.Record.Cloud
}

// setup points the group at the target configuration.
func (cg *cloudGroup) setup(ctx context.Context) error {
	// Reserved first: a cloud without the capacity refuses the run
	// before anything changes.
	if err := cg.reserveSurge(ctx, plan.FirstRaise(cg.cfg.Plan)); err != nil {
		return err
	}
	cr := cg.cloudRecord()
	if cr.FromVersion == "" && cg.cfg.Plan.Cloud != nil {
		cr.FromVersion = cg.cfg.Plan.Cloud.CurrentVersion
		if err := cg.save(ctx); err != nil {
			return err
		}
	}
	if err := cg.holdUpdates(ctx); err != nil {
		return err
	}
	g, err := cg.resizer()
	if err != nil {
		return err
	}
	version, err := g.Setup(ctx)
	if err != nil {
		return cg.releaseHold(ctx, err)
	}
	if err := cg.pin.keepDefault(ctx, version); err != nil {
		return err
	}
	if cr.TargetVersion != version {
		cg.logf("%s %q launches %s", cg.words.groupKind(), cg.pool.GroupName(), cg.words.templateVersion(version))
	}
	cr.TargetVersion = version
	return cg.save(ctx)
}

// releaseHold puts back how the group updated itself when Setup failed,
// so that a failed start leaves it as it was (a template that could not be
// made, say); RestoreUpdates itself keeps the hold where Setup got as far
// as pointing the group at the target. The hold of an earlier setup (a
// re-run) stays for the run that resumes.
func (cg *cloudGroup) releaseHold(ctx context.Context, err error) error {
	if cg.cloudRecord().TargetVersion != "" {
		return err
	}
	if rerr := cg.restoreUpdates(ctx); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// resizer is the provider as a Group the run resizes itself. The
// strategies that resize need plan.CapResize, so a plan gives them no
// other provider; one that only reads its group (an EKS managed node
// group, whose sizes are EKS's) is refused here all the same.
func (cg *cloudGroup) resizer() (cloud.Scaler, error) {
	if g, ok := cg.pool.(cloud.Scaler); ok {
		return g, nil
	}
	return nil, fmt.Errorf("cannot resize the node group: provider %q leaves the sizes of %s %q to its cloud service", cg.cfg.Provider.Name(), cg.words.groupKind(), cloud.GroupName(cg.cfg.Provider))
}

// shrinkable is the provider as a group the scale-down brings back to
// its recorded sizes: a Group the run resizes, or one whose service
// scaled it up (an EKS managed node group after its update failed).
func (cg *cloudGroup) shrinkable() (cloud.Shrinker, error) {
	if g, ok := cg.pool.(cloud.Shrinker); ok {
		return g, nil
	}
	return nil, fmt.Errorf("cannot shrink the node group: provider %q leaves the sizes of %s %q to its cloud service", cg.cfg.Provider.Name(), cg.words.groupKind(), cloud.GroupName(cg.cfg.Provider))
}

// cloudWords are the provider's words for its group, its templates and
// its machines, from the plan's cloud side (nil: none).
type cloudWords struct{ cloud *plan.CloudPlan }

// groupKind and templateKind are the provider's words for its group and
// its templates, from the plan.
func (w cloudWords) groupKind() string {
	if c := w.cloud; c != nil && c.GroupKind != "" {
		return c.GroupKind
	}
	return "group"
}

func (w cloudWords) templateKind() string {
	if c := w.cloud; c != nil && c.TemplateKind != "" {
		return c.TemplateKind
	}
	return "template"
}

// templateVersion names a version with its template, as the plan's
// header does: the kind alone would read "instance template in project
// version demo-v1" on Compute Engine.
func (w cloudWords) templateVersion(version string) string {
	if c := w.cloud; c != nil && c.Template != "" {
		return fmt.Sprintf("%s %s version %s", w.templateKind(), c.Template, version)
	}
	return fmt.Sprintf("%s version %s", w.templateKind(), version)
}

// recordOriginal records the group's sizes before the run's first change
// to them, so a re-run never raises twice and the end restores them.
func (cg *cloudGroup) recordOriginal(ctx context.Context, scaleUp int32) (plan.Sizes, error) {
	cr := cg.cloudRecord()
	if cr.Original == nil {
		sizes, err := cg.pool.Sizes(ctx)
		if err != nil {
			return plan.Sizes{}, err
		}
		cr.Original, cr.ScaleUp, cr.LastDesired, cr.ScaledFor = &sizes, scaleUp, sizes.Desired+scaleUp, cr.TargetVersion
		if err := cg.save(ctx); err != nil {
			return plan.Sizes{}, err
		}
	}
	return *cr.Original, nil
}

// raise brings desired and max up to the recorded sizes plus by, never
// lowering either; it returns the sizes before and after.
func (cg *cloudGroup) raise(ctx context.Context, by int32) (from, to plan.Sizes, err error) {
	cr := cg.cloudRecord()
	from, err = cg.pool.Sizes(ctx)
	if err != nil {
		return from, from, err
	}
	to = from
	to.Desired, to.Max = max(from.Desired, cr.Original.Desired+by), max(from.Max, cr.Original.Max+by)
	if to == from {
		return from, to, nil
	}
	g, err := cg.resizer()
	if err != nil {
		return from, from, err
	}
	cg.refusals.raisedAt = time.Now()
	return from, to, g.SetDesiredAndMax(ctx, to.Desired, to.Max)
}

// restoreMax brings max back to the recorded one, as far as the desired
// size allows.
func (cg *cloudGroup) restoreMax(ctx context.Context) (plan.Sizes, error) {
	cr := cg.cfg.Record.Cloud
	if cr == nil || cr.Original == nil {
		return cg.pool.Sizes(ctx)
	}
	return cg.setMaxBack(ctx, cr.Original.Max)
}

// setMaxBack sets max back to was, or to the desired size where that is
// larger (the autoscaler's), and returns the sizes then.
func (cg *cloudGroup) setMaxBack(ctx context.Context, was int32) (plan.Sizes, error) {
	sizes, err := cg.pool.Sizes(ctx)
	if err != nil {
		return sizes, err
	}
	if m := max(was, sizes.Desired); sizes.Max != m {
		g, err := cg.shrinkable()
		if err != nil {
			return sizes, err
		}
		if err := g.SetMax(ctx, m); err != nil {
			return sizes, err
		}
		sizes.Max = m
	}
	return sizes, nil
}

// protectNewNodes puts the scale-down-disabled annotation on the group's
// nodes that are not outdated (on), or takes it off every node of the
// group (off).
func (cg *cloudGroup) protectNewNodes(ctx context.Context, on bool) error {
	nodes, err := cg.nodes.groupNodes()
	if err != nil {
		return err
	}
	outdated := sets.New(cg.cfg.Plan.OutdatedNames()...)
	var names []string
	for _, n := range nodes {
		_, has := n.Annotations[ScaleDownDisabledAnnotation]
		if on && !has && !cg.protected.Has(n.Name) && !outdated.Has(n.Name) && !n.Spec.Unschedulable || !on && (has || cg.protected.Has(n.Name)) {
			names = append(names, n.Name)
		}
	}
	var value *string
	if on {
		value = ptr.To("true")
	}
	if err := cg.nodes.annotateNodes(ctx, names, ScaleDownDisabledAnnotation, value); err != nil {
		return err
	}
	if on {
		cg.protected.Insert(names...)
	} else {
		cg.protected.Delete(names...)
	}
	return nil
}

// holdRebalance suspends the group's own rebalancing between zones before
// a termination that lowers the desired size, unless it was suspended
// before the run. The intent is recorded first, so a run killed after the
// call still resumes it.
func (cg *cloudGroup) holdRebalance(ctx context.Context) error {
	r, ok := cg.pool.(cloud.Rebalancer)
	if !ok {
		return nil // and no cloud record made for nothing held
	}
	cr := cg.cloudRecord()
	if cr.RebalanceWasHeld || cg.rebalanceHeld {
		return nil
	}
	if !cr.RebalanceHeld {
		held, err := r.RebalanceHeld(ctx)
		if err != nil {
			return err
		}
		if held {
			cr.RebalanceWasHeld = true
			cg.logf("%s of %s %q was suspended before the run: left so", r.RebalanceName(), cg.words.groupKind(), cg.pool.GroupName())
			return cg.save(ctx)
		}
		cr.RebalanceHeld = true
		if err := cg.save(ctx); err != nil {
			return err
		}
	}
	if err := r.HoldRebalance(ctx); err != nil {
		return err
	}
	cg.rebalanceHeld = true
	cg.logf("suspended %s of %s %q while the run removes nodes with the desired size lowered", r.RebalanceName(), cg.words.groupKind(), cg.pool.GroupName())
	return nil
}

// releaseRebalance resumes the rebalancing the run suspended.
func (cg *cloudGroup) releaseRebalance(ctx context.Context) error {
	cr := cg.cfg.Record.Cloud
	if cr == nil || !cr.RebalanceHeld {
		return nil
	}
	r, ok := cg.pool.(cloud.Rebalancer)
	if !ok {
		cg.tally.note = joinNote(cg.tally.note, fmt.Sprintf("the run suspended the rebalancing of %s %q between zones but cannot reach the group to resume it: resume it by hand", cr.GroupKind, cr.Group))
		cg.logf("%s", cg.tally.note)
		return nil
	}
	if err := r.ReleaseRebalance(ctx); err != nil {
		return err
	}
	cr.RebalanceHeld, cg.rebalanceHeld = false, false
	cg.logf("resumed %s of %s %q", r.RebalanceName(), cg.words.groupKind(), cg.pool.GroupName())
	return cg.save(ctx)
}
