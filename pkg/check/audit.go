package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// acc accumulates one check's hits over the pods of one workload, so each
// (workload, check) becomes a single finding.
type acc struct {
	nodes   map[string]struct{}
	details []string // distinct, in the order seen
	seen    map[string]struct{}
	pods    int
}

func (h *acc) add(node string, details ...string) {
	if h.nodes == nil {
		h.nodes = map[string]struct{}{}
		h.seen = map[string]struct{}{}
	}
	h.pods++
	if node != "" {
		h.nodes[node] = struct{}{}
	}
	for _, d := range details {
		if _, ok := h.seen[d]; !ok {
			h.seen[d] = struct{}{}
			h.details = append(h.details, d)
		}
	}
}

func (h *acc) hit() bool { return h.pods > 0 }

// serving reports whether the workload is a long-running replicated one,
// for which replica counts, spread and probes mean something (not a Job,
// which no one sends traffic to, nor a bare pod, reported as such).
func (w *workload) serving() bool { return w.kind != "Job" && w.kind != "Pod" }

func (a *audit) auditWorkload(w *workload) []Finding {
	var out []Finding
	emit := func(check string, nodes map[string]struct{}, msg, fix string) *Finding {
		out = append(out, Finding{
			Check: check, Severity: severities[check],
			Kind: w.kind, Namespace: w.ns, Name: w.name,
			Nodes: sortedKeys(nodes), Message: msg, Fix: fix,
		})
		return &out[len(out)-1]
	}
	allNodes := map[string]struct{}{}
	for _, p := range w.outdated {
		allNodes[p.Spec.NodeName] = struct{}{}
	}
	f := a.auditPods(w)
	a.reportBlockers(w, &f, allNodes, emit)
	a.reportWarnings(w, &f, allNodes, emit)
	return out
}

// podFindings is what the pod-level checks found over one workload's
// outdated pods: one accumulator per check, so each becomes a single finding.
type podFindings struct {
	multi, tolerAll, noProbe, preStop, gate, lbPreStop, emptyDir, doNotEvict acc

	multiPod string      // the first pod with several PDBs, named in the message
	pdbs     []*pdbEntry // the PDBs selecting any of the pods, sorted by name
	lbNames  []string    // the LoadBalancer Services in front of any, sorted
}

// selection is what selects the pods that share one label map.
type selection struct {
	pdbs     []*pdbEntry
	behindLB bool
}

// auditPods runs the pod-level checks over w's outdated pods.
func (a *audit) auditPods(w *workload) podFindings {
	var f podFindings
	nsInjects := a.nsLabels[w.ns][labelGateInject] == "enabled"
	pdbSeen, lbSeen := map[*pdbEntry]bool{}, map[string]bool{}
	// The pods of a workload are of one namespace, and share a few label
	// maps (the snapshot interns them; labels differ by zone, say): the
	// selectors are matched once per map, against the few PDBs and
	// Services of the namespace.
	byLabels := map[unsafe.Pointer]selection{}
	now := a.now()
	for _, p := range w.outdated {
		m, ok := byLabels[mapPointer(p.Labels)]
		if !ok {
			m.pdbs = a.pdbsFor(p)
			f.pdbs = appendUnseen(f.pdbs, pdbSeen, m.pdbs...)
			for _, s := range a.lbs[p.Namespace] {
				if s.sel.Matches(labelsOf(p)) {
					m.behindLB = true
					f.lbNames = appendUnseen(f.lbNames, lbSeen, s.svc.Name)
				}
			}
			byLabels[mapPointer(p.Labels)] = m
		}
		f.addPod(p, m, nsInjects)
		if !a.in.DoNotDisrupt {
			// Karpenter's protection where Karpenter does not replace
			// the nodes: the owner's wish, a warning.
			if d := DoNotDisruptOf(p, now); d.Active {
				f.doNotEvict.add(p.Spec.NodeName, AnnDoNotDisrupt+"="+strconv.Quote(d.Value))
			}
		}
	}
	sort.Strings(f.lbNames)
	sort.Slice(f.pdbs, func(i, j int) bool { return f.pdbs[i].pdb.Name < f.pdbs[j].pdb.Name })
	return f
}

// appendUnseen appends the elements not yet in seen, and adds them to it.
func appendUnseen[T comparable](list []T, seen map[T]bool, elems ...T) []T {
	for _, e := range elems {
		if !seen[e] {
			seen[e] = true
			list = append(list, e)
		}
	}
	return list
}

// addPod adds what the pod-level checks find in p, selected by m.
func (f *podFindings) addPod(p *corev1.Pod, m selection, nsInjects bool) {
	node := p.Spec.NodeName
	if len(m.pdbs) > 1 {
		f.addMultiplePDBs(p, m.pdbs)
	}
	if toleratesAll(p) {
		f.tolerAll.add(node)
	}
	f.addContainers(p)
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			f.emptyDir.add(node, v.Name)
		}
	}
	if p.Annotations[annSafeToEvict] == "false" {
		f.doNotEvict.add(node, annSafeToEvict+`="false"`)
	}
	if m.behindLB {
		if !nsInjects && !hasTargetHealthGate(p) {
			f.gate.add(node)
		}
		if !hasPreStopDelay(p) {
			f.lbPreStop.add(node)
		}
	}
}

func (f *podFindings) addMultiplePDBs(p *corev1.Pod, pdbs []*pdbEntry) {
	ds := make([]string, len(pdbs))
	for i, e := range pdbs {
		ds[i] = e.pdb.Name
	}
	sort.Strings(ds)
	if !f.multi.hit() {
		f.multiPod = p.Name
	}
	f.multi.add(p.Spec.NodeName, ds...)
}

// toleratesAll reports a toleration that also tolerates the upgrade taint.
func toleratesAll(p *corev1.Pod) bool {
	for _, t := range p.Spec.Tolerations {
		// An empty key with Exists tolerates every taint; limited to
		// NoExecute it still does not tolerate our NoSchedule taint.
		if t.Key == "" && t.Operator == corev1.TolerationOpExists &&
			(t.Effect == "" || t.Effect == corev1.TaintEffectNoSchedule) {
			return true
		}
	}
	return false
}

// addContainers adds the containers without a readiness probe and those
// whose preStop sleep outlasts the pod's grace period.
func (f *podFindings) addContainers(p *corev1.Pod) {
	node := p.Spec.NodeName
	grace := gracePeriod(p)
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if c.ReadinessProbe == nil {
			f.noProbe.add(node, c.Name)
		}
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			if s, isSleep := preStopSleep(c.Lifecycle.PreStop); isSleep && s >= grace {
				f.preStop.add(node, fmt.Sprintf("container %q sleeps %s in preStop, terminationGracePeriodSeconds %s",
					c.Name, formatSeconds(s), strconv.FormatFloat(grace, 'f', -1, 64)))
			}
		}
	}
}

// reportBlockers emits the findings that stop a drain or take the whole
// workload down.
func (a *audit) reportBlockers(w *workload, f *podFindings, allNodes map[string]struct{}, emit emitFunc) {
	a.pdbZero(w, f.pdbs, emit)
	if f.multi.hit() {
		emit(CheckMultiplePDBs, f.multi.nodes,
			fmt.Sprintf("PodDisruptionBudgets %s select the same pods (%s, e.g. %q): the eviction API refuses to evict a pod with several PDBs",
				quoteList(f.multi.details), plural(f.multi.pods, "pod"), w.ns+"/"+f.multiPod),
			"keep one PodDisruptionBudget per pod: narrow the selectors or merge the PDBs")
	}
	if f.tolerAll.hit() {
		emit(CheckToleratesAllTaints, f.tolerAll.nodes,
			fmt.Sprintf("%s with a toleration operator Exists and no key: they tolerate the upgrade taint and are scheduled back onto the tainted nodes", plural(f.tolerAll.pods, "pod")),
			"give the toleration a key (or drop it) so the upgrade taint keeps the pods away")
	}
	if w.kind == "Pod" {
		emit(CheckBarePod, allNodes,
			fmt.Sprintf("pod %q has no controller: nothing recreates it after eviction", w.ns+"/"+w.name),
			"--force deletes it; or run it under a Deployment")
	}
	if w.serving() && w.replicas > 1 && len(f.pdbs) == 0 {
		a.sameBatch(w, emit)
	}
	if isScaled(w.kind) && w.replicas == 1 {
		emit(CheckSingleReplica, allNodes,
			fmt.Sprintf("1 replica, on outdated node %s: down from its eviction until the new pod is Ready", quoteList(sortedKeys(allNodes))),
			"raise replicas to 2 or more and add a PodDisruptionBudget with maxUnavailable 1")
	}
}

// reportWarnings emits the findings that let a drain go on but cost
// capacity, traffic or data.
func (a *audit) reportWarnings(w *workload, f *podFindings, allNodes map[string]struct{}, emit emitFunc) {
	if w.serving() && w.replicas > 1 && len(f.pdbs) == 0 {
		emit(CheckNoPDB, allNodes,
			fmt.Sprintf("%s and no PodDisruptionBudget: a drain may evict all of them at once", plural(w.replicas, "replica")),
			"add a PodDisruptionBudget with maxUnavailable 1")
	}
	if w.serving() && w.replicas > 1 {
		a.zoneSpread(w, allNodes, emit)
	}
	if f.noProbe.hit() && w.serving() {
		emit(CheckNoReadinessProbe, f.noProbe.nodes,
			fmt.Sprintf("%s without readinessProbe: new pods take traffic before they can serve", containers(f.noProbe.details)),
			"add a readinessProbe to each serving container")
	}
	if f.preStop.hit() {
		emit(CheckPreStopExceedsGrace, f.preStop.nodes,
			strings.Join(f.preStop.details, "; ")+": killed mid-sleep",
			"set terminationGracePeriodSeconds above the preStop sleep (e.g. sleep + 15s)")
	}
	if len(f.lbNames) > 0 {
		reportLoadBalanced(w, f, allNodes, emit)
	}
	if f.emptyDir.hit() {
		emit(CheckEmptyDirData, f.emptyDir.nodes,
			fmt.Sprintf("%s with emptyDir volume %s: the data is lost on drain", plural(f.emptyDir.pods, "pod"), quoteList(f.emptyDir.details)),
			"keep data that must survive on a PersistentVolumeClaim, or accept the loss")
	}
	if f.doNotEvict.hit() {
		emit(CheckDoNotEvict, f.doNotEvict.nodes,
			fmt.Sprintf("%s annotated %s: their owner asked not to evict them", plural(f.doNotEvict.pods, "pod"), strings.Join(f.doNotEvict.details, ", ")),
			"confirm the pods may be evicted, then remove the annotation for the upgrade")
	}
}

// reportLoadBalanced emits the warnings for pods behind a LoadBalancer
// Service: each lets the load balancer send traffic to a pod that cannot
// take it yet, or no longer.
func reportLoadBalanced(w *workload, f *podFindings, allNodes map[string]struct{}, emit emitFunc) {
	svcs := "LoadBalancer Service " + quoteList(prefixed(w.ns, f.lbNames))
	if f.gate.hit() {
		emit(CheckLBNoReadinessGate, f.gate.nodes,
			fmt.Sprintf("%s behind %s: no target-health readiness gate and namespace %q lacks label %s=enabled, so new pods count as Ready before the load balancer sends them traffic",
				plural(f.gate.pods, "pod"), svcs, w.ns, labelGateInject),
			fmt.Sprintf("kubectl label namespace %s %s=enabled, then restart the workload so the gate is injected", w.ns, labelGateInject))
	}
	if f.lbPreStop.hit() {
		emit(CheckLBNoPreStop, f.lbPreStop.nodes,
			fmt.Sprintf("%s behind %s: no preStop delay, so they stop serving before the load balancer deregisters them", plural(f.lbPreStop.pods, "pod"), svcs),
			"add a preStop sleep (e.g. 15s) shorter than terminationGracePeriodSeconds")
	}
	if w.isDeploy && w.minReady == 0 {
		emit(CheckLBMinReadySeconds, allNodes,
			fmt.Sprintf("Deployment behind %s has minReadySeconds 0: a new pod counts as available before the load balancer sends it traffic", svcs),
			"set minReadySeconds (e.g. 10) in the Deployment spec")
	}
}

// pdbZero reports the PDBs selecting the workload's evicted pods that allow
// no disruption: by their spec (forever) or by their current status (now).
func (a *audit) pdbZero(w *workload, pdbs []*pdbEntry, emit emitFunc) {
	var msgs []string
	fix := ""
	recovering := false
	hitNodes := map[string]struct{}{}
	for _, e := range pdbs {
		p := e.pdb
		name := p.Namespace + "/" + p.Name
		var msg, f string
		if zero, figures := zeroBySpec(&p.Spec, a.expectedPods(e)); zero {
			msg = fmt.Sprintf("PodDisruptionBudget %q allows 0 disruptions (%s)", name, figures)
			f = "raise replicas above minAvailable or set maxUnavailable 1"
			if p.Spec.MaxUnavailable != nil {
				f = "set maxUnavailable 1 in the PodDisruptionBudget"
			}
		} else if len(pdbs) == 1 && observed(p) && p.Status.DisruptionsAllowed <= 0 {
			// With several budgets on the same pods the disruption controller
			// re-syncs only one of them (chosen arbitrarily) on pod changes, so
			// the others' status is stale; multiple-pdbs reports the workload.
			msg = fmt.Sprintf("PodDisruptionBudget %q allows 0 disruptions now (currentHealthy %d, desiredHealthy %d, expectedPods %d)",
				name, p.Status.CurrentHealthy, p.Status.DesiredHealthy, p.Status.ExpectedPods)
			f = "make the selected pods Ready (currentHealthy above desiredHealthy) or relax the PodDisruptionBudget"
			// Only the "now" case is a wait: a budget that allows nothing
			// by its spec never lets the run through.
			if more, waitFix := a.zeroNowWaits(w, e); more != "" {
				recovering = true
				msg, f = msg+more, waitFix
			}
		} else {
			continue
		}
		msgs = append(msgs, msg)
		if fix == "" {
			fix = f
		}
		// Re-matching here, on the rare hit, spares a node set per PDB on every workload.
		for _, p := range w.outdated {
			if e.sel.Matches(labelsOf(p)) {
				hitNodes[p.Spec.NodeName] = struct{}{}
			}
		}
	}
	if len(msgs) > 0 {
		f := emit(CheckPDBZeroDisruptions, hitNodes, strings.Join(msgs, "; "), fix)
		if recovering {
			f.Severity = Warning
		}
	}
}

// zeroNowWaits says why a budget at 0 disruptions now lets the run
// through, its evictions waiting until it allows one: what the message
// adds and the fix; "" where nothing under way will lift it.
func (a *audit) zeroNowWaits(w *workload, e *pdbEntry) (more, fix string) {
	if ready := a.readySelected(e); ready > int(e.pdb.Status.DesiredHealthy) {
		// The disruption controller has not counted pods that are Ready
		// again (seconds, more under load): evictions are refused until
		// it has, so the run waits, safely.
		return fmt.Sprintf(", but %d of its pods are Ready now: its status has not caught up", ready),
			"none needed: evictions wait until the disruption controller counts the Ready pods, within --drain-timeout"
	}
	if a.recovering(w) {
		return " while the pods an interrupted run evicted come back",
			"none needed: the run evicts its pods once the workload is Ready again, within --drain-timeout"
	}
	if pending := a.pendingSelected(e); pending > 0 {
		// Pods replacing others that went (Karpenter's own drift of a
		// node before the run held it, a rollout): the budget allows
		// again once they are Ready.
		return fmt.Sprintf(" while %d of its pods are Pending, replacing pods that went", pending),
			"none needed once they start: evictions wait until they are Ready, within --drain-timeout"
	}
	return "", ""
}

// recovering says whether an interrupted run evicted pods of w that may
// not be back yet: w's pods are of a controller the run recorded.
func (a *audit) recovering(w *workload) bool {
	if len(a.recoveringSet) == 0 {
		return false
	}
	for _, p := range w.pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && a.recoveringSet[Controller{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}] {
			return true
		}
	}
	return false
}

// sameBatch reports a workload whose ready replicas all sit on the nodes of
// one batch. Only called when no PDB selects the pods: with one, the drain
// evicts them one by one and waits for replacements, so they do not go
// down together.
func (a *audit) sameBatch(w *workload, emit emitFunc) {
	if len(a.batchOf) == 0 {
		return
	}
	batch, ready := -1, 0
	nodes := map[string]struct{}{}
	for _, p := range w.pods {
		if !podReady(p) {
			continue
		}
		b, ok := a.batchOf[p.Spec.NodeName]
		if !ok || (batch >= 0 && b != batch) {
			return // a ready replica survives the batch
		}
		batch = b
		ready++
		nodes[p.Spec.NodeName] = struct{}{}
	}
	if ready == 0 {
		return // nothing ready: there is nothing left to take down
	}
	emit(CheckSameBatch, nodes,
		fmt.Sprintf("all %d ready of %s run on nodes of batch %d of %d: they are evicted together",
			ready, plural(w.replicas, "replica"), batch+1, len(a.in.Batches)),
		"add a PodDisruptionBudget with maxUnavailable 1, or spread the pods with topologySpreadConstraints on kubernetes.io/hostname")
}

// zoneSpread reports replicas whose per-zone counts, over the zones the
// group's nodes span, differ by more than one (what maxSkew 1 forbids).
func (a *audit) zoneSpread(w *workload, allNodes map[string]struct{}, emit emitFunc) {
	if len(a.zones) < 2 {
		return
	}
	counts := make(map[string]int, len(a.zones))
	placed := 0
	for _, p := range w.pods {
		if z, ok := a.zoneOf[p.Spec.NodeName]; ok {
			counts[z]++
			placed++
		}
	}
	lo, hi, top := -1, 0, ""
	for _, z := range a.zones {
		c := counts[z]
		if lo < 0 || c < lo {
			lo = c
		}
		if c > hi {
			hi, top = c, z
		}
	}
	if hi-lo <= 1 {
		return
	}
	parts := make([]string, len(a.zones))
	for i, z := range a.zones {
		parts[i] = z + ":" + strconv.Itoa(counts[z])
	}
	emit(CheckZoneConcentration, allNodes,
		fmt.Sprintf("%s spread %s over the group's %d zones (skew %d > 1): replacing zone %q's nodes takes %d at once",
			plural(placed, "replica"), strings.Join(parts, " "), len(a.zones), hi-lo, top, hi),
		"add topologySpreadConstraints maxSkew 1 on topology.kubernetes.io/zone")
}

func isScaled(kind string) bool {
	return kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet"
}

func hasTargetHealthGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.ReadinessGates {
		if strings.HasPrefix(string(g.ConditionType), gatePrefix) {
			return true
		}
	}
	return false
}
