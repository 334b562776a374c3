package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// unlimited is the budget of a workload the batch order cannot protect: one
// replica, or a PDB that allows nothing (a blocker the audit reports).
const unlimited = -1

// workloads knows, for batch ordering, which workload each pod of the
// outdated nodes belongs to and how many of its replicas may go at once.
// Workloads are numbered as they are first seen: the batch order counts
// them for every node it considers, and an int keys a map fastest.
type workloads struct {
	perNode map[string][]podsOf // node -> its pods by workload
	budget  []int               // workload -> replicas that may be down at once
	refs    []workloadRef       // workload -> its name
}

// podsOf is how many pods of a node workload w has.
type podsOf struct{ w, pods int }

// workloadRef names a workload.
type workloadRef struct{ kind, namespace, name string }

func (r workloadRef) String() string { return r.kind + "/" + r.namespace + "/" + r.name }

// label names the workload in a note: `Kind "ns/name"`.
func (r workloadRef) label() string { return fmt.Sprintf("%s %q", r.kind, r.namespace+"/"+r.name) }

func newWorkloads(snap snapshot.Cluster, podsByNode map[string][]*corev1.Pod) *workloads {
	rsOwner := check.DeploymentOwnersOf(snap.ReplicaSets, nil)
	w := &workloads{perNode: make(map[string][]podsOf, len(podsByNode))}
	ids := map[workloadRef]int{}
	var replicas, allowed []int
	pdbs := drain.NewPDBIndex(snap.PDBs)
	for node, pods := range podsByNode {
		var counts []podsOf
		for _, pod := range pods {
			kind, ns, name := check.WorkloadOf(pod, rsOwner)
			if kind == "Pod" {
				continue // a bare pod is its own workload: nothing to balance
			}
			ref := workloadRef{kind, ns, name}
			id, seen := ids[ref]
			if !seen {
				id = len(w.refs)
				ids[ref] = id
				w.refs = append(w.refs, ref)
				replicas = append(replicas, 0)
				least := unlimited
				for _, pdb := range pdbs.ForPod(pod) {
					if a := int(pdb.Status.DisruptionsAllowed); least == unlimited || a < least {
						least = a
					}
				}
				allowed = append(allowed, least)
			}
			replicas[id]++
			if i := slices.IndexFunc(counts, func(c podsOf) bool { return c.w == id }); i >= 0 {
				counts[i].pods++
			} else {
				counts = append(counts, podsOf{w: id, pods: 1})
			}
		}
		w.perNode[node] = counts
	}
	w.budget = make([]int, len(w.refs))
	for id, n := range replicas {
		switch a := allowed[id]; {
		case a > 0:
			w.budget[id] = a
		case a == 0 || n < 2:
			w.budget[id] = unlimited
		default:
			w.budget[id] = n - 1 // no PDB: never take every replica at once
		}
	}
	return w
}

// fits reports whether adding node keeps every workload within its budget.
func (w *workloads) fits(node string, used map[int]int) bool {
	for _, c := range w.perNode[node] {
		if b := w.budget[c.w]; b != unlimited && used[c.w]+c.pods > b {
			return false
		}
	}
	return true
}

func (w *workloads) add(node string, used map[int]int) {
	for _, c := range w.perNode[node] {
		used[c.w] += c.pods
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
	used := map[int]int{} // the batch's pods by workload; one map, cleared, serves every batch
	for remaining := len(nodes); remaining > 0; {
		// The zone with the most nodes left goes first, so zones finish together.
		sort.SliceStable(zones, func(i, j int) bool {
			if len(byZone[zones[i]]) != len(byZone[zones[j]]) {
				return len(byZone[zones[i]]) > len(byZone[zones[j]])
			}
			return zones[i] < zones[j]
		})
		var batch []PlannedNode
		clear(used)
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

// overBudgetAnyOrder says which workloads some size nodes drained
// together, in any order (a service's own), take more replicas of than
// their budget: the most pods of each on any size of the nodes.
func (w *workloads) overBudgetAnyOrder(nodes []PlannedNode, size int, service string) []string {
	perWorkload := map[int][]int{}
	for _, n := range nodes {
		for _, c := range w.perNode[n.Name] {
			perWorkload[c.w] = append(perWorkload[c.w], c.pods)
		}
	}
	var notes []string
	for id, counts := range perWorkload {
		slices.SortFunc(counts, func(a, b int) int { return b - a })
		most := 0
		for _, c := range counts[:min(size, len(counts))] {
			most += c
		}
		if b := w.budget[id]; b != unlimited && most > b {
			notes = append(notes, fmt.Sprintf("the %s's service drains %s at once, in an order of its own: together they may hold %d pods of %s, more than the %d that may be down at once, and its drain then waits for replacements between evictions", service, Count(size, "node"), most, w.refs[id].label(), b))
		}
	}
	slices.Sort(notes)
	return notes
}

// overBudget says which batches take more replicas of a workload than its
// budget: there the drain waits for the PDB, and without a PDB the workload
// loses every replica at once. rounds is the most evictions one after
// another a batch's drain takes for it (Plan.DrainRounds), at least 1.
func (w *workloads) overBudget(batches [][]PlannedNode) (notes []string, rounds int) {
	rounds = 1
	used := map[int]int{}
	for i, b := range batches {
		clear(used)
		for _, n := range b {
			w.add(n.Name, used)
		}
		var over []int
		for id, n := range used {
			if b := w.budget[id]; b != unlimited && n > b {
				over = append(over, id)
				rounds = max(rounds, (n+b-1)/max(b, 1))
			}
		}
		slices.SortFunc(over, func(a, b int) int { return strings.Compare(w.refs[a].String(), w.refs[b].String()) })
		for _, id := range over {
			notes = append(notes, fmt.Sprintf("batch %d takes %d pods of %s, more than the %d that may be down at once: the drain will wait for replacements between evictions", i+1, used[id], w.refs[id].label(), w.budget[id]))
		}
	}
	return notes, rounds
}
