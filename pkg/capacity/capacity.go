// Package capacity estimates whether the pods a batch evicts fit on the
// nodes that stay: the same estimate for the plan (before anything changes)
// and the run (before each batch).
package capacity

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
)

// Room is the capacity estimate before a batch: do the pods it will evict
// fit on the nodes that stay schedulable? It is a simple, honest estimate,
// not the scheduler: requests against allocatable and the pod count, taints
// and tolerations, node selectors and required node affinity, and pods with
// persistent volumes kept in their current zone (zonal disks do not move).
type Room struct {
	Unplaced []*corev1.Pod
	// Placed says where each pod that fits would go, so a plan can carry
	// one batch's pods over into the estimate of the next.
	Placed []Placement
}

// Placement is one pod on the node the estimate found for it.
type Placement struct {
	Pod  *corev1.Pod
	Node string
}

// Fits reports whether every pod found a node.
func (r Room) Fits() bool { return len(r.Unplaced) == 0 }

func (r Room) String() string {
	names := make([]string, 0, len(r.Unplaced))
	for i, p := range r.Unplaced {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(r.Unplaced)-5))
			break
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		names = append(names, fmt.Sprintf("%q (%s)", p.Namespace+"/"+p.Name, requestsText(req)))
	}
	return "pods " + strings.Join(names, ", ") + " fit on no schedulable node"
}

// PodNames are the pods that do not fit, as namespace/name.
func (r Room) PodNames() []string {
	names := make([]string, 0, len(r.Unplaced))
	for _, p := range r.Unplaced {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return names
}

// requestsText names the resources a pod requests, leaving out those it
// does not request ("requests cpu 500m, memory 1Gi", "no requests").
func requestsText(req corev1.ResourceList) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(req)) {
		if q := req[name]; !q.IsZero() {
			parts = append(parts, string(name)+" "+q.String())
		}
	}
	if len(parts) == 0 {
		return "no requests"
	}
	return "requests " + strings.Join(parts, ", ")
}

// Estimate places toEvict, largest first, on candidate nodes (first fit).
// podsByNode gives the pods already running on each node; excluded nodes
// (being drained, or tainted for the upgrade) take nothing. It stays cheap on
// 5,000 nodes: only the resources the evicted pods request are counted, each
// node's free room is computed once, and nodes too full for the smallest pod
// are dropped for good.
func Estimate(toEvict []*corev1.Pod, nodes []*corev1.Node, podsByNode func(string) []*corev1.Pod, excluded sets.Set[string]) Room {
	t := NewTracker(nodes, podsByNode, toEvict)
	t.Exclude(excluded.UnsortedList()...)
	return t.Place(toEvict)
}

// Tracker is Estimate batch after batch on one snapshot, as a plan checks a
// whole run: each node's free room is computed once and then only lowered
// by the pods placed on it, so the work of a batch is its own pods against
// the nodes they are tried on, not every pod of the cluster again.
type Tracker struct {
	names      []corev1.ResourceName
	floor      []int64 // no pod to place asks less: a node with less is dropped
	candidates []*candidate
	zoneOf     map[string]string
	podsByNode func(string) []*corev1.Pod
	excluded   sets.Set[string]
}

type candidate struct {
	node *corev1.Node
	free []int64 // per names, then the pod count; nil until first needed
}

// NewTracker tracks the room of nodes, whose running pods podsByNode gives
// (read once per node, the first time the node is tried), for placing any
// of pods: their requested resources are the ones counted.
func NewTracker(nodes []*corev1.Node, podsByNode func(string) []*corev1.Pod, pods []*corev1.Pod) *Tracker {
	t := &Tracker{names: requestedResources(pods), zoneOf: make(map[string]string, len(nodes)), podsByNode: podsByNode, excluded: sets.New[string]()}
	t.floor = make([]int64, len(t.names)+1)
	for i, p := range pods {
		for k, v := range requestVector(p, t.names) {
			if i == 0 || v < t.floor[k] {
				t.floor[k] = v
			}
		}
	}
	for _, n := range nodes {
		t.zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
		if n.Spec.Unschedulable || !NodeReady(n) {
			continue
		}
		t.candidates = append(t.candidates, &candidate{node: n})
	}
	return t
}

// Exclude makes nodes take nothing from now on (being drained, or tainted
// for the upgrade).
func (t *Tracker) Exclude(nodes ...string) { t.excluded.Insert(nodes...) }

// Place places pods, largest first, on the first node each fits on, and
// keeps them there for the next Place.
func (t *Tracker) Place(pods []*corev1.Pod) Room {
	reqs := make(map[*corev1.Pod][]int64, len(pods))
	for _, p := range pods {
		reqs[p] = requestVector(p, t.names)
	}
	pods = slices.Clone(pods)
	sort.SliceStable(pods, func(i, j int) bool { return less(reqs[pods[j]], reqs[pods[i]]) })
	var room Room
	for _, p := range pods {
		affinity := nodeaffinity.GetRequiredNodeAffinity(p)
		placed := false
		for i := 0; i < len(t.candidates); i++ {
			c := t.candidates[i]
			if t.excluded.Has(c.node.Name) {
				// Excluded for good: nodes are never taken back.
				t.candidates = slices.Delete(t.candidates, i, i+1)
				i--
				continue
			}
			if c.free == nil {
				c.free = freeVector(c.node, t.podsByNode(c.node.Name), t.names)
			}
			if !fits(c.free, t.floor) {
				// Too full for the smallest pod: dropped for good.
				t.candidates = slices.Delete(t.candidates, i, i+1)
				i--
				continue
			}
			if !fits(c.free, reqs[p]) || !accepts(c.node, p, affinity, t.zoneOf[p.Spec.NodeName]) {
				continue
			}
			for k := range c.free {
				c.free[k] -= reqs[p][k]
			}
			room.Placed = append(room.Placed, Placement{Pod: p, Node: c.node.Name})
			placed = true
			break
		}
		if !placed {
			room.Unplaced = append(room.Unplaced, p)
		}
	}
	return room
}

// requestedResources are the resources that matter: those some evicted pod
// requests (the pod count is added by requestVector).
func requestedResources(toEvict []*corev1.Pod) []corev1.ResourceName {
	var names, seen []corev1.ResourceName
	consider := func(rl corev1.ResourceList, p *corev1.Pod) {
		for name := range rl {
			if !slices.Contains(seen, name) {
				seen = append(seen, name)
			}
			if !slices.Contains(names, name) && podRequest(p, name) != 0 {
				names = append(names, name)
			}
		}
	}
	for _, p := range toEvict {
		for i := range p.Spec.Containers {
			consider(p.Spec.Containers[i].Resources.Requests, p)
		}
		for i := range p.Spec.InitContainers {
			consider(p.Spec.InitContainers[i].Resources.Requests, p)
		}
		consider(p.Spec.Overhead, p)
		if p.Spec.Resources != nil {
			consider(p.Spec.Resources.Requests, p)
		}
	}
	slices.Sort(names)
	return names
}

// accepts reports whether the scheduler could put p on node, resources
// aside: required node affinity, NoSchedule/NoExecute taints, and a
// persistent volume keeping it in the zone it runs in (fromZone).
func accepts(node *corev1.Node, p *corev1.Pod, affinity nodeaffinity.RequiredNodeAffinity, fromZone string) bool {
	if ok, _ := affinity.Match(node); !ok {
		return false
	}
	if _, untolerated := schedhelper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false); untolerated {
		return false
	}
	return !usesPersistentVolume(p) || fromZone == "" || node.Labels[corev1.LabelTopologyZone] == fromZone
}

// requestVector is a pod's requests of names (CPU in millicores), then 1 for
// the pod itself.
func requestVector(p *corev1.Pod, names []corev1.ResourceName) []int64 {
	v := make([]int64, len(names)+1)
	for i, name := range names {
		v[i] = podRequest(p, name)
	}
	v[len(names)] = 1
	return v
}

// freeVector is what a node has left of names and of its pod count.
func freeVector(n *corev1.Node, running []*corev1.Pod, names []corev1.ResourceName) []int64 {
	free := make([]int64, len(names)+1)
	for i, name := range names {
		free[i] = quantityValue(name, n.Status.Allocatable[name])
	}
	free[len(names)] = n.Status.Allocatable.Pods().Value()
	for _, p := range running {
		if pods.Finished(p) {
			continue
		}
		for i, name := range names {
			free[i] -= podRequest(p, name)
		}
		free[len(names)]--
	}
	return free
}

// podRequest is resourcehelper.PodRequests(p, {})[name] (CPU in
// millicores) without building its map, which for every pod of a
// 150,000-pod plan was most of the estimate's garbage: the larger of what
// the containers and sidecars (restartable init containers) need together
// and what the init containers need while each runs (with the sidecars
// started before it), or the pod-level request in their place, plus the
// overhead. TestPodRequestIsPodRequests holds it to PodRequests.
func podRequest(p *corev1.Pod, name corev1.ResourceName) int64 {
	var sum, sidecars, initMax int64
	for i := range p.Spec.Containers {
		sum += quantityValue(name, p.Spec.Containers[i].Resources.Requests[name])
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		v := quantityValue(name, c.Resources.Requests[name])
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum += v
			sidecars += v
			initMax = max(initMax, sidecars)
		} else {
			initMax = max(initMax, v+sidecars)
		}
	}
	total := max(sum, initMax)
	if p.Spec.Resources != nil && resourcehelper.IsSupportedPodLevelResource(name) {
		if q, ok := p.Spec.Resources.Requests[name]; ok {
			total = quantityValue(name, q)
		}
	}
	return total + quantityValue(name, p.Spec.Overhead[name])
}

func quantityValue(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// fits reports whether req fits in free. What a pod does not request
// does not count, as for the scheduler: a node short of memory still
// takes a pod that asks for none.
func fits(free, req []int64) bool {
	for i := range free {
		if req[i] > 0 && req[i] > free[i] {
			return false
		}
	}
	return true
}

// less orders request vectors by their first resource, then the next.
func less(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func usesPersistentVolume(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// autoscalerNames are the app names of what adds nodes for pending pods.
var autoscalerNames = []string{"cluster-autoscaler", "karpenter"}

// IsAutoscaler reports whether p is a running pod of the cluster autoscaler
// or Karpenter, found by its app labels or, failing those, its name: while
// one runs, room can still come for pods that fit nowhere now.
func IsAutoscaler(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	// Every pod of the snapshot is asked: each label is looked up once.
	byName, byApp := p.Labels["app.kubernetes.io/name"], p.Labels["app"]
	for _, name := range autoscalerNames {
		if byName == name || byApp == name || len(p.Name) > len(name) && p.Name[len(name)] == '-' && strings.HasPrefix(p.Name, name) {
			return true
		}
	}
	return false
}

// startupTaints keep a node that has just become Ready from taking pods
// until their owners take them off: the node lifecycle controller (a few
// seconds after Ready), the network plugin, the cloud controller manager.
var startupTaints = []string{corev1.TaintNodeNotReady, corev1.TaintNodeNetworkUnavailable, "node.cloudprovider.kubernetes.io/uninitialized"}

// StartupTaint names the taint that still keeps a Ready node from taking
// pods, or "" when there is none: a new node counts once it can take the
// pods it is waited for.
func StartupTaint(n *corev1.Node) string {
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectPreferNoSchedule && slices.Contains(startupTaints, t.Key) {
			return t.Key
		}
	}
	return ""
}
