package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// A batch's Recover hands over to the next batch's drain once the
// evicted workloads have their pods back on nodes (so the next room
// estimate counts them), not once they are Ready: the rest of the wait
// goes on per workload, and the next batch evicts a workload's pods only
// when that workload is back. No workload is disrupted again before it
// has recovered, as when every workload was waited for, but the ones
// back early need not wait for the slowest, and the cluster's
// controllers are kept busy between batches.

// recovery is a batch's recovery still going on while the next batch
// drains.
type recovery struct {
	batch  int // -1: the interrupted run's last batch
	owners []Owner
	ready  map[Owner]chan struct{} // closed when that workload is back
	done   chan struct{}           // closed when all are back or the wait failed
	err    error                   // why it failed; set before done closes
}

// recoveries keeps track of the workloads a run's batches evicted until
// they are Ready again: in the record (so an interrupted run's successor
// holds them too), and live, holding the next drain's pods of a workload
// still recovering. view is set once the run watches the cluster.
type recoveries struct {
	record   *state.Record
	plan     *plan.Plan
	view     *clusterView
	timeout  time.Duration
	progress *progress
	logf     func(format string, args ...any)
	// recovering is the last batch's recovery, handed over to the next
	// batch's drain; nil when none goes on.
	recovering atomic.Pointer[recovery]
	// intended are the workloads recorded as recovering before the drain
	// (intendRecovering) that were not listed already.
	intended []Owner
}

// waitRecovered is the Recover phase of batch i.
func (b *batchRun) waitRecovered(ctx context.Context, i int) error {
	return b.recoverAfter(ctx, i, nil)
}

// recoverAfter is the Recover phase of batch i with the strategy's own
// wait first (surge: the group's replacements), after an earlier batch's
// recovery settled.
func (b *batchRun) recoverAfter(ctx context.Context, i int, first func(context.Context) error) error {
	if err := b.recoveries.settleRecovery(ctx); err != nil {
		return err
	}
	if first != nil {
		if err := first(ctx); err != nil {
			return err
		}
	}
	if b.group.pool != nil {
		// The group has launched replacements: keep the autoscaler off them.
		if err := b.group.protectNewNodes(ctx, true); err != nil {
			return err
		}
	}
	owners := OwnersOf(b.evicted)
	if len(owners) == 0 {
		return nil
	}
	// again: the settled recovery took off the ones this batch shares
	b.recoveries.recordRecovering(owners, nil)
	wctx, cancel := context.WithTimeout(ctx, b.cfg.RecoverTimeout)
	if !b.handsOver(i) {
		defer cancel()
		b.logf("%s: waiting for %d workloads to be Ready again", batchLabel(b.cfg.Plan, i), len(owners))
		if err := b.nodes.view.workloads.waitReady(wctx, owners, b.recoveries.showWaitingFor("workloads to be Ready again: ")); err != nil {
			return b.recoveries.recoveryFailed(ctx, i, err)
		}
		b.recoveries.recordRecovering(nil, owners)
		return nil
	}
	b.logf("%s: waiting for %d workloads to have their pods scheduled again; the next batch evicts a workload's pods once it is Ready", batchLabel(b.cfg.Plan, i), len(owners))
	if err := b.nodes.view.waitPlaced(wctx, owners, b.recoveries.showWaitingFor("workloads' pods to be scheduled again: ")); err != nil {
		cancel()
		return b.recoveries.recoveryFailed(ctx, i, err)
	}
	b.recoveries.followRecovery(ctx, wctx, cancel, i, owners)
	return nil
}

// handsOver says whether batch i's Recover may end before its workloads
// are Ready: only where the next batch's room check or drain comes next,
// not where a soak or a surge comes between batches, nor after the last
// batch, which waits for everything.
func (b *batchRun) handsOver(i int) bool {
	next := b.strategy.Next(plan.State{Phase: plan.PhaseRecover, Batch: i}, b.flow())
	return next.Batch == i+1 && (next.Phase == plan.PhaseRoom || next.Phase == plan.PhaseDrain)
}

func (rs *recoveries) showWaitingFor(what string) func([]Owner) {
	return func(left []Owner) {
		rs.progress.waitingFor(what + listNames(ownerNames(left), waitNamesShown))
	}
}

func ownerNames(owners []Owner) []string {
	names := make([]string, len(owners))
	for i, o := range owners {
		names[i] = o.String()
	}
	return names
}

// recoveryFailed words a recovery wait's timeout; other errors pass.
func (rs *recoveries) recoveryFailed(ctx context.Context, i int, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		which := fmt.Sprintf("in batch %d", i+1)
		if i < 0 {
			which = "before the run was interrupted"
		}
		return fmt.Errorf("workloads evicted %s did not recover within %s: %w; re-run when they are Ready, raise --drain-timeout, or put the group back in service with \"kubectl nodeupgrade abort\"", which, rs.timeout, err)
	}
	return err
}

// recordRecovering keeps in the run's record the workloads that may not
// be Ready again yet: added as their pods are evicted, taken off once
// they are back. The record is written with the next state the run
// enters, or when it stops.
func (rs *recoveries) recordRecovering(evicted, back []Owner) {
	if rs.record == nil {
		return
	}
	r := slices.DeleteFunc(rs.record.Recovering, func(w Owner) bool { return slices.Contains(back, w) })
	for _, o := range evicted {
		if !slices.Contains(r, o) {
			r = append(r, o)
		}
	}
	rs.record.Recovering = r
}

// intendRecovering lists in the record, before batch i's drain, the
// workloads whose pods it is about to evict. The record is written as the
// Drain state is entered, so a run killed during the drain leaves listed
// what it may have evicted, at no extra write. The drain's end takes off
// again those it evicted no pod of (intended).
func (rs *recoveries) intendRecovering(i int) {
	if rs.record == nil || rs.view == nil {
		return
	}
	seen := map[Owner]bool{}
	for _, n := range batchNodes(rs.plan, i) {
		for _, p := range rs.view.podsOn(n) {
			if o, ok := replicaOwner(p); ok && plan.Evictable(p) && !slices.Contains(rs.record.Recovering, o) {
				seen[o] = true
			}
		}
	}
	rs.intended = sortedOwners(seen)
	rs.recordRecovering(rs.intended, nil)
}

// followEarlierRecovery holds the pods of the workloads an interrupted
// attempt of this run evicted pods of and that may not be back yet,
// until they are: its recovery went on in the background when it
// stopped, or it stopped in the middle of a Recover.
func (rs *recoveries) followEarlierRecovery(ctx context.Context) {
	if rs.record == nil || len(rs.record.Recovering) == 0 {
		return
	}
	owners := slices.Clone(rs.record.Recovering)
	rs.logf("evicted before the run was interrupted, maybe not Ready again yet: %s; their pods are evicted once they are", listNames(ownerNames(owners), waitNamesShown))
	wctx, cancel := context.WithTimeout(ctx, rs.timeout)
	rs.followRecovery(ctx, wctx, cancel, -1, owners)
}

// followRecovery waits in the background, within wctx (which it cancels
// when done), for owners to be Ready, releasing each one's held pods as
// it comes back.
func (rs *recoveries) followRecovery(ctx, wctx context.Context, cancel context.CancelFunc, i int, owners []Owner) {
	rec := &recovery{batch: i, owners: owners, ready: make(map[Owner]chan struct{}, len(owners)), done: make(chan struct{})}
	for _, o := range owners {
		rec.ready[o] = make(chan struct{})
	}
	back := make(map[Owner]bool, len(owners))
	release := func(left []Owner) {
		for o, ch := range rec.ready {
			if !back[o] && !slices.Contains(left, o) {
				back[o] = true
				close(ch)
			}
		}
	}
	rs.recovering.Store(rec)
	go func() {
		defer close(rec.done)
		defer cancel()
		err := rs.view.workloads.waitReady(wctx, owners, release)
		if err == nil {
			release(nil)
		}
		rec.err = rs.recoveryFailed(ctx, i, err)
	}()
}

// settleRecovery waits for the recovery an earlier batch handed over to
// end, and returns its error.
func (rs *recoveries) settleRecovery(ctx context.Context) error {
	rec := rs.recovering.Load()
	if rec == nil {
		return nil
	}
	select {
	case <-rec.done:
	default:
		what := fmt.Sprintf("the workloads of batch %d to be Ready again", rec.batch+1)
		if rec.batch < 0 {
			what = "the workloads evicted before the run was interrupted to be Ready again"
		}
		rs.progress.waitingFor(what)
		select {
		case <-rec.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rs.recovering.Store(nil)
	if rec.err != nil {
		return rec.err
	}
	rs.recordRecovering(nil, rec.owners)
	return nil
}

// holdForRecovery is the drains' Options.Hold: a pod whose workload is
// still recovering from the last batch waits for it.
func (rs *recoveries) holdForRecovery(ctx context.Context, pod *corev1.Pod) bool {
	rec := rs.recovering.Load()
	if rec == nil {
		return true
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return true
	}
	owner := Owner{Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name}
	back, ok := rec.ready[owner]
	if !ok {
		return true
	}
	select {
	case <-back:
		return true
	default:
	}
	// Said once per held pod, so a drain that seems to stall says why.
	when := fmt.Sprintf("in batch %d", rec.batch+1)
	if rec.batch < 0 {
		when = "before the run was interrupted"
	}
	rs.logf("node %q: pod %q waits for %s, evicted %s, to be Ready again", pod.Spec.NodeName, pod.Namespace+"/"+pod.Name, owner, when)
	select {
	case <-back:
		return true
	case <-rec.done:
		return rec.err == nil
	case <-ctx.Done():
		return false
	}
}

// drainContext ends a batch's drain when the recovery it overlaps fails:
// the drain's error is then the recovery's.
func (rs *recoveries) drainContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	dctx, cancel := context.WithCancelCause(ctx)
	rec := rs.recovering.Load()
	if rec == nil {
		return dctx, cancel
	}
	go func() {
		select {
		case <-rec.done:
			if rec.err != nil {
				cancel(rec.err)
			}
		case <-dctx.Done():
		}
	}()
	return dctx, cancel
}

// placed says whether owner has all its replicas as pods bound to nodes
// (or is Ready, or gone), and how far it got.
func (v *clusterView) placed(owner Owner) (bool, string) {
	if ready, _ := v.workloads.status(owner); ready {
		return true, ""
	}
	want, ok := v.workloads.replicas(owner)
	if !ok {
		return true, ""
	}
	active, bound := 0, 0
	for _, p := range v.ownedPods(owner) {
		if !isActive(p) {
			continue
		}
		active++
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	return active >= int(want) && bound == active, fmt.Sprintf("%s has %d of %d pods scheduled", owner, bound, want)
}

// waitPlaced waits until every owner is placed, on the run's caches:
// each change to pods, nodes or a watched workload looks again.
func (v *clusterView) waitPlaced(ctx context.Context, owners []Owner, pending func([]Owner)) error {
	if err := v.workloads.watch(ctx, kindsOf(owners)); err != nil {
		return err
	}
	return waitOwners(ctx, owners, v.placed, v.workloads.changes, v.changed, pending)
}

const byOwnerIndex = "owner"

// ownedPods are the cached pods whose controller is owner.
func (v *clusterView) ownedPods(owner Owner) []*corev1.Pod {
	objs, _ := v.pods.GetIndexer().ByIndex(byOwnerIndex, ownerKey(owner.Kind, owner.Namespace, owner.Name))
	pods := make([]*corev1.Pod, len(objs))
	for i, obj := range objs {
		pods[i] = obj.(*corev1.Pod)
	}
	return pods
}

// isActive says whether p counts towards its controller's replicas: not
// going away and not finished.
func isActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && !pods.Finished(p)
}

func ownerKey(kind, namespace, name string) string { return namespace + "/" + kind + "/" + name }

// indexByOwner indexes pods by their controller.
func indexByOwner(obj any) ([]string, error) {
	p := obj.(*corev1.Pod)
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return nil, nil
	}
	return []string{ownerKey(ref.Kind, p.Namespace, ref.Name)}, nil
}
