package check

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
)

type nsName struct{ ns, name string }

type workloadKey struct{ kind, ns, name string }

// workload is one owner's live pods, with the per-pod facts the checks need.
type workload struct {
	workloadKey
	pods     []*corev1.Pod // live pods on any node (for spread and readiness)
	outdated []*corev1.Pod // the subset on outdated nodes: the pods that get evicted
	replicas int           // desired replicas (spec), or the live pod count when unknown
	scaled   bool          // Deployment, StatefulSet or ReplicaSet found in the input
	minReady int32         // Deployment minReadySeconds
	isDeploy bool          // a Deployment object was found
}

// emitFunc adds a finding of the workload being audited and returns it,
// valid until the next call, for a severity that depends on the case.
type emitFunc func(check string, nodes map[string]struct{}, msg, fix string) *Finding

// pdbEntry is a PDB with its selector converted once.
type pdbEntry struct {
	pdb      *policyv1.PodDisruptionBudget
	sel      labels.Selector
	expected int // replicas of the workloads it selects; -1 until computed
}

// svcEntry is a LoadBalancer Service with its selector converted once.
type svcEntry struct {
	svc *corev1.Service
	sel labels.Selector
}

type audit struct {
	in        *Input
	outdated  map[string]bool
	batchOf   map[string]int
	zoneOf    map[string]string
	zones     []string // zones the group's nodes span, sorted
	nsLabels  map[string]map[string]string
	pdbs      map[string][]*pdbEntry // by namespace
	lbs       map[string][]*svcEntry // by namespace
	workloads []*workload            // in order of first pod, for determinism
	byNS      map[string][]*workload
	// recoveringSet is Input.Recovering as a set.
	recoveringSet map[Controller]bool
	rsOwner       DeploymentOwners
}

func newAudit(in *Input) *audit {
	a := &audit{
		in:       in,
		outdated: make(map[string]bool, len(in.Outdated)),
		batchOf:  make(map[string]int),
		zoneOf:   make(map[string]string, len(in.Nodes)),
		nsLabels: make(map[string]map[string]string, len(in.Namespaces)),
		pdbs:     make(map[string][]*pdbEntry),
		lbs:      make(map[string][]*svcEntry),
		byNS:     make(map[string][]*workload),
	}
	for _, n := range in.Outdated {
		a.outdated[n] = true
	}
	if len(in.Recovering) > 0 {
		a.recoveringSet = make(map[Controller]bool, len(in.Recovering))
		for _, c := range in.Recovering {
			a.recoveringSet[c] = true
		}
	}
	for i, b := range in.Batches {
		for _, n := range b {
			a.batchOf[n] = i
		}
	}
	a.indexZones()
	for i := range in.Namespaces {
		a.nsLabels[in.Namespaces[i].Name] = in.Namespaces[i].Labels
	}
	a.indexSelectors()
	a.groupPods()
	a.setReplicas()
	return a
}

// indexZones records each node's zone and the zones the nodes span.
func (a *audit) indexZones() {
	zoneSet := map[string]bool{}
	for i := range a.in.Nodes {
		n := &a.in.Nodes[i]
		z := n.Labels[labelZone]
		if z == "" {
			z = n.Labels[labelZoneDeprecated]
		}
		if z != "" {
			a.zoneOf[n.Name] = z
			zoneSet[z] = true
		}
	}
	a.zones = sortedKeys(zoneSet)
}

// indexSelectors converts the selectors of the PDBs and LoadBalancer
// Services in scope once, by namespace.
func (a *audit) indexSelectors() {
	for i := range a.in.PDBs {
		p := &a.in.PDBs[i]
		if !a.inScope(p.Namespace) || p.Spec.Selector == nil {
			continue // policy/v1: a nil selector selects no pod
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			continue // the eviction API skips invalid selectors as well
		}
		a.pdbs[p.Namespace] = append(a.pdbs[p.Namespace], &pdbEntry{pdb: p, sel: sel, expected: -1})
	}
	for i := range a.in.Services {
		s := &a.in.Services[i]
		// A Service without selector has hand-made endpoints: we cannot tell its pods.
		if !a.inScope(s.Namespace) || s.Spec.Type != corev1.ServiceTypeLoadBalancer || len(s.Spec.Selector) == 0 {
			continue
		}
		a.lbs[s.Namespace] = append(a.lbs[s.Namespace], &svcEntry{svc: s, sel: labels.SelectorFromSet(s.Spec.Selector)})
	}
}

func (a *audit) inScope(ns string) bool { return a.in.Namespace == "" || a.in.Namespace == ns }

// groupPods maps every live pod to its workload in one pass.
func (a *audit) groupPods() {
	a.rsOwner = DeploymentOwnersOf(a.in.ReplicaSets, a.inScope)
	index := map[workloadKey]*workload{}
	for i := range a.in.Pods {
		p := &a.in.Pods[i]
		if !a.inScope(p.Namespace) || !live(p) {
			continue
		}
		kind, ns, name := WorkloadOf(p, a.rsOwner)
		if kind == "DaemonSet" || kind == "Node" {
			continue // DaemonSet pods are not drained; "Node" is a static pod without the mirror annotation
		}
		k := workloadKey{kind, ns, name}
		w := index[k]
		if w == nil {
			w = &workload{workloadKey: k}
			index[k] = w
			a.workloads = append(a.workloads, w)
			a.byNS[ns] = append(a.byNS[ns], w)
		}
		w.pods = append(w.pods, p)
		if a.outdated[p.Spec.NodeName] {
			w.outdated = append(w.outdated, p)
		}
	}
}

// setReplicas sets the workloads' desired replicas from their controllers,
// or to their live pod count where the controller is not in the input.
func (a *audit) setReplicas() {
	in := a.in
	deps := make(map[nsName]*appsv1.Deployment, len(in.Deployments))
	for i := range in.Deployments {
		deps[nsName{in.Deployments[i].Namespace, in.Deployments[i].Name}] = &in.Deployments[i]
	}
	sts := make(map[nsName]*appsv1.StatefulSet, len(in.StatefulSets))
	for i := range in.StatefulSets {
		sts[nsName{in.StatefulSets[i].Namespace, in.StatefulSets[i].Name}] = &in.StatefulSets[i]
	}
	rss := make(map[nsName]*appsv1.ReplicaSet, len(in.ReplicaSets))
	for i := range in.ReplicaSets {
		if rs := &in.ReplicaSets[i]; a.inScope(rs.Namespace) {
			rss[nsName{rs.Namespace, rs.Name}] = rs
		}
	}
	for _, w := range a.workloads {
		w.replicas = len(w.pods)
		k := nsName{w.ns, w.name}
		switch w.kind {
		case "Deployment":
			if d := deps[k]; d != nil {
				w.replicas, w.scaled, w.isDeploy = replicasOf(d.Spec.Replicas), true, true
				w.minReady = d.Spec.MinReadySeconds
			}
		case "StatefulSet":
			if s := sts[k]; s != nil {
				w.replicas, w.scaled = replicasOf(s.Spec.Replicas), true
			}
		case "ReplicaSet":
			if rs := rss[k]; rs != nil {
				w.replicas, w.scaled = replicasOf(rs.Spec.Replicas), true
			}
		}
	}
}

// live reports whether a pod counts: not finished, not already terminating,
// not a mirror pod (the kubelet owns those, eviction cannot move them).
func live(p *corev1.Pod) bool {
	if pods.Finished(p) {
		return false
	}
	if p.DeletionTimestamp != nil {
		return false
	}
	_, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]
	return !mirror
}

func replicasOf(r *int32) int {
	if r == nil {
		return 1 // API default
	}
	return int(*r)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pdbsFor returns the PDBs of the pod's namespace selecting it.
func (a *audit) pdbsFor(p *corev1.Pod) []*pdbEntry {
	var buf []*pdbEntry
	set := labels.Set(p.Labels)
	for _, e := range a.pdbs[p.Namespace] {
		if e.sel.Matches(set) {
			buf = append(buf, e)
		}
	}
	return buf
}

// expectedPods is the number of pods the PDB controller would expect: the
// desired replicas of every workload of the namespace the PDB selects.
// A workload's first pod stands for it: pods share their template's labels.
// Computed once per PDB, and only for PDBs that matter.
func (a *audit) expectedPods(e *pdbEntry) int {
	if e.expected >= 0 {
		return e.expected
	}
	n := 0
	for _, w := range a.byNS[e.pdb.Namespace] {
		if e.sel.Matches(labels.Set(w.pods[0].Labels)) {
			n += w.replicas
		}
	}
	e.expected = n
	return n
}

// readySelected counts the live Ready pods of the PDB's namespace it
// selects, as the disruption controller's currentHealthy does once it
// has caught up.
func (a *audit) readySelected(e *pdbEntry) int { return a.countSelected(e, podReady) }

// pendingSelected counts the live pods e selects that have not started:
// replacements of pods that went (a node going away, a rollout).
func (a *audit) pendingSelected(e *pdbEntry) int {
	return a.countSelected(e, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending })
}

// countSelected counts the live pods e selects for which is holds.
func (a *audit) countSelected(e *pdbEntry, is func(*corev1.Pod) bool) int {
	n := 0
	for _, w := range a.byNS[e.pdb.Namespace] {
		for _, p := range w.pods {
			if is(p) && e.sel.Matches(labels.Set(p.Labels)) {
				n++
			}
		}
	}
	return n
}

// zeroBySpec reports whether a PDB's spec can never allow a disruption for
// `expected` pods, with the figures for the message. Percentages round up,
// as in the disruption controller.
func zeroBySpec(spec *policyv1.PodDisruptionBudgetSpec, expected int) (bool, string) {
	if mu := spec.MaxUnavailable; mu != nil {
		// Rounded up, any non-zero maxUnavailable allows at least one disruption.
		if (mu.Type == intstr.Int && mu.IntVal <= 0) || strings.TrimSpace(strings.TrimSuffix(mu.StrVal, "%")) == "0" {
			return true, "maxUnavailable " + mu.String()
		}
		return false, ""
	}
	if ma := spec.MinAvailable; ma != nil && expected > 0 {
		v, err := intstr.GetScaledValueFromIntOrPercent(ma, expected, true)
		if err == nil && v >= expected {
			return true, "minAvailable " + ma.String() + ", " + plural(expected, "replica")
		}
	}
	return false, ""
}

// observed reports whether the disruption controller has computed the
// status of the PDB's current spec; before that disruptionsAllowed is a bare 0.
func observed(p *policyv1.PodDisruptionBudget) bool {
	return p.Status.ObservedGeneration > 0 && p.Status.ObservedGeneration >= p.Generation
}
