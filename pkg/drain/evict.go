package drain

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// errKind classifies an eviction or delete error.
type errKind int

const (
	errFatal errKind = iota
	errGone
	errBlocked
	errBlockedMulti
	errTransient
)

func classify(err error) errKind {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err):
		return errGone
	case apierrors.IsTooManyRequests(err) && !throttled(err):
		return errBlocked
	case errors.As(err, &status) && status.Status().Code == 500 &&
		strings.Contains(status.Status().Message, "more than one PodDisruptionBudget"):
		return errBlockedMulti
	case apierrors.IsForbidden(err) && errors.As(err, &status) && status.Status().Details != nil &&
		status.Status().Details.Kind == "poddisruptionbudget":
		// "disruptions allowed is negative", "DisruptedPods map too big": the
		// disruption controller clears both
		return errBlocked
	case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// the namespace controller deletes the pod; keep waiting for it
		return errTransient
	case apierrors.IsTooManyRequests(err), // throttled: the API server is busy, no PDB is in the way
		apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err),
		lostConnection(err):
		return errTransient
	}
	return errFatal
}

// lostConnection says whether err is a request the API server never
// answered because its connection was lost: reset, closed under it (an
// HTTP/2 stream reset or GOAWAY among them), refused, or retried by the
// transport until --request-retry-timeout.
func lostConnection(err error) bool {
	var exhausted *transport.RetriesExhausted
	return utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		transport.LostConnection(err) || errors.As(err, &exhausted)
}

// evict posts pod's eviction as kubectl's drain does (policy/v1; the grace
// period unless -1), with client-go's own retries off: client-go would
// sleep through each 429's Retry-After inside the call and send it again,
// ten times, while the pod holds its PDB's turn. remove retries instead: a
// PDB's refusal as soon as the PDB watch shows the budget allowing it (the
// refusal while the disruption controller has not seen a PDB's latest
// spec asks for 10 s), a throttled eviction after its Retry-After.
func (d *Drainer) evict(ctx context.Context, pod corev1.Pod, grace int) error {
	opts := metav1.DeleteOptions{}
	if grace >= 0 {
		g := int64(grace)
		opts.GracePeriodSeconds = &g
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}, DeleteOptions: &opts}
	rc, ok := d.client.PolicyV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		// a fake clientset: no HTTP, no retries to turn off
		return d.client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, eviction)
	}
	// the path of the typed Evict: pods' eviction is served under /api/v1
	return rc.Post().AbsPath("/api/v1").Namespace(pod.Namespace).Resource("pods").Name(pod.Name).
		SubResource("eviction").MaxRetries(0).Body(eviction).Do(ctx).Error()
}

// throttled says whether a 429 is the API server's own limit (API Priority
// and Fairness, --max-requests-inflight) rather than a PDB refusal: it is
// retried after its Retry-After, and reporting it as a PDB block would name
// a budget that is not in the way. The eviction's refusals carry the
// DisruptionBudget cause, and its message on servers that gave none.
func throttled(err error) bool {
	if apierrors.HasStatusCause(err, policyv1.DisruptionBudgetCause) {
		return false
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status) || !strings.Contains(status.Status().Message, "disruption budget")
}

// removal is one pod's way off the node: its attempts and the refusals
// they met.
type removal struct {
	n         *nodeDrain
	t         *podTrack
	pod       corev1.Pod // as the watch last showed it
	useDelete bool       // delete rather than evict: asked for, or the pod has finished
	// pdbs is the view of the namespace's budgets; nil for a pod of a later
	// round until a budget refuses it.
	pdbs     *nsPDBs
	reported bool // the Blocked event was emitted
}

// remove evicts (or deletes) one pod, retrying refusals until the pod is
// gone, the eviction is accepted, or ctx ends. drainCtx is the drain's,
// which outlives ctx when the removers stop at the timeout.
func (n *nodeDrain) remove(ctx, drainCtx context.Context, t *podTrack) {
	r := &removal{n: n, t: t}
	if !r.refresh() {
		n.confirmLeaving(ctx, &r.pod)
		return
	}
	r.useDelete = n.d.opts.DeleteInsteadOfEvict || pods.Finished(&r.pod)
	if !r.useDelete && !r.startEviction(ctx) {
		return
	}
	for {
		var changes <-chan struct{}
		if r.pdbs != nil {
			changes = r.pdbs.changes()
		}
		done, err := r.attempt(ctx)
		if done {
			return
		}
		delay, changes, retry := r.retryAfter(ctx, drainCtx, err, changes)
		if !retry || !n.waitRetry(ctx, t, r.pdbs, changes, delay) {
			return
		}
		// the watch keeps the pod fresh for the next attempt
		if !r.refresh() {
			return
		}
	}
}

// confirmLeaving settles a pod already terminating: the watch sees it
// leave, unless it left before the watch started, which one Get settles.
func (n *nodeDrain) confirmLeaving(ctx context.Context, pod *corev1.Pod) {
	if n.inStore(pod) {
		return
	}
	p, err := n.d.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && p.UID != pod.UID) {
		n.markGone(pod.UID)
	}
}

// refresh takes the pod as the watch last showed it; it reports false once
// the pod is terminating, as the watch then sees it leave.
func (r *removal) refresh() bool {
	r.n.mu.Lock()
	defer r.n.mu.Unlock()
	r.pod = r.t.pod
	return !r.t.terminating
}

// startEviction asks Options.Hold, when set, and announces the eviction; it
// reports false when the pod is not to be evicted now.
func (r *removal) startEviction(ctx context.Context) bool {
	n := r.n
	if n.d.opts.Hold != nil {
		if !n.hold(ctx, r.t, &r.pod) {
			return false
		}
		if !r.refresh() {
			return false // someone else deleted it meanwhile: the watch sees it leave
		}
	}
	n.d.emit(Event{Type: EventEvicting, Node: n.node, Namespace: r.pod.Namespace, Pod: r.pod.Name})
	r.pdbs = n.viewOf(r.pod.Namespace)
	return true
}

// attempt evicts or deletes the pod once, in its budget's turn. It reports
// done when nothing is left to retry: the pod is gone or accepted, or ctx
// ended; else the attempt's error.
func (r *removal) attempt(ctx context.Context) (done bool, err error) {
	n, d := r.n, r.n.d
	key := ""
	if !r.useDelete {
		key = budgetOf(r.pdbs, &r.pod)
	}
	release, ok := d.turns.take(ctx, r.t.gone, key)
	if !ok {
		return true, nil
	}
	pod, grace := r.pod, d.graceFor(&r.pod)
	err = n.call(r.t, func() error {
		if r.useDelete {
			return d.helper(ctx, grace).DeletePod(pod)
		}
		return d.evict(ctx, pod, grace)
	})
	release()
	if err == nil {
		n.recordRemoved(r.t, pod)
		ev := Event{Type: EventEvicted, Node: n.node, Namespace: pod.Namespace, Pod: pod.Name}
		if r.useDelete {
			ev.Type = EventDeleted
		}
		d.emit(ev)
	}
	gone := n.settle(r.t)
	return gone || err == nil || ctx.Err() != nil, err
}

// retryAfter records a failed attempt's error; it returns how long to wait
// before the next one and the budget changes that may cut the wait short,
// or retry false when there will be none.
func (r *removal) retryAfter(ctx, drainCtx context.Context, err error, changes <-chan struct{}) (delay time.Duration, _ <-chan struct{}, retry bool) {
	n := r.n
	switch kind := classify(err); kind {
	case errGone:
		n.markGone(r.pod.UID)
		return 0, nil, false
	case errFatal:
		n.mu.Lock()
		r.t.failed, r.t.lost = err, false
		n.mu.Unlock()
		n.poke()
		return 0, nil, false
	case errTransient:
		n.mu.Lock()
		r.t.lastErr, r.t.lost = err, lostConnection(err)
		n.mu.Unlock()
		delay = n.d.errorRetryInterval
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			delay = time.Duration(s) * time.Second // the server's Retry-After
		}
		// no PDB is in the way: a change of one must not cut the wait
		// short, as every eviction in the namespace makes one
		return delay, nil, true
	case errBlocked, errBlockedMulti:
		return r.blocked(ctx, drainCtx, err, kind, changes)
	}
	return n.d.errorRetryInterval, changes, true
}

// blocked records a budget's refusal, reported once; the retry waits for a
// change of the namespace's budgets, or retryInterval.
func (r *removal) blocked(ctx, drainCtx context.Context, err error, kind errKind, changes <-chan struct{}) (time.Duration, <-chan struct{}, bool) {
	n, d := r.n, r.n.d
	delay := d.retryInterval
	if r.pdbs == nil {
		r.pdbs = n.pdbsFor(ctx, r.pod.Namespace)
	}
	n.mu.Lock()
	r.t.blocked, r.t.lost = ReasonPDB, false // the API server answered
	n.mu.Unlock()
	// the drain's own ctx, not the worker's: a pod refused just before
	// the timeout is still reported, with its PDBs
	synced := r.pdbs.waitSynced(drainCtx, d.pdbs.syncTimeout)
	if drainCtx.Err() != nil {
		return 0, nil, false
	}
	first := changes == nil
	if first {
		// taken before reading the store, so a change after the read
		// still wakes the retry
		changes = r.pdbs.changes()
	}
	var matching []policyv1.PodDisruptionBudget
	if synced {
		matching = PDBsForPod(&r.pod, r.pdbs.list())
	}
	// the budget may have moved between the refusal and the watch's first
	// list: then retry at once (only this once, so a stale status cannot
	// make a busy loop)
	if first && slices.ContainsFunc(matching, func(p policyv1.PodDisruptionBudget) bool { return allows(&p) }) {
		delay = 0
	}
	r.recordBlocked(err, kind, matching)
	return delay, changes, true
}

// recordBlocked notes the refusal and the budgets' statuses for the
// failure report, and emits the Blocked event at the first refusal.
func (r *removal) recordBlocked(err error, kind errKind, matching []policyv1.PodDisruptionBudget) {
	reason := ReasonPDB
	if kind == errBlockedMulti {
		reason = ReasonMultiplePDBs
	}
	st := statuses(matching)
	r.n.mu.Lock()
	r.t.blocked, r.t.pdbs = reason, st
	r.n.mu.Unlock()
	if !r.reported {
		r.reported = true
		r.n.d.emit(Event{Type: EventBlocked, Node: r.n.node, Namespace: r.pod.Namespace, Pod: r.pod.Name,
			PDBs: st, Message: blockMessage(err)})
	}
}

// hold asks Options.Hold whether the pod may be evicted now, with a
// context that also ends when the pod leaves on its own.
func (n *nodeDrain) hold(ctx context.Context, t *podTrack, pod *corev1.Pod) bool {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-t.gone:
			cancel()
		case <-hctx.Done():
		}
	}()
	return n.d.opts.Hold(hctx, pod) && hctx.Err() == nil
}

// waitRetry waits before a retry until the PDB watch shows the pod's budget
// letting it through, or the safety-net timer; it reports false when the
// retry is moot. changes must be taken before the attempt that failed; nil
// waits for the timer alone.
func (n *nodeDrain) waitRetry(ctx context.Context, t *podTrack, pdbs *nsPDBs, changes <-chan struct{}, base time.Duration) bool {
	if base <= 0 {
		return true
	}
	timer := time.NewTimer(wait.Jitter(base, 1.0))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.gone:
			return false
		case <-timer.C:
			return true
		case <-changes:
		}
		if pdbs == nil || !pdbs.synced() {
			return true
		}
		// taken before reading the view, so a change after the read wakes
		// the next round
		changes = pdbs.changes()
		n.mu.Lock()
		pod := t.pod
		n.mu.Unlock()
		if mayEvict(pdbs, &pod) {
			return true
		}
		// a change of another budget of the namespace, or one that still
		// allows nothing: no request, wait for the next
	}
}

// blockMessage prefers the apiserver's cause ("The disruption budget web
// needs 2 healthy pods and has 2 currently") over its generic message.
func blockMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if det := status.Status().Details; det != nil {
			for _, c := range det.Causes {
				if c.Type == policyv1.DisruptionBudgetCause && c.Message != "" {
					return c.Message
				}
			}
		}
		return status.Status().Message
	}
	return err.Error()
}
