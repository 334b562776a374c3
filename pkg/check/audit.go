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

	// One accumulator per pod-level check, so each becomes a single finding.
	var multi, tolerAll, noProbe, preStop, gate, lbPreStop, emptyDir, doNotEvict acc
	var (
		pdbSeen  = map[*pdbEntry]bool{}
		pdbOrder []*pdbEntry
		lbNames  []string
		lbSeen   = map[string]bool{}
		multiPod string // the first pod with several PDBs, named in the message
	)
	nsl := a.nsLabels[w.ns]
	nsInjects := nsl[labelGateInject] == "enabled"
	// The pods of a workload are of one namespace, and share a few label
	// maps (the snapshot interns them; labels differ by zone, say): the
	// selectors are matched once per map.
	type matched struct {
		pdbs     []*pdbEntry
		behindLB bool
	}
	byLabels := map[unsafe.Pointer]matched{}
	for _, p := range w.outdated {
		node := p.Spec.NodeName

		// Selectors match per label map (labels may differ within a
		// workload); the per-namespace lists keep this to the few PDBs and
		// Services of the pod's namespace.
		m, ok := byLabels[mapPointer(p.Labels)]
		if !ok {
			m.pdbs = a.pdbsFor(p)
			for _, e := range m.pdbs {
				if !pdbSeen[e] {
					pdbSeen[e] = true
					pdbOrder = append(pdbOrder, e)
				}
			}
			for _, s := range a.lbs[p.Namespace] {
				if s.sel.Matches(labelsOf(p)) {
					m.behindLB = true
					if !lbSeen[s.svc.Name] {
						lbSeen[s.svc.Name] = true
						lbNames = append(lbNames, s.svc.Name)
					}
				}
			}
			byLabels[mapPointer(p.Labels)] = m
		}
		if len(m.pdbs) > 1 {
			ds := make([]string, len(m.pdbs))
			for i, e := range m.pdbs {
				ds[i] = e.pdb.Name
			}
			sort.Strings(ds)
			if !multi.hit() {
				multiPod = p.Name
			}
			multi.add(node, ds...)
		}

		for _, t := range p.Spec.Tolerations {
			// An empty key with Exists tolerates every taint; limited to
			// NoExecute it still does not tolerate our NoSchedule taint.
			if t.Key == "" && t.Operator == corev1.TolerationOpExists &&
				(t.Effect == "" || t.Effect == corev1.TaintEffectNoSchedule) {
				tolerAll.add(node)
				break
			}
		}

		grace := gracePeriod(p)
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			if c.ReadinessProbe == nil {
				noProbe.add(node, c.Name)
			}
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				if s, isSleep := preStopSleep(c.Lifecycle.PreStop); isSleep && s >= grace {
					preStop.add(node, fmt.Sprintf("container %q sleeps %s in preStop, terminationGracePeriodSeconds %s",
						c.Name, formatSeconds(s), strconv.FormatFloat(grace, 'f', -1, 64)))
				}
			}
		}

		for _, v := range p.Spec.Volumes {
			if v.EmptyDir != nil {
				emptyDir.add(node, v.Name)
			}
		}

		if p.Annotations[annSafeToEvict] == "false" {
			doNotEvict.add(node, annSafeToEvict+`="false"`)
		}
		if p.Annotations[annDoNotDisrupt] == "true" {
			doNotEvict.add(node, annDoNotDisrupt+`="true"`)
		}

		if m.behindLB {
			if !nsInjects && !hasTargetHealthGate(p) {
				gate.add(node)
			}
			if !hasPreStopDelay(p) {
				lbPreStop.add(node)
			}
		}
	}
	sort.Strings(lbNames)
	sort.Slice(pdbOrder, func(i, j int) bool { return pdbOrder[i].pdb.Name < pdbOrder[j].pdb.Name })
	protected := len(pdbOrder) > 0

	// Blockers.
	a.pdbZero(w, pdbOrder, emit)
	if multi.hit() {
		emit(CheckMultiplePDBs, multi.nodes,
			fmt.Sprintf("PodDisruptionBudgets %s select the same pods (%s, e.g. %q): the eviction API refuses to evict a pod with several PDBs",
				quoteList(multi.details), plural(multi.pods, "pod"), w.ns+"/"+multiPod),
			"keep one PodDisruptionBudget per pod: narrow the selectors or merge the PDBs")
	}
	if tolerAll.hit() {
		emit(CheckToleratesAllTaints, tolerAll.nodes,
			fmt.Sprintf("%s with a toleration operator Exists and no key: they tolerate the upgrade taint and are scheduled back onto the tainted nodes", plural(tolerAll.pods, "pod")),
			"give the toleration a key (or drop it) so the upgrade taint keeps the pods away")
	}
	if w.kind == "Pod" {
		emit(CheckBarePod, allNodes,
			fmt.Sprintf("pod %q has no controller: nothing recreates it after eviction", w.ns+"/"+w.name),
			"--force deletes it; or run it under a Deployment")
	}
	if w.serving() && w.replicas > 1 && !protected {
		a.sameBatch(w, emit)
	}
	if isScaled(w.kind) && w.replicas == 1 {
		emit(CheckSingleReplica, allNodes,
			fmt.Sprintf("1 replica, on outdated node %s: down from its eviction until the new pod is Ready", quoteList(sortedKeys(allNodes))),
			"raise replicas to 2 or more and add a PodDisruptionBudget with maxUnavailable 1")
	}

	// Warnings.
	if w.serving() && w.replicas > 1 && !protected {
		emit(CheckNoPDB, allNodes,
			fmt.Sprintf("%s and no PodDisruptionBudget: a drain may evict all of them at once", plural(w.replicas, "replica")),
			"add a PodDisruptionBudget with maxUnavailable 1")
	}
	if w.serving() && w.replicas > 1 {
		a.zoneSpread(w, allNodes, emit)
	}
	if noProbe.hit() && w.serving() {
		emit(CheckNoReadinessProbe, noProbe.nodes,
			fmt.Sprintf("%s without readinessProbe: new pods take traffic before they can serve", containers(noProbe.details)),
			"add a readinessProbe to each serving container")
	}
	if preStop.hit() {
		emit(CheckPreStopExceedsGrace, preStop.nodes,
			strings.Join(preStop.details, "; ")+": killed mid-sleep",
			"set terminationGracePeriodSeconds above the preStop sleep (e.g. sleep + 15s)")
	}
	if len(lbNames) > 0 {
		svcs := "LoadBalancer Service " + quoteList(prefixed(w.ns, lbNames))
		if gate.hit() {
			emit(CheckLBNoReadinessGate, gate.nodes,
				fmt.Sprintf("%s behind %s: no target-health readiness gate and namespace %q lacks label %s=enabled, so new pods count as Ready before the load balancer sends them traffic",
					plural(gate.pods, "pod"), svcs, w.ns, labelGateInject),
				fmt.Sprintf("kubectl label namespace %s %s=enabled, then restart the workload so the gate is injected", w.ns, labelGateInject))
		}
		if lbPreStop.hit() {
			emit(CheckLBNoPreStop, lbPreStop.nodes,
				fmt.Sprintf("%s behind %s: no preStop delay, so they stop serving before the load balancer deregisters them", plural(lbPreStop.pods, "pod"), svcs),
				"add a preStop sleep (e.g. 15s) shorter than terminationGracePeriodSeconds")
		}
		if w.isDeploy && w.minReady == 0 {
			emit(CheckLBMinReadySeconds, allNodes,
				fmt.Sprintf("Deployment behind %s has minReadySeconds 0: a new pod counts as available before the load balancer sends it traffic", svcs),
				"set minReadySeconds (e.g. 10) in the Deployment spec")
		}
	}
	if emptyDir.hit() {
		emit(CheckEmptyDirData, emptyDir.nodes,
			fmt.Sprintf("%s with emptyDir volume %s: the data is lost on drain", plural(emptyDir.pods, "pod"), quoteList(emptyDir.details)),
			"keep data that must survive on a PersistentVolumeClaim, or accept the loss")
	}
	if doNotEvict.hit() {
		emit(CheckDoNotEvict, doNotEvict.nodes,
			fmt.Sprintf("%s annotated %s: their owner asked not to evict them", plural(doNotEvict.pods, "pod"), strings.Join(doNotEvict.details, ", ")),
			"confirm the pods may be evicted, then remove the annotation for the upgrade")
	}
	return out
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
			if a.recovering(w) {
				// Only the "now" case: the run waits for it, unlike a
				// budget that allows nothing by its spec.
				recovering = true
				msg += " while the pods an interrupted run evicted come back"
				f = "none needed: the run evicts its pods once the workload is Ready again, within --drain-timeout"
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
