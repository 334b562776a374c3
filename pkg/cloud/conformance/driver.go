package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// driver is the suite's own small engine: it plans with pkg/plan and
// replaces a group's nodes through the provider contract alone (pkg/cloud),
// so that a provider outside this repository runs the same suite. It does
// what the contract asks of a run (hold a self-updating group, Setup before
// resizing, every call safe to repeat after an interruption) and no more:
// no pods are drained, as the suite runs none.
type driver struct {
	client kubernetes.Interface
	h      Harness
	st     strategy
	// joinTimeout bounds each wait for machines to become Ready nodes.
	joinTimeout time.Duration
	rec         *record
}

// record is what a run keeps across a kill, as the plugin's record does:
// the run again, abort and the controls read it.
type record struct {
	mu sync.Mutex
	// sizes are the group's before the run's first change.
	sizes   *plan.Sizes
	version string
	green   string
	update  string
	// selfUpdates is what SelfUpdates read before the hold; held says a
	// hold is in place.
	selfUpdates string
	held        bool
	// defaultWas is the template's default before the run made the target
	// the default (cloud.DefaultFollower).
	defaultWas string
}

func (r *record) set(f func(r *record)) { r.mu.Lock(); f(r); r.mu.Unlock() }

// updateID is the service's update the run follows, "" before it starts.
func (r *record) updateID() string { r.mu.Lock(); defer r.mu.Unlock(); return r.update }

// errPaused is a run's end when the service's update was cancelled.
var errPaused = errors.New("the service's update was cancelled")

// newDriver is a driver of st over h's group, with a fresh record.
func newDriver(client kubernetes.Interface, h Harness, st strategy) *driver {
	return &driver{client: client, h: h, st: st, joinTimeout: time.Minute, rec: &record{}}
}

// target reads the harness's cloud flags into the target a run opens.
func (d *driver) target() (plan.CloudTarget, error) {
	var req plan.Request
	fs := pflag.NewFlagSet("target", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	cloud.BindFlags(fs, &req)
	if err := fs.Parse(d.h.Args); err != nil {
		return plan.CloudTarget{}, fmt.Errorf("cannot parse the harness's flags: %w", err)
	}
	req.Cloud.Strategy = d.st.name
	return req.Cloud, nil
}

// open opens the provider on the group's nodes, as a plan does; with
// provider none there is no cloud group.
func (d *driver) open(ctx context.Context, nodes []corev1.Node) (*plan.CloudGroup, cloud.Provider, error) {
	if d.h.Provider == cloud.NoneName {
		return nil, &cloud.None{Client: d.client, DeleteNode: true}, nil
	}
	c, ok := cloud.Lookup(d.h.Provider)
	if !ok {
		return nil, nil, fmt.Errorf("no provider %q is registered: import its package", d.h.Provider)
	}
	t, err := d.target()
	if err != nil {
		return nil, nil, err
	}
	return cloud.OpenGroup(ctx, c, d.client, nodes, t)
}

// Plan lists the cluster, opens the group and builds the plan of st; it
// changes nothing.
func (d *driver) Plan(ctx context.Context) (*plan.Plan, cloud.Provider, error) {
	snap, err := snapshot.Take(ctx, d.client, nil)
	if err != nil {
		return nil, nil, err
	}
	in := plan.Input{NodeGroup: d.h.NodeGroup, Provider: d.h.Provider, Seed: 1, TargetLabels: d.h.TargetLabels,
		Strategy: d.st.name, MaxSurge: d.st.maxSurge, MaxUnavailable: d.st.maxUnavailable,
		BlueGreen: plan.BlueGreenInput{BatchNodes: 1}}
	if in.NodeGroupLabel, err = plan.ResolveNodeGroupLabel(snap.Nodes, d.h.NodeGroup, d.h.NodeGroupLabel, cloud.NodeGroupLabels()); err != nil {
		return nil, nil, err
	}
	group, err := plan.GroupNodes(snap.Nodes, in)
	if err != nil {
		return nil, nil, err
	}
	cg, p, err := d.open(ctx, group)
	if err != nil {
		return nil, nil, err
	}
	in.Cloud = cg
	if in.Strategy == "" && cg != nil && cg.Managed != nil && cg.Managed.Own != nil {
		// The group's own strategy, which its service runs when asked for none.
		own := cg.Managed.Own
		in.Strategy, in.MaxUnavailable, in.MaxSurge, in.BlueGreen = own.Strategy, own.MaxUnavailable, own.MaxSurge, own.BlueGreen
	}
	s, err := plan.LookupStrategy(string(in.Strategy))
	if err != nil {
		return nil, nil, err
	}
	in.MaxUnavailable = cmp.Or(in.MaxUnavailable, s.Traits().DefaultMaxUnavailable)
	pl, err := plan.Build(snap, in)
	return pl, p, err
}

// Run plans and replaces the plan's outdated nodes with what the
// strategy needs of the provider.
func (d *driver) Run(ctx context.Context) error {
	pl, p, err := d.Plan(ctx)
	if err != nil {
		return err
	}
	if pl.Managed != nil {
		return d.managed(ctx, p)
	}
	if err := d.hold(ctx, p); err != nil {
		return err
	}
	switch d.st.need {
	case plan.CapNewGroups:
		err = d.blueGreen(ctx, p.(cloud.BlueGreen), pl.OutdatedNames())
	case plan.CapResize:
		err = d.surge(ctx, p.(cloud.Scaler), pl.OutdatedNames())
	default:
		err = d.removeEach(ctx, p.(cloud.Remover), pl.OutdatedNames())
	}
	if err != nil {
		return err
	}
	return d.release(ctx, p)
}

// hold keeps a self-updating group from replacing nodes nobody drained,
// from before the run's first change (cloud.SelfUpdater).
func (d *driver) hold(ctx context.Context, p cloud.Provider) error {
	su, ok := p.(cloud.SelfUpdater)
	if !ok || d.rec.held {
		return nil
	}
	was, err := su.SelfUpdates(ctx)
	if err != nil {
		return err
	}
	if err := retry(ctx, func() error { return su.HoldUpdates(ctx) }); err != nil {
		return err
	}
	d.rec.set(func(r *record) { r.selfUpdates, r.held = was, true })
	return nil
}

// release puts back what hold held and the group's max.
func (d *driver) release(ctx context.Context, p cloud.Provider) error {
	if su, ok := p.(cloud.SelfUpdater); ok && d.rec.held {
		if _, err := su.RestoreUpdates(ctx, d.rec.selfUpdates); err != nil {
			return err
		}
		d.rec.set(func(r *record) { r.held = false })
	}
	return nil
}

// setup points a group the run resizes at the target, once, and keeps
// its sizes before the run.
func (d *driver) setup(ctx context.Context, sc cloud.Scaler) error {
	if d.rec.sizes == nil {
		s, err := sc.Sizes(ctx)
		if err != nil {
			return err
		}
		d.rec.set(func(r *record) { r.sizes = &s })
	}
	var v string
	if err := retry(ctx, func() (err error) { v, err = sc.Setup(ctx); return err }); err != nil {
		return err
	}
	d.rec.set(func(r *record) { r.version = v })
	return d.keepDefault(ctx, sc, v)
}

// keepDefault makes version its template's default where the group
// launches the default (cloud.DefaultFollower: Setup leaves such a group
// following it), the default before recorded first for abort.
func (d *driver) keepDefault(ctx context.Context, sc cloud.Scaler, version string) error {
	f, ok := sc.(cloud.DefaultFollower)
	if !ok {
		return nil
	}
	follows, current, err := f.TemplateDefault(ctx)
	if err != nil || !follows || current == version {
		return err
	}
	if d.rec.defaultWas == "" {
		d.rec.set(func(r *record) { r.defaultWas = current })
	}
	return retry(ctx, func() error { return f.SetTemplateDefault(ctx, version) })
}

// removeEach takes the outdated nodes out one at a time, each replaced
// (unless nothing replaces machines) before the next goes: the eks
// strategy's batches of one, over a Remover.
func (d *driver) removeEach(ctx context.Context, rm cloud.Remover, outdated []string) error {
	pool, isPool := rm.(cloud.Pool)
	if sc, ok := rm.(cloud.Scaler); ok {
		if err := d.setup(ctx, sc); err != nil {
			return err
		}
	}
	for _, n := range outdated {
		if err := d.remove(ctx, n, rm.RemoveNode); err != nil {
			return err
		}
		if isPool && !d.h.NoReplacement {
			if err := d.awaitInService(ctx, pool, d.desired(ctx, pool)); err != nil {
				return err
			}
		}
	}
	return nil
}

// surge adds one machine, waits for it, and takes one outdated node out
// with the desired size lowered, for each outdated node; then puts max
// back.
func (d *driver) surge(ctx context.Context, sc cloud.Scaler, outdated []string) error {
	if err := d.setup(ctx, sc); err != nil {
		return err
	}
	before := *d.rec.sizes
	for _, n := range outdated {
		now, err := sc.Sizes(ctx)
		if err != nil {
			return err
		}
		if now.Desired == before.Desired {
			if err := retry(ctx, func() error { return sc.SetDesiredAndMax(ctx, before.Desired+1, max(before.Max, before.Desired+1)) }); err != nil {
				return err
			}
		}
		if err := d.awaitInService(ctx, sc, before.Desired+1); err != nil {
			return err
		}
		if err := d.remove(ctx, n, sc.Shrink); err != nil {
			return err
		}
	}
	if err := retry(ctx, func() error { return sc.SetMax(ctx, before.Max) }); err != nil {
		return err
	}
	return d.awaitInService(ctx, sc, before.Desired)
}

// blueGreen stands green up beside blue with blue's sizes, waits for its
// nodes (those not of blue, whose nodes are the outdated ones), and
// deletes blue.
func (d *driver) blueGreen(ctx context.Context, bg cloud.BlueGreen, outdated []string) error {
	blue := bg.GroupName()
	if d.rec.green == "" {
		sizes, err := bg.Sizes(ctx)
		if err != nil {
			return err
		}
		v, err := bg.PrepareTarget(ctx)
		if err != nil {
			return err
		}
		if err := bg.CheckQuota(ctx); err != nil {
			return err
		}
		d.rec.set(func(r *record) { r.sizes, r.version, r.green = &sizes, v, bg.GreenName(v) })
	}
	if err := retry(ctx, func() error { return bg.CreateGreen(ctx, d.rec.green, d.rec.version, *d.rec.sizes) }); err != nil {
		return err
	}
	bg.UseGreen(d.rec.green)
	green := func(n *corev1.Node) bool { return !slices.Contains(outdated, n.Name) }
	if err := d.awaitMachines(ctx, bg, d.rec.sizes.Desired, green); err != nil {
		return err
	}
	for _, name := range outdated {
		if _, err := d.cordon(ctx, name); err != nil {
			return err
		}
	}
	return retry(ctx, func() error { return bg.DeleteGroup(ctx, blue) })
}

// managed starts the service's update, or finds the one under way, and
// follows it to its end.
func (d *driver) managed(ctx context.Context, p cloud.Provider) error {
	mu := p.(cloud.ManagedUpdater)
	id := d.rec.updateID()
	if f, ok := p.(cloud.UpdateFinder); ok && id == "" {
		running, err := f.RunningUpdate(ctx)
		if err != nil {
			return err
		}
		id = running
	}
	if id == "" {
		err := retry(ctx, func() (err error) { id, err = mu.StartUpdate(ctx, false); return err })
		if err != nil {
			return err
		}
	}
	d.rec.set(func(r *record) { r.update = id })
	return d.follow(ctx, mu, id)
}

// follow polls the update until it ends: nil when it succeeded,
// errPaused when it was cancelled.
func (d *driver) follow(ctx context.Context, mu cloud.ManagedUpdater, id string) error {
	var last cloud.UpdateProgress
	err := d.poll(ctx, 2*d.joinTimeout, func(ctx context.Context) (bool, error) {
		pr, err := mu.Progress(ctx, id)
		if err != nil {
			return false, nil // look again: a read the cloud failed to answer
		}
		last = pr
		return pr.Finished(), nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("cannot follow update %q (last %s): %w", id, last.State, err)
	case last.State == cloud.UpdateCancelled:
		return errPaused
	case last.State != cloud.UpdateSucceeded:
		return fmt.Errorf("update %q ended %s: %v", id, last.State, last.Errors)
	}
	return nil
}

// Cancel cancels the service's update the run follows.
func (d *driver) Cancel(ctx context.Context, p cloud.Provider) error {
	c, ok := p.(cloud.UpdateCanceller)
	if !ok {
		return fmt.Errorf("provider %q declares no cloud.UpdateCanceller", d.h.Provider)
	}
	return retry(ctx, func() error { return c.CancelUpdate(ctx, d.rec.updateID()) })
}

// Resume continues the cancelled update and follows the one that does it.
func (d *driver) Resume(ctx context.Context, p cloud.Provider) error {
	r, ok := p.(cloud.UpdateResumer)
	if !ok {
		return fmt.Errorf("provider %q declares no cloud.UpdateResumer", d.h.Provider)
	}
	var id string
	if err := retry(ctx, func() (err error) { id, err = r.ResumeUpdate(ctx, d.rec.updateID()); return err }); err != nil {
		return err
	}
	d.rec.set(func(r *record) { r.update = id })
	return d.follow(ctx, p.(cloud.ManagedUpdater), id)
}

// retry repeats a call while the cloud says it failed in passing
// (cloud.Transient), backing off as cloud.Backoff says.
func retry(ctx context.Context, call func() error) error {
	for n := 1; ; n++ {
		// A killed run stops before its next call, as a process would.
		if err := ctx.Err(); err != nil {
			return err
		}
		err := call()
		if err == nil || !cloud.Transient(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cloud.Backoff(50*time.Millisecond, n)):
		}
	}
}

// poll looks at cond until it holds, timeout passes or ctx ends.
func (d *driver) poll(ctx context.Context, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, cond)
}

// nodes are the cluster's nodes, as a Pool's Machines takes them.
func (d *driver) nodes(ctx context.Context) ([]*corev1.Node, error) {
	list, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// desired is the group's desired size now, 0 when the cloud did not say.
func (d *driver) desired(ctx context.Context, pool cloud.Pool) int32 {
	s, _ := pool.Sizes(ctx)
	return s.Desired
}

// awaitInService waits until want of the group's machines that are not
// leaving are Ready, uncordoned nodes, and none is pending.
func (d *driver) awaitInService(ctx context.Context, pool cloud.Pool, want int32) error {
	return d.awaitMachines(ctx, pool, want, func(*corev1.Node) bool { return true })
}

// awaitMachines waits until want of the nodes counts takes are Ready,
// uncordoned nodes of the group's machines that are not leaving, and no
// machine is pending.
func (d *driver) awaitMachines(ctx context.Context, pool cloud.Pool, want int32, counts func(*corev1.Node) bool) error {
	var got int32
	var pending []plan.Machine
	var last error
	err := d.poll(ctx, d.joinTimeout, func(ctx context.Context) (bool, error) {
		nodes, err := d.nodes(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		var byNode map[string]plan.Machine
		if byNode, pending, err = pool.Machines(ctx, nodes); err != nil {
			last = err // look again: a read the cloud failed to answer
			return false, nil
		}
		got = 0
		for _, n := range nodes {
			m, ok := byNode[n.Name]
			// A node the run cordoned is on its way out, whatever its
			// machine says yet.
			if ok && !m.Leaving() && Ready(n) && !n.Spec.Unschedulable && counts(n) {
				got++
			}
		}
		return len(pending) == 0 && got >= want, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d machines of %q are Ready nodes, %d pending (last error %v): %w", got, want, pool.GroupName(), len(pending), last, err)
	}
	return nil
}

// remove cordons a node and takes it out of the group with call; a node
// already gone (a killed run removed it) is skipped.
func (d *driver) remove(ctx context.Context, name string, call func(context.Context, string) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n, err := d.cordon(ctx, name)
	if err != nil || n == nil {
		return err
	}
	return retry(ctx, func() error { return call(ctx, name) })
}

// cordon marks a node unschedulable before the run removes it; nil when
// the node is gone.
func (d *driver) cordon(ctx context.Context, name string) (*corev1.Node, error) {
	return d.setUnschedulable(ctx, name, true)
}

func (d *driver) setUnschedulable(ctx context.Context, name string, on bool) (*corev1.Node, error) {
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)
	n, err := d.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot set node %q unschedulable %t: %w", name, on, err)
	}
	return n, nil
}

// refusal is an abort the provider refuses while its service's update
// runs (cloud.UpdateAborter): its advice names what to do instead.
type refusal struct{ advice string }

func (r *refusal) Error() string { return "abort refused: " + r.advice }

// Abort puts the group back in service after an interrupted run: green
// deleted, the sizes before the run, the self-updates held given back,
// every node uncordoned; a service's update that has not ended is left
// to the service, as its AbortAdvice says.
func (d *driver) Abort(ctx context.Context) error {
	p, err := d.provider(ctx)
	if err != nil {
		return err
	}
	if a, ok := p.(cloud.UpdateAborter); ok && d.rec.updateID() != "" {
		advice, err := a.AbortAdvice(ctx, d.rec.updateID(), d.h.NodeGroup)
		if err != nil || advice != "" {
			return cmp.Or(err, error(&refusal{advice}))
		}
	}
	if bg, ok := p.(cloud.BlueGreen); ok && d.rec.green != "" {
		if err := d.deleteGreen(ctx, bg); err != nil {
			return err
		}
	}
	if f, ok := p.(cloud.DefaultFollower); ok && d.rec.defaultWas != "" {
		if err := retry(ctx, func() error { return f.SetTemplateDefault(ctx, d.rec.defaultWas) }); err != nil {
			return err
		}
	}
	if sc, ok := p.(cloud.Scaler); ok && d.rec.sizes != nil && d.st.need == plan.CapResize {
		s := d.rec.sizes
		if err := retry(ctx, func() error { return sc.SetDesiredAndMax(ctx, s.Desired, s.Max) }); err != nil {
			return err
		}
	}
	if err := d.release(ctx, p); err != nil {
		return err
	}
	if err := d.uncordonAll(ctx); err != nil {
		return err
	}
	d.rec = &record{}
	return nil
}

// deleteGreen deletes the green group and waits until it is gone, so the
// next run can create it again.
func (d *driver) deleteGreen(ctx context.Context, bg cloud.BlueGreen) error {
	if err := retry(ctx, func() error { return bg.DeleteGroup(ctx, d.rec.green) }); err != nil {
		return err
	}
	// The contract says not how a deleted group reads: gone is when it
	// no longer can be read (cloud.ErrGroupNotFound, or the service's own
	// not-found), other than in passing.
	return d.poll(ctx, d.joinTimeout, func(ctx context.Context) (bool, error) {
		_, err := bg.GroupSizes(ctx, d.rec.green)
		return err != nil && !cloud.Transient(err), nil
	})
}

// uncordonAll takes the run's cordon off every node.
func (d *driver) uncordonAll(ctx context.Context) error {
	nodes, err := d.nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			if _, err := d.setUnschedulable(ctx, n.Name, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// provider opens the group's provider without planning: what abort and
// the controls act with.
func (d *driver) provider(ctx context.Context) (cloud.Provider, error) {
	list, err := d.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	in := plan.Input{NodeGroup: d.h.NodeGroup, TargetLabels: d.h.TargetLabels}
	if in.NodeGroupLabel, err = plan.ResolveNodeGroupLabel(list.Items, d.h.NodeGroup, d.h.NodeGroupLabel, cloud.NodeGroupLabels()); err != nil {
		return nil, err
	}
	group, err := plan.GroupNodes(list.Items, in)
	if err != nil {
		return nil, err
	}
	_, p, err := d.open(ctx, group)
	return p, err
}
