package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/makeroom"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// roomMaker is --make-room in a run: before a batch drains it surges the
// Deployments the batch would take below their Ready count or past their
// budgets (package makeroom says which and by how many), waits until
// enough of their pods are Ready on nodes outside the batch (tainted
// already, it takes none of the extra pods), and after the drain, once the
// replacements are Ready, puts spec.replicas (or the HPA's bounds) back.
//
// As scaleDownOne, every change is recorded before it is made, in the
// run's record (state.Surge): a run killed anywhere is followed by run or
// abort putting back exactly the values recorded, looking at the workload
// again first.
type roomMaker struct {
	cfg      *Config
	save     func(ctx context.Context) error
	logf     func(format string, args ...any)
	progress *progress
	// heldOff: every outdated node is held off while the batches run
	// (batchRun.heldOff), so none takes the extra pods.
	heldOff *bool
	// Interval is how often the waits and the Ready sampler look.
	interval time.Duration

	mu       sync.Mutex
	minReady map[string]int // by surgeKey, sampled while surges are up
	sampling context.CancelFunc
	sampled  chan struct{}
}

func surgeKey(s *state.Surge) string { return s.Namespace + "/" + s.Name }

// beforeDrain puts back what earlier batches (or an earlier run) left
// surged, then, with --make-room, surges what batch i needs and waits for
// it. names are the batch's nodes.
func (r *roomMaker) beforeDrain(ctx context.Context, i int, names []string) error {
	if err := r.restore(ctx, func(s *state.Surge) bool { return s.Batch != i+1 }, nil); err != nil {
		return err
	}
	if !r.cfg.MakeRoom {
		return nil
	}
	surges := r.batchSurges(i)
	if len(surges) == 0 {
		var err error
		if surges, err = r.intend(ctx, i, names); err != nil || len(surges) == 0 {
			return err
		}
	}
	for _, s := range surges {
		if err := r.scale(ctx, s, true); err != nil {
			return err
		}
		now := time.Now()
		s.State, s.SurgedAt = state.SurgeUp, &now
	}
	if err := r.save(ctx); err != nil {
		return err
	}
	r.startSampling(ctx, surges)
	excluded := sets.New(names...)
	for _, s := range surges {
		r.logf("%s: --make-room: %s scaled %d -> %d; waiting for %d Ready replicas outside the batch", batchLabel(r.cfg.Plan, i), s.Object(), s.Replicas, s.Replicas+s.Extra, s.Ready)
		if err := r.awaitReady(ctx, s, excluded, s.Ready, r.cfg.NodeReadyTimeout); err != nil {
			return fmt.Errorf("%s: --make-room: the extra replicas of %s are not Ready within %s (--node-ready-timeout): %w; run again to go on, or \"kubectl nodeupgrade abort\" to put every workload back", batchLabel(r.cfg.Plan, i), s.Object(), r.cfg.NodeReadyTimeout, err)
		}
		now := time.Now()
		s.ReadyAt = &now
	}
	return r.save(ctx)
}

// afterDrain waits until the replacements of what batch i evicted are
// Ready and puts back what the batch surged.
func (r *roomMaker) afterDrain(ctx context.Context, i int) error {
	batch := func(s *state.Surge) bool { return s.Batch == i+1 }
	return r.restore(ctx, batch, func(s *state.Surge) int32 { return s.Replicas + s.Extra })
}

// restoreAll puts back every surge the record says is not restored: the
// end of a run, and abort.
func (r *roomMaker) restoreAll(ctx context.Context) error {
	return r.restore(ctx, func(*state.Surge) bool { return true }, nil)
}

// batchSurges are the recorded surges of batch i not restored yet: an
// earlier attempt's, which this one carries on with.
func (r *roomMaker) batchSurges(i int) []*state.Surge {
	var out []*state.Surge
	for _, s := range r.cfg.Record.Surged() {
		if s.Batch == i+1 {
			out = append(out, s)
		}
	}
	return out
}

// intend works out batch i's surges on a snapshot taken now and records
// them, before any is made. A surge that does not fit stops the run
// before any change.
func (r *roomMaker) intend(ctx context.Context, i int, names []string) ([]*state.Surge, error) {
	snap, err := snapshot.Take(ctx, r.cfg.Client, nil)
	if err != nil {
		return nil, err
	}
	hpas, err := r.cfg.Client.AutoscalingV2().HorizontalPodAutoscalers("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("--make-room: error when listing HorizontalPodAutoscalers: %w", err)
	}
	excluded := names
	if *r.heldOff {
		excluded = r.cfg.Plan.OutdatedNames()
	}
	b := makeroom.ForBatch(makeroom.Input{Cluster: &snap, HPAs: hpas.Items, Batch: names, Excluded: excluded, Number: i + 1})
	for _, u := range b.Untouched {
		r.logf("%s: %s", batchLabel(r.cfg.Plan, i), r.cfg.Color.Yellow(fmt.Sprintf("--make-room: %s %q not surged: %s", u.Kind, u.Namespace+"/"+u.Name, u.Reason)))
	}
	if !b.Fits() {
		return nil, fmt.Errorf("%s: --make-room: %s; add capacity, or run without --make-room", batchLabel(r.cfg.Plan, i), Unfit(b))
	}
	first := len(r.cfg.Record.MakeRoom)
	for _, s := range b.Surges {
		r.cfg.Record.MakeRoom = append(r.cfg.Record.MakeRoom, state.Surge{Surge: s, Batch: i + 1, State: state.SurgeIntended, MinReady: -1})
	}
	if err := r.save(ctx); err != nil {
		return nil, err
	}
	var out []*state.Surge
	for j := first; j < len(r.cfg.Record.MakeRoom); j++ {
		out = append(out, &r.cfg.Record.MakeRoom[j])
	}
	return out, nil
}

// Unfit names the surges of b that do not fit and what they miss.
func Unfit(b makeroom.Batch) string {
	var parts []string
	for _, s := range b.Surges {
		if s.Missing != "" {
			parts = append(parts, fmt.Sprintf("%d extra replicas of %s fit on no node that stays (missing: %s)", s.Extra, s.Object(), s.Missing))
		}
	}
	return strings.Join(parts, "; ")
}

// restore puts back the recorded surges which, once each has wait(s)
// Ready replicas (nil: as many as before the surge, so that the scale-down,
// which removes pods not Ready first, leaves it no lower than it was).
func (r *roomMaker) restore(ctx context.Context, which func(*state.Surge) bool, wait func(*state.Surge) int32) error {
	var left []*state.Surge
	for _, s := range r.cfg.Record.Surged() {
		if which(s) {
			left = append(left, s)
		}
	}
	if len(left) == 0 {
		return nil
	}
	for _, s := range left {
		want := s.Ready
		if wait != nil {
			want = int(wait(s))
		}
		if err := r.awaitReady(ctx, s, nil, want, r.cfg.RecoverTimeout); err != nil {
			return fmt.Errorf("--make-room: %s has not %d Ready replicas within %s (--drain-timeout) to be scaled back: %w; run again, or \"kubectl nodeupgrade abort\"", s.Object(), want, r.cfg.RecoverTimeout, err)
		}
	}
	r.stopSampling()
	for _, s := range left {
		if err := r.scale(ctx, s, false); err != nil {
			return err
		}
		now := time.Now()
		s.State, s.RestoredAt = state.SurgeRestored, &now
		r.mu.Lock()
		if m, ok := r.minReady[surgeKey(s)]; ok && (s.MinReady < 0 || m < s.MinReady) {
			s.MinReady = m
		}
		delete(r.minReady, surgeKey(s))
		r.mu.Unlock()
		r.logf("--make-room: %s back to %s", s.Object(), valuesText(s))
	}
	return r.save(ctx)
}

// putBackText says which surges restore put back, and to what.
func putBackText(surges []*state.Surge) string {
	parts := make([]string, 0, len(surges))
	for _, s := range surges {
		part := fmt.Sprintf("%s back to %s", s.Object(), valuesText(s))
		if s.Note != "" {
			part += " (" + s.Note + ")"
		}
		parts = append(parts, part)
	}
	return "--make-room's surges put back: " + strings.Join(parts, "; ")
}

func valuesText(s *state.Surge) string {
	if s.HPA != nil {
		return fmt.Sprintf("%d replicas, HorizontalPodAutoscaler %q minReplicas %d, maxReplicas %d", s.Replicas, s.HPA.Name, s.HPA.MinReplicas, s.HPA.MaxReplicas)
	}
	return fmt.Sprintf("%d replicas", s.Replicas)
}

// scale sets s's workload to its surged values (up) or back to those
// recorded before, the HPA's bounds first. Back, spec.replicas is set
// only where it is still between the value before and the run's: someone
// else's change since is left, and noted.
func (r *roomMaker) scale(ctx context.Context, s *state.Surge, up bool) error {
	want := s.Replicas
	if up {
		want += s.Extra
	}
	if h := s.HPA; h != nil {
		lo, hi := h.MinReplicas, h.MaxReplicas
		if up {
			lo, hi = max(lo, want), max(hi, want)
		}
		patch := fmt.Sprintf(`{"spec":{"minReplicas":%d,"maxReplicas":%d}}`, lo, hi)
		if _, err := r.cfg.Client.AutoscalingV2().HorizontalPodAutoscalers(s.Namespace).Patch(ctx, h.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("--make-room: error when setting the bounds of HorizontalPodAutoscaler %q: %w", s.Namespace+"/"+h.Name, err)
		}
	}
	deps := r.cfg.Client.AppsV1().Deployments(s.Namespace)
	d, err := deps.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("--make-room: error when reading %s: %w", s.Object(), err)
	}
	now := ptrOr(d.Spec.Replicas, 1)
	if now == want {
		return nil
	}
	// Between the two values the count is the run's: an HPA put back to
	// its bounds may have lowered it to its maxReplicas already.
	if !up && (now < s.Replicas || now > s.Replicas+s.Extra) {
		s.Note = fmt.Sprintf("spec.replicas was %d when restored, outside the run's %d..%d: left as someone else set it", now, s.Replicas, s.Replicas+s.Extra)
		r.logf("%s", r.cfg.Color.Yellow("--make-room: "+s.Object()+": "+s.Note))
		return nil
	}
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, want)
	if _, err := deps.Patch(ctx, s.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("--make-room: error when scaling %s to %d: %w", s.Object(), want, err)
	}
	return nil
}

// awaitReady waits until s's Deployment has at least want Ready pods on
// nodes not excluded, up to timeout.
func (r *roomMaker) awaitReady(ctx context.Context, s *state.Surge, excluded sets.Set[string], want int, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		n, err := r.readyPods(wctx, s.Namespace, s.Name, excluded)
		if err == nil && n >= want {
			return nil
		}
		r.progress.waitingFor(fmt.Sprintf("%d Ready replicas of %s (%d now)", want, s.Object(), n))
		if werr := transport.Sleep(wctx, r.interval); werr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errors.Join(werr, err)
		}
	}
}

// readyPods counts the Ready pods of s's Deployment, not terminating, on
// nodes not excluded.
func (r *roomMaker) readyPods(ctx context.Context, namespace, name string, excluded sets.Set[string]) (int, error) {
	d, err := r.cfg.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return 0, err
	}
	pods, err := r.cfg.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podutils.IsPodReady(p) && !excluded.Has(p.Spec.NodeName) {
			n++
		}
	}
	return n, nil
}

// startSampling samples, every interval until the surges are restored,
// the Ready replicas of surges, for the record's MinReady.
func (r *roomMaker) startSampling(ctx context.Context, surges []*state.Surge) {
	r.stopSampling()
	watched := make([]string, len(surges))
	for i, s := range surges {
		watched[i] = surgeKey(s)
	}
	sctx, cancel := context.WithCancel(ctx)
	r.sampling, r.sampled = cancel, make(chan struct{})
	go func() {
		defer close(r.sampled)
		for transport.Sleep(sctx, r.interval) == nil {
			for _, key := range watched {
				ns, name, _ := strings.Cut(key, "/")
				if n, err := r.readyPods(sctx, ns, name, nil); err == nil {
					r.mu.Lock()
					if m, ok := r.minReady[key]; !ok || n < m {
						r.minReady[key] = n
					}
					r.mu.Unlock()
				}
			}
		}
	}()
}

func (r *roomMaker) stopSampling() {
	if r.sampling == nil {
		return
	}
	r.sampling()
	<-r.sampled
	r.sampling = nil
}
