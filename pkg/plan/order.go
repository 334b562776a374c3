package plan

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
)

// unlimited is the budget of a workload the batch order cannot protect: one
// replica, or a PDB that allows nothing (a blocker the audit reports).
const unlimited = -1

// workloads knows, for batch ordering, which workload each pod of the
// outdated nodes belongs to and how many of its replicas may go at once.
type workloads struct {
	perNode map[string]map[string]int // node -> workload -> pods
	budget  map[string]int            // workload -> replicas that may be down at once
	label   map[string]string         // workload -> `Kind "ns/name"`
}

func newWorkloads(snap Snapshot, podsByNode map[string][]*corev1.Pod) *workloads {
	rsOwner := map[string]string{}
	for i := range snap.ReplicaSets {
		rs := &snap.ReplicaSets[i]
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
			rsOwner[rs.Namespace+"/"+rs.Name] = ref.Name
		}
	}
	w := &workloads{perNode: map[string]map[string]int{}, budget: map[string]int{}, label: map[string]string{}}
	replicas := map[string]int{}
	allowed := map[string]int{}
	pdbs := drain.NewPDBIndex(snap.PDBs)
	for node, pods := range podsByNode {
		counts := map[string]int{}
		for _, pod := range pods {
			kind, ns, name := check.WorkloadOf(pod, rsOwner)
			if kind == "Pod" {
				continue // a bare pod is its own workload: nothing to balance
			}
			key := kind + "/" + ns + "/" + name
			counts[key]++
			replicas[key]++
			if _, seen := w.label[key]; !seen {
				w.label[key] = fmt.Sprintf("%s %q", kind, ns+"/"+name)
				allowed[key] = unlimited
				for _, pdb := range pdbs.ForPod(pod) {
					if a := int(pdb.Status.DisruptionsAllowed); allowed[key] == unlimited || a < allowed[key] {
						allowed[key] = a
					}
				}
			}
		}
		w.perNode[node] = counts
	}
	for key, n := range replicas {
		switch a := allowed[key]; {
		case a > 0:
			w.budget[key] = a
		case a == 0 || n < 2:
			w.budget[key] = unlimited
		default:
			w.budget[key] = n - 1 // no PDB: never take every replica at once
		}
	}
	return w
}

// fits reports whether adding node keeps every workload within its budget.
func (w *workloads) fits(node string, used map[string]int) bool {
	for key, n := range w.perNode[node] {
		if b := w.budget[key]; b != unlimited && used[key]+n > b {
			return false
		}
	}
	return true
}

func (w *workloads) add(node string, used map[string]int) {
	for key, n := range w.perNode[node] {
		used[key] += n
	}
}

// zoneBalanced builds batches of up to size nodes, each from as few zones as
// possible, preferring nodes that keep every workload within its budget.
// nodes is already in the seed's random order, which breaks ties.
func zoneBalanced(nodes []PlannedNode, size int, w *workloads) [][]PlannedNode {
	byZone := map[string][]PlannedNode{}
	var zones []string
	for _, n := range nodes {
		if _, ok := byZone[n.Zone]; !ok {
			zones = append(zones, n.Zone)
		}
		byZone[n.Zone] = append(byZone[n.Zone], n)
	}
	var batches [][]PlannedNode
	for remaining := len(nodes); remaining > 0; {
		// The zone with the most nodes left goes first, so zones finish together.
		sort.SliceStable(zones, func(i, j int) bool {
			if len(byZone[zones[i]]) != len(byZone[zones[j]]) {
				return len(byZone[zones[i]]) > len(byZone[zones[j]])
			}
			return zones[i] < zones[j]
		})
		var batch []PlannedNode
		used := map[string]int{}
		take := func(z string, i int) {
			n := byZone[z][i]
			batch = append(batch, n)
			w.add(n.Name, used)
			byZone[z] = slices.Delete(byZone[z], i, i+1)
			remaining--
		}
		for _, z := range zones {
			for i := 0; i < len(byZone[z]) && len(batch) < size; {
				if len(batch) == 0 || w.fits(byZone[z][i].Name, used) {
					take(z, i)
				} else {
					i++
				}
			}
		}
		// Fill the batch even where budgets are exceeded: the drain then
		// waits for the PDB instead of the batch shrinking.
		for _, z := range zones {
			for len(byZone[z]) > 0 && len(batch) < size {
				take(z, 0)
			}
		}
		batches = append(batches, batch)
	}
	return batches
}

// overBudget says which batches take more replicas of a workload than its
// budget: there the drain waits for the PDB, and without a PDB the workload
// loses every replica at once.
func (w *workloads) overBudget(batches [][]PlannedNode) []string {
	var notes []string
	for i, b := range batches {
		used := map[string]int{}
		for _, n := range b {
			w.add(n.Name, used)
		}
		keys := make([]string, 0, len(used))
		for k := range used {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if b := w.budget[k]; b != unlimited && used[k] > b {
				notes = append(notes, fmt.Sprintf("batch %d takes %d pods of %s, more than the %d that may be down at once: the drain will wait for replacements between evictions", i+1, used[k], w.label[k], b))
			}
		}
	}
	return notes
}
