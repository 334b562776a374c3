// Package drain evicts the pods of nodes, honouring PodDisruptionBudgets,
// the way EKS managed node groups do (PodEvictionFailure after a timeout, or
// deletion with force). Pod selection and the evict/delete calls come from
// k8s.io/kubectl/pkg/drain; waiting and retrying are done here with watches,
// so a drain costs a few requests per pod even on large clusters. Every pod
// of the nodes being drained is evicted at once, except that evictions under
// one PodDisruptionBudget go one after another, and a refused pod is tried
// again when the watch shows its budget allowing a disruption.
package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	kdrain "k8s.io/kubectl/pkg/drain"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// EventType says what happened to a pod or node.
type EventType string

const (
	EventEvicting EventType = "Evicting" // eviction requested
	EventEvicted  EventType = "Evicted"  // pod eviction accepted
	EventDeleted  EventType = "Deleted"  // pod deleted (Force after the timeout, DeleteInsteadOfEvict, or a finished pod)
	EventBlocked  EventType = "Blocked"  // eviction refused; PDBs filled; once per pod
	EventGone     EventType = "Gone"     // pod object gone from the node
	EventDrained  EventType = "Drained"  // node has no evictable pods left
)

// Event is a progress report; Namespace and Pod are empty for node events.
type Event struct {
	Type      EventType
	Node      string
	Namespace string
	Pod       string
	PDBs      []PDBStatus
	Message   string
}

// Options control a Drainer.
type Options struct {
	Timeout              time.Duration // per node; 0 = no limit (the caller's ctx still applies)
	Force                bool          // bare pods allowed; at the timeout the remaining pods are deleted instead of failing
	DeleteEmptyDirData   bool
	DeleteInsteadOfEvict bool          // delete pods, do not evict (PDBs not honoured)
	DeleteAtTimeout      bool          // at the timeout (or when no eviction can progress) the remaining pods are deleted; Force does this and more
	GracePeriodSeconds   int           // -1 = the pod's own terminationGracePeriodSeconds
	MaxGracePeriod       time.Duration // 0 = no cap; caps the grace period used on deletes and evictions
	OnEvent              func(Event)   // may be called from several goroutines at once; nil = ignore
	// Pods, if set, is a cache of the cluster's pods the caller already
	// keeps; a drain follows its pods there instead of listing and watching
	// each node, and lists a node again only when the cache shows a new pod
	// on it. nil: a list and a watch per node, as kubectl drain.
	Pods PodSource
	// Hold, if set, is asked before a pod's first eviction and may wait
	// for what the caller needs first (its workload back from an earlier
	// batch); the eviction goes out when it returns true, and not at all
	// when it returns false (ctx ended: the drain is over or the pod
	// gone). Deletes are not held.
	Hold func(ctx context.Context, pod *corev1.Pod) bool
}

// PodSource is a pod cache kept by the caller: a shared informer of the
// pods of all namespaces, started and synced, whose store is keyed
// namespace/name.
type PodSource interface {
	Informer() cache.SharedIndexInformer
	// PodsOn returns the cached pods bound to node.
	PodsOn(node string) []*corev1.Pod
}

// Result is what a drain removed from one node.
type Result struct {
	Node    string
	Evicted []corev1.Pod // pods evicted or deleted (their state just before), so the caller can wait for their owners to recover
}

// Drainer drains nodes. It is safe for concurrent use.
type Drainer struct {
	client kubernetes.Interface
	opts   Options

	// retryInterval is the safety net for refused evictions, jittered up to
	// twice its value: a refused pod is retried when the PDB watch shows its
	// budget allowing a disruption, so this matters only when PDBs cannot be
	// watched (RBAC) or a refusal names no budget the watch knows.
	retryInterval time.Duration
	// errorRetryInterval spaces retries after transient API errors.
	errorRetryInterval time.Duration
	// deleteMargin is added to the grace period when waiting for pods
	// deleted at the timeout.
	deleteMargin time.Duration

	pdbs  *pdbWatchers
	turns turns
}

// New returns a Drainer using client.
func New(client kubernetes.Interface, opts Options) *Drainer {
	return &Drainer{
		client:             client,
		opts:               opts,
		retryInterval:      10 * time.Second,
		errorRetryInterval: 2 * time.Second,
		deleteMargin:       30 * time.Second,
		pdbs:               &pdbWatchers{client: client, syncTimeout: 10 * time.Second},
	}
}

func (d *Drainer) emit(ev Event) {
	if d.opts.OnEvent != nil {
		d.opts.OnEvent(ev)
	}
}

// helper returns a kubectl drain Helper for one call; Helper has no
// constructor and carries its context, so it is built per use.
func (d *Drainer) helper(ctx context.Context, grace int) *kdrain.Helper {
	return &kdrain.Helper{
		Ctx:                ctx,
		Client:             d.client,
		GracePeriodSeconds: grace,
		// ChunkSize 0: a node holds at most a few hundred pods, and an
		// unpaginated list can be served from the apiserver's watch cache
		ChunkSize: 0,
	}
}

// PodsToEvict returns the pods a drain of node would evict (including pods
// already terminating, which it only waits for), and the ones it would refuse
// without Force / DeleteEmptyDirData. It changes nothing.
func (d *Drainer) PodsToEvict(ctx context.Context, node string) (evict []corev1.Pod, refused []BlockedPod, err error) {
	h := d.helper(ctx, -1)
	// kubectl's filters run with the permissive settings so every pod it could
	// ever remove reaches the filter below, which applies ours pod by pod:
	// kubectl only reports refusals as one aggregated message. DaemonSet pods
	// and mirror pods are skipped by kubectl's own filters before that.
	h.Force = true
	h.DeleteEmptyDirData = true
	h.IgnoreAllDaemonSets = true
	h.AdditionalFilters = []kdrain.PodFilter{func(pod corev1.Pod) kdrain.PodDeleteStatus {
		if pod.Spec.NodeName != node {
			// the field selector already did this on a real apiserver
			return kdrain.MakePodDeleteStatusSkip()
		}
		if reason := d.refusal(&pod); reason != "" {
			refused = append(refused, BlockedPod{Namespace: pod.Namespace, Name: pod.Name, Reason: reason})
			return kdrain.MakePodDeleteStatusSkip()
		}
		return kdrain.MakePodDeleteStatusOkay()
	}}
	list, errs := h.GetPodsForDeletion(node)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("select pods of node %q: %w", node, joinNodeErrors(make([]string, len(errs)), errs))
	}
	sort.Slice(refused, func(i, j int) bool {
		return refused[i].Namespace+"/"+refused[i].Name < refused[j].Namespace+"/"+refused[j].Name
	})
	return list.Pods(), refused, nil
}

// refusal says why the drain refuses pod under the Options, or "".
func (d *Drainer) refusal(pod *corev1.Pod) string {
	if pods.Finished(pod) || pod.DeletionTimestamp != nil {
		// finished pods disrupt nothing, terminating ones are going anyway
		return ""
	}
	var reasons []string
	ref := metav1.GetControllerOf(pod)
	if !d.opts.DeleteEmptyDirData {
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir != nil {
				reasons = append(reasons, ReasonEmptyDir)
				break
			}
		}
	}
	if !d.opts.Force {
		switch {
		case ref == nil:
			reasons = append(reasons, ReasonBare)
		case ref.Kind == "DaemonSet":
			// kubectl's DaemonSet filter lets it through only when its
			// DaemonSet is gone, and only with --force
			reasons = append(reasons, fmt.Sprintf("managed by DaemonSet %q which no longer exists", ref.Name))
		}
	}
	return strings.Join(reasons, " and ")
}

// graceFor returns the grace period to send for pod (-1 = the pod's own),
// applying MaxGracePeriod.
func (d *Drainer) graceFor(pod *corev1.Pod) int {
	g := d.opts.GracePeriodSeconds
	if d.opts.MaxGracePeriod <= 0 {
		return g
	}
	limit := int(d.opts.MaxGracePeriod / time.Second)
	if effectiveGrace(pod, g) > limit {
		return limit
	}
	return g
}

func effectiveGrace(pod *corev1.Pod, g int) int {
	if g >= 0 {
		return g
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return int(*pod.Spec.TerminationGracePeriodSeconds)
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// DrainNodes drains nodes in parallel, one goroutine each. The results are in
// the order of nodes; the error tells the per-node errors on one line (a
// *NodeErrors where there are several).
func (d *Drainer) DrainNodes(ctx context.Context, nodes []string) ([]Result, error) {
	results := make([]Result, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = d.DrainNode(ctx, node)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		// one cancellation, not one per node
		for i, err := range errs {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				errs[i] = nil
			}
		}
		return results, joinNodeErrors(append([]string{""}, nodes...), append([]error{ctx.Err()}, errs...))
	}
	return results, joinNodeErrors(nodes, errs)
}

// DrainNode evicts every evictable pod of node and waits until they are gone,
// for at most Options.Timeout. It does not cordon.
func (d *Drainer) DrainNode(ctx context.Context, node string) (Result, error) {
	res := Result{Node: node}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	// refuse before touching anything, as kubectl drain does
	evict, err := d.evictableOrRefuse(ctx, node, 0)
	if err != nil {
		return res, err
	}
	n := newNodeDrain(ctx, d, node)
	defer n.close()
	if err := n.startPodWatch(ctx); err != nil {
		return res, err
	}
	n.watchBudgets(ctx, evict)
	err = n.run(ctx, evict)
	res.Evicted = n.evictedPods()
	return res, err
}

// nodeDrain is the state of one DrainNode call.
type nodeDrain struct {
	d    *Drainer
	node string
	ctx  context.Context // DrainNode's

	informer  cache.SharedIndexInformer
	stopWatch context.CancelFunc
	watchDone chan struct{}
	handler   cache.ResourceEventHandlerRegistration // on Options.Pods' informer

	wake chan struct{} // pokes the main loop; buffered 1

	mu      sync.Mutex
	pods    map[types.UID]*podTrack
	evicted []corev1.Pod
	pdbNS   map[string]*nsPDBs
}

type podTrack struct {
	pod  corev1.Pod // as listed, or as last seen by the watch
	gone chan struct{}

	// guarded by nodeDrain.mu
	isGone      bool
	goneClaimed bool // a Gone event is being or has been emitted
	inFlight    bool // an evict/delete call is running
	gonePending bool // the pod left during that call
	terminating bool
	removed     bool // our eviction or delete was accepted
	blocked     string
	pdbs        []PDBStatus
	failed      error // nothing more will be tried
	lastErr     error // a transient error being retried
}

// evictableOrRefuse lists the pods to evict from node, or fails when ctx
// ends, the list fails, or the drain refuses a pod; timeout, the drain's if
// it has begun, goes into the failure.
func (d *Drainer) evictableOrRefuse(ctx context.Context, node string, timeout time.Duration) ([]corev1.Pod, error) {
	evict, refused, err := d.PodsToEvict(ctx, node)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if len(refused) > 0 {
		return nil, &PodEvictionFailure{Node: node, Timeout: timeout, Pods: refused}
	}
	return evict, nil
}

func newNodeDrain(ctx context.Context, d *Drainer, node string) *nodeDrain {
	return &nodeDrain{
		ctx:   ctx,
		d:     d,
		node:  node,
		wake:  make(chan struct{}, 1),
		pods:  map[types.UID]*podTrack{},
		pdbNS: map[string]*nsPDBs{},
	}
}

// watchBudgets takes the PDB views of the namespaces pods will be evicted
// from, and waits a bounded time for them to be listed: each pod's budget
// decides whose turn it is.
func (n *nodeDrain) watchBudgets(ctx context.Context, evicting []corev1.Pod) {
	if n.d.opts.DeleteInsteadOfEvict {
		return
	}
	var views []*nsPDBs
	seen := map[string]bool{}
	for i := range evicting {
		p := &evicting[i]
		if seen[p.Namespace] || pods.Finished(p) || p.DeletionTimestamp != nil {
			continue
		}
		seen[p.Namespace] = true
		views = append(views, n.pdbsFor(ctx, p.Namespace))
	}
	for _, v := range views {
		v.waitSynced(ctx, n.d.pdbs.syncTimeout)
	}
}

// budgetOf returns the key of the one PDB selecting pod, or "" when the
// view is not listed or none or several do (the eviction API refuses pods
// under several at once: nothing to take turns for).
func budgetOf(pdbs *nsPDBs, pod *corev1.Pod) string {
	if pdbs == nil || !pdbs.synced() {
		return ""
	}
	matching := PDBsForPod(pod, pdbs.list())
	if len(matching) != 1 {
		return ""
	}
	return matching[0].Namespace + "/" + matching[0].Name
}

// mayEvict reports whether the PDBs the view lists may let pod's eviction
// through: none or one selecting it, whose status is current and allows a
// disruption.
func mayEvict(pdbs *nsPDBs, pod *corev1.Pod) bool {
	matching := PDBsForPod(pod, pdbs.list())
	switch len(matching) {
	case 0:
		return true
	case 1:
		return allows(&matching[0])
	}
	return false
}

// allows says whether p's status lets one more pod go: one the disruption
// controller computed for p's latest spec, with a disruption to spare.
func allows(p *policyv1.PodDisruptionBudget) bool {
	return p.Status.ObservedGeneration >= p.Generation && p.Status.DisruptionsAllowed > 0
}

func (n *nodeDrain) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// startPodWatch follows the node's pods: in Options.Pods' informer, or
// else with an informer of the node's own (a list, then a watch; it
// re-lists by itself when the watch expires).
func (n *nodeDrain) startPodWatch(ctx context.Context) error {
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.observe(obj) },
		UpdateFunc: func(_, obj any) { n.observe(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				n.markGone(pod.UID)
			}
		},
	}
	if src := n.d.opts.Pods; src != nil {
		n.informer = src.Informer()
		reg, err := n.informer.AddEventHandler(handler)
		if err != nil {
			return fmt.Errorf("watch pods of node %q: %w", n.node, err)
		}
		n.handler = reg
		return nil
	}
	sel := fields.OneTermEqualSelector("spec.nodeName", n.node).String()
	n.informer = coreinformers.NewFilteredPodInformer(n.d.client, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = sel })
	if _, err := n.informer.AddEventHandler(handler); err != nil {
		return fmt.Errorf("watch pods of node %q: %w", n.node, err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	n.stopWatch = cancel
	n.watchDone = make(chan struct{})
	go func() {
		defer close(n.watchDone)
		n.informer.RunWithContext(wctx)
	}()
	if !waitSynced(ctx, n.informer) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("watch pods of node %q: cache did not sync", n.node)
	}
	return nil
}

func (n *nodeDrain) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != n.node {
		return
	}
	n.mu.Lock()
	t := n.pods[pod.UID]
	if t != nil && !t.isGone {
		t.pod = *pod
		t.terminating = pod.DeletionTimestamp != nil
	}
	n.mu.Unlock()
	if t != nil {
		n.poke()
	}
}

// markGone records that the pod left. Its Gone event waits for an evict or
// delete call in flight, so callers see Evicted/Deleted before Gone, and
// every Gone before Drained.
func (n *nodeDrain) markGone(uid types.UID) {
	n.mu.Lock()
	t := n.pods[uid]
	if t == nil || t.goneClaimed {
		n.mu.Unlock()
		return
	}
	t.goneClaimed = true
	if t.inFlight {
		t.gonePending = true
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.finishGone(t)
}

func (n *nodeDrain) finishGone(t *podTrack) {
	n.d.emit(Event{Type: EventGone, Node: n.node, Namespace: t.pod.Namespace, Pod: t.pod.Name})
	n.mu.Lock()
	t.isGone = true
	close(t.gone)
	n.mu.Unlock()
	n.poke()
}

// call runs an evict or delete call for t; until settle, markGone holds the
// pod's Gone event back so the caller's own event comes first.
func (n *nodeDrain) call(t *podTrack, fn func() error) error {
	n.mu.Lock()
	t.inFlight = true
	n.mu.Unlock()
	return fn()
}

// settle ends what call began; it reports whether the pod is gone.
func (n *nodeDrain) settle(t *podTrack) bool {
	n.mu.Lock()
	t.inFlight = false
	pending := t.gonePending
	t.gonePending = false
	n.mu.Unlock()
	if pending {
		n.finishGone(t)
	}
	return pending
}

// inStore reports whether the watch still sees the pod with uid.
func (n *nodeDrain) inStore(pod *corev1.Pod) bool {
	obj, exists, err := n.informer.GetStore().GetByKey(pod.Namespace + "/" + pod.Name)
	if err != nil || !exists {
		return false
	}
	p, ok := obj.(*corev1.Pod)
	return ok && p.UID == pod.UID
}

func (n *nodeDrain) close() {
	if n.stopWatch != nil {
		n.stopWatch()
		<-n.watchDone
	}
	if n.handler != nil {
		_ = n.informer.RemoveEventHandler(n.handler)
	}
	n.mu.Lock()
	nss := make([]string, 0, len(n.pdbNS))
	for ns := range n.pdbNS {
		nss = append(nss, ns)
	}
	n.pdbNS = map[string]*nsPDBs{}
	n.mu.Unlock()
	for _, ns := range nss {
		n.d.pdbs.release(ns)
	}
}

// viewOf returns the PDB view the drain holds for ns, or nil.
func (n *nodeDrain) viewOf(ns string) *nsPDBs {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pdbNS[ns]
}

func (n *nodeDrain) pdbsFor(ctx context.Context, ns string) *nsPDBs {
	n.mu.Lock()
	p := n.pdbNS[ns]
	n.mu.Unlock()
	if p != nil {
		return p
	}
	p = n.d.pdbs.acquire(ctx, ns)
	n.mu.Lock()
	if q := n.pdbNS[ns]; q != nil {
		// another pod of this drain got there first; keep one reference
		n.mu.Unlock()
		n.d.pdbs.release(ns)
		return q
	}
	n.pdbNS[ns] = p
	n.mu.Unlock()
	return p
}

func (n *nodeDrain) evictedPods() []corev1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]corev1.Pod(nil), n.evicted...)
}

func (n *nodeDrain) recordRemoved(t *podTrack, pod corev1.Pod) {
	n.mu.Lock()
	if !t.removed {
		t.removed = true
		n.evicted = append(n.evicted, pod)
	}
	n.mu.Unlock()
}

// track adds pods not seen before; it returns the new ones.
func (n *nodeDrain) track(pods []corev1.Pod) []*podTrack {
	var added []*podTrack
	n.mu.Lock()
	for _, p := range pods {
		if _, ok := n.pods[p.UID]; ok {
			continue
		}
		t := &podTrack{pod: p, gone: make(chan struct{}), terminating: p.DeletionTimestamp != nil}
		n.pods[p.UID] = t
		added = append(added, t)
	}
	n.mu.Unlock()
	// a pod missing from the watch's store is not taken as gone here: the
	// store may lag the list as well as lead it; remove() settles it
	return added
}

// newPodsCached reports whether the node may hold pods the drain has not
// seen: always without Options.Pods, else when its cache shows one that is
// neither tracked, nor finished, nor a DaemonSet's or mirror pod (which the
// drain leaves).
func (n *nodeDrain) newPodsCached() bool {
	src := n.d.opts.Pods
	if src == nil {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range src.PodsOn(n.node) {
		if _, seen := n.pods[p.UID]; seen || pods.Finished(p) {
			continue
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
			continue
		}
		return true
	}
	return false
}

// state counts the tracked pods still on the node and those among them that
// nothing more will move (eviction failed for good).
func (n *nodeDrain) state() (left, stuck int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.pods {
		if t.isGone {
			continue
		}
		left++
		if t.failed != nil && !t.terminating {
			stuck++
		}
	}
	return left, stuck
}

// run removes pods and waits, in rounds: once the listed pods are gone the
// node is listed again, because a workload tolerating every taint lands back.
func (n *nodeDrain) run(ctx context.Context, pods []corev1.Pod) error {
	var deadline <-chan time.Time
	if n.d.opts.Timeout > 0 {
		timer := time.NewTimer(n.d.opts.Timeout)
		defer timer.Stop()
		deadline = timer.C
	}
	workers := n.startRemovers(ctx)
	defer workers.stop()
	added := n.track(pods)
	workers.start(added)
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
			workers.start(added)
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
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (n *nodeDrain) startRemovers(ctx context.Context) *removers {
	r := &removers{n: n}
	r.ctx, r.cancel = context.WithCancel(ctx)
	return r
}

func (r *removers) start(added []*podTrack) {
	for _, t := range added {
		r.wg.Go(func() { r.n.remove(r.ctx, t) })
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
		case t.blocked == "" && t.lastErr != nil && !t.terminating && !t.removed:
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
		utilnet.IsConnectionReset(err), utilnet.IsConnectionRefused(err), utilnet.IsProbableEOF(err),
		transport.LostConnection(err): // an HTTP/2 stream reset among them
		return errTransient
	}
	return errFatal
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
// gone, the eviction is accepted, or ctx ends.
func (n *nodeDrain) remove(ctx context.Context, t *podTrack) {
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
		delay, changes, retry := r.retryAfter(ctx, err, changes)
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
func (r *removal) retryAfter(ctx context.Context, err error, changes <-chan struct{}) (delay time.Duration, _ <-chan struct{}, retry bool) {
	n := r.n
	switch kind := classify(err); kind {
	case errGone:
		n.markGone(r.pod.UID)
		return 0, nil, false
	case errFatal:
		n.mu.Lock()
		r.t.failed = err
		n.mu.Unlock()
		n.poke()
		return 0, nil, false
	case errTransient:
		n.mu.Lock()
		r.t.lastErr = err
		n.mu.Unlock()
		delay = n.d.errorRetryInterval
		if s, ok := apierrors.SuggestsClientDelay(err); ok && s > 0 {
			delay = time.Duration(s) * time.Second // the server's Retry-After
		}
		// no PDB is in the way: a change of one must not cut the wait
		// short, as every eviction in the namespace makes one
		return delay, nil, true
	case errBlocked, errBlockedMulti:
		return r.blocked(ctx, err, kind, changes)
	}
	return n.d.errorRetryInterval, changes, true
}

// blocked records a budget's refusal, reported once; the retry waits for a
// change of the namespace's budgets, or retryInterval.
func (r *removal) blocked(ctx context.Context, err error, kind errKind, changes <-chan struct{}) (time.Duration, <-chan struct{}, bool) {
	n, d := r.n, r.n.d
	delay := d.retryInterval
	if r.pdbs == nil {
		r.pdbs = n.pdbsFor(ctx, r.pod.Namespace)
	}
	n.mu.Lock()
	r.t.blocked = ReasonPDB
	n.mu.Unlock()
	// the drain's own ctx, not the worker's: a pod refused just before
	// the timeout is still reported, with its PDBs
	synced := r.pdbs.waitSynced(n.ctx, d.pdbs.syncTimeout)
	if n.ctx.Err() != nil {
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

// waitSynced waits for the informer's first list: the informer closes a
// channel then, where cache.WaitForCacheSync would poll every 100ms.
func waitSynced(ctx context.Context, inf cache.SharedIndexInformer) bool {
	select {
	case <-inf.HasSyncedChecker().Done():
		return true
	case <-ctx.Done():
		return inf.HasSynced()
	}
}
