package drain

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// run removes pods and waits, in rounds: once the listed pods are gone the
// node is listed again, because a workload tolerating every taint lands back.
func (n *nodeDrain) run(ctx context.Context, pods []corev1.Pod) error {
	var deadline <-chan time.Time
	if n.d.opts.Timeout > 0 {
		timer := time.NewTimer(n.d.opts.Timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	wctx, workers := n.startRemovers(ctx)
	defer workers.stop()
	added := n.track(pods)
	workers.start(wctx, ctx, added)
	for {
		left, stuck := n.state()
		switch {
		case left == 0 && (len(added) == 0 || !n.newPodsCached()):
			n.d.emit(Event{Type: EventDrained, Node: n.node})
			return nil
		case left == 0:
			more, err := n.d.evictableOrRefuse(ctx, n.node, n.d.opts.Timeout)
			if err != nil {
				return err
			}
			added = n.track(more)
			workers.start(wctx, ctx, added)
			continue
		case stuck == left:
			// only pods whose eviction failed for good remain: waiting longer
			// cannot help, so do now what the timeout would do
			workers.stop()
			return n.expire(ctx, false)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			workers.stop()
			return n.expire(ctx, true)
		case <-n.wake:
		}
	}
}

// removers runs remove for each tracked pod in a goroutine of its own.
type removers struct {
	n      *nodeDrain
	cancel context.CancelFunc // ends the context startRemovers returned
	wg     sync.WaitGroup
}

// startRemovers returns the removers and the context to start them with,
// which stop ends.
func (n *nodeDrain) startRemovers(ctx context.Context) (context.Context, *removers) {
	wctx, cancel := context.WithCancel(ctx)
	return wctx, &removers{n: n, cancel: cancel}
}

// start runs remove for added with ctx from startRemovers; drainCtx is
// the drain's.
func (r *removers) start(ctx, drainCtx context.Context, added []*podTrack) {
	for _, t := range added {
		r.wg.Go(func() { r.n.remove(ctx, drainCtx, t) })
	}
}

// stop ends the removers and waits for them, so that expire's deletions do
// not race an eviction. It may be called again.
func (r *removers) stop() {
	r.cancel()
	r.wg.Wait()
}

// expire ends a drain whose pods did not all leave, at the timeout or when
// no eviction can progress: with Force the remaining pods are deleted and
// waited for, without it the drain fails.
func (n *nodeDrain) expire(ctx context.Context, timedOut bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !n.d.opts.Force && !n.d.opts.DeleteAtTimeout {
		return n.failure(ctx, timedOut)
	}
	n.mu.Lock()
	var rest []*podTrack
	for _, t := range n.pods {
		if !t.isGone {
			rest = append(rest, t)
		}
	}
	n.mu.Unlock()
	maxGrace := 0
	explicit := n.d.opts.GracePeriodSeconds >= 0 || n.d.opts.MaxGracePeriod > 0
	var wg sync.WaitGroup
	for _, t := range rest {
		n.mu.Lock()
		pod, terminating := t.pod, t.terminating
		n.mu.Unlock()
		grace := n.d.graceFor(&pod)
		if g := effectiveGrace(&pod, grace); g > maxGrace {
			maxGrace = g
		}
		if terminating && !explicit {
			// deleting again without a shorter grace period changes nothing
			continue
		}
		// all at once, like the evictions: the timeout has passed already
		wg.Go(func() { n.forceDelete(ctx, t, pod, grace) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	timer := time.NewTimer(time.Duration(maxGrace)*time.Second + n.d.deleteMargin)
	defer timer.Stop()
	for {
		left, stuck := n.state()
		if left == 0 {
			n.d.emit(Event{Type: EventDrained, Node: n.node})
			return nil
		}
		if stuck == left {
			return n.failure(ctx, timedOut)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return n.failure(ctx, timedOut)
		case <-n.wake:
		}
	}
}

// forceDelete deletes a pod left at the timeout.
func (n *nodeDrain) forceDelete(ctx context.Context, t *podTrack, pod corev1.Pod, grace int) {
	err := n.call(t, func() error { return n.d.helper(ctx, grace).DeletePod(pod) })
	if err == nil {
		n.mu.Lock()
		t.failed = nil
		n.mu.Unlock()
		n.recordRemoved(t, pod)
		n.d.emit(Event{Type: EventDeleted, Node: n.node, Namespace: pod.Namespace, Pod: pod.Name,
			Message: "deleted after the drain timeout (force)"})
	}
	if n.settle(t) || err == nil {
		return
	}
	switch {
	case apierrors.IsNotFound(err):
		n.markGone(pod.UID)
	case ctx.Err() != nil:
	default:
		n.mu.Lock()
		t.failed = err
		n.mu.Unlock()
	}
}

// failure describes the pods still on the node; the error names the timeout
// only when it was reached.
func (n *nodeDrain) failure(ctx context.Context, timedOut bool) error {
	var ts []*podTrack
	n.mu.Lock()
	for _, t := range n.pods {
		if !t.isGone {
			ts = append(ts, t)
		}
	}
	n.mu.Unlock()
	if err := n.unreachable(ts, timedOut); err != nil {
		return err
	}
	// refresh the PDB statuses: the ones reported at the first refusal are old
	for _, t := range ts {
		n.mu.Lock()
		p := n.pdbNS[t.pod.Namespace]
		blocked := t.blocked != ""
		n.mu.Unlock()
		if blocked && p != nil && p.waitSynced(ctx, n.d.pdbs.syncTimeout) {
			st := statuses(PDBsForPod(&t.pod, p.list()))
			n.mu.Lock()
			t.pdbs = st
			n.mu.Unlock()
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	f := &PodEvictionFailure{Node: n.node}
	if timedOut {
		f.Timeout = n.d.opts.Timeout
	}
	for _, t := range ts {
		b := BlockedPod{Namespace: t.pod.Namespace, Name: t.pod.Name, PDBs: t.pdbs}
		switch {
		case t.failed != nil:
			b.Reason = "eviction failed: " + t.failed.Error()
		case (t.blocked == "" || t.lost) && t.lastErr != nil && !t.terminating && !t.removed:
			b.PDBs = nil // no budget answered last
			b.Reason = "not evicted: " + t.lastErr.Error()
		case t.terminating || t.removed:
			b.Reason = ReasonTerminating
			b.PDBs = nil
		case t.blocked != "":
			b.Reason = t.blocked
		default:
			b.Reason = ReasonNotEvicted
		}
		f.Pods = append(f.Pods, b)
	}
	sort.Slice(f.Pods, func(i, j int) bool {
		return f.Pods[i].Namespace+"/"+f.Pods[i].Name < f.Pods[j].Namespace+"/"+f.Pods[j].Name
	})
	return f
}

// unreachable is the error of a drain whose pods left on the node (ts)
// all met a lost connection at their last eviction (or delete): the API
// server never answered for them, so no PodDisruptionBudget can be named
// and --force is not the way on; nil when any of them was answered.
func (n *nodeDrain) unreachable(ts []*podTrack, timedOut bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	u := &EvictionUnreachable{Node: n.node}
	if timedOut {
		u.Timeout = n.d.opts.Timeout
	}
	for _, t := range ts {
		switch {
		case t.failed != nil && lostConnection(t.failed):
			u.Err = t.failed
		case t.failed == nil && t.lost && !t.terminating && !t.removed:
			u.Err = t.lastErr
		default:
			return nil
		}
		u.Pods = append(u.Pods, t.pod.Namespace+"/"+t.pod.Name)
	}
	if len(u.Pods) == 0 {
		return nil
	}
	sort.Strings(u.Pods)
	return u
}
