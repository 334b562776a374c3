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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
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

// DrainNodes drains nodes in parallel, one goroutine each. The results are in
// the order of nodes; the error tells the per-node errors on one line (a
// *NodeErrors where there are several).
func (d *Drainer) DrainNodes(ctx context.Context, nodes []string) ([]Result, error) {
	results := make([]Result, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Go(func() {
			results[i], errs[i] = d.DrainNode(ctx, node)
		})
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
	n := newNodeDrain(d, node)
	defer n.close()
	if err := n.startPodWatch(ctx); err != nil {
		return res, err
	}
	n.watchBudgets(ctx, evict)
	err = n.run(ctx, evict)
	res.Evicted = n.evictedPods()
	return res, err
}
