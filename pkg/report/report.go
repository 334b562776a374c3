package report

import (
	"cmp"
	"slices"
	"time"
)

// Replacement is a node of the group that joined during a run: when it
// was Ready.
type Replacement struct {
	Name  string
	Ready time.Time
}

// PairReplacements counts each removed node's replacement: in order of
// removal, the first new node Ready after it that no earlier removal took.
func (r *Run) PairReplacements(fresh []Replacement) {
	fresh = slices.Clone(fresh)
	slices.SortFunc(fresh, func(a, b Replacement) int { return a.Ready.Compare(b.Ready) })
	taken := map[string]bool{}
	for _, n := range r.Nodes {
		taken[n.Replacement] = n.Replacement != ""
	}
	idx := make([]int, 0, len(r.Nodes))
	for i, n := range r.Nodes {
		if n.Removed != nil && n.Replacement == "" {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return r.Nodes[a].Removed.Compare(*r.Nodes[b].Removed) })
	for _, i := range idx {
		for _, f := range fresh {
			if !taken[f.Name] && !f.Ready.Before(*r.Nodes[i].Removed) {
				taken[f.Name] = true
				ready := f.Ready.UTC()
				r.Nodes[i].Replacement, r.Nodes[i].ReplacementReady = f.Name, &ready
				break
			}
		}
	}
}

// Report is what "report" shows of a node group's runs, newest first.
type Report struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	NodeGroup  string      `json:"nodeGroup"`
	Runs       []RunReport `json:"runs"`
}

// RunReport is one run: its timelines and what they add up to.
type RunReport struct {
	Run
	// Took is from the start to the end (or the last record).
	Took Duration `json:"took"`
	// PhaseTotals are the phases by time spent, longest first.
	PhaseTotals []PhaseTotal `json:"phaseTotals,omitempty"`
	// Blockers are the pods and PDBs that held nodes longest.
	Blockers []Blocker `json:"blockers,omitempty"`
}

// PhaseTotal is the time a run spent in a phase, over its batches.
type PhaseTotal struct {
	Phase string   `json:"phase"`
	Took  Duration `json:"took"`
}

// Blocker is a pod a PDB kept on a node: how long in all.
type Blocker struct {
	Node     string   `json:"node"`
	Pod      string   `json:"pod"`
	PDB      string   `json:"pdb"`
	Held     Duration `json:"held"`
	Refusals int      `json:"refusals"`
}

// TopBlockers is how many blockers a report lists.
const TopBlockers = 10

// Of is the report of h's runs of group; updated is when the last run
// was last recorded (for the duration of a run not finished).
func Of(group string, h History, updated time.Time) Report {
	rep := Report{APIVersion: "nodeupgrade.dev/v1alpha1", Kind: "UpgradeReport", NodeGroup: group, Runs: []RunReport{}}
	for i, run := range h.Runs {
		end := updated
		if run.FinishedAt != nil {
			end = *run.FinishedAt
		} else if i > 0 {
			end = lastMark(run)
		}
		rep.Runs = append(rep.Runs, summarize(run, end))
	}
	return rep
}

// lastMark is the last time a run recorded.
func lastMark(r Run) time.Time {
	t := r.StartedAt
	for _, b := range r.Batches {
		t = latest(t, b.To)
	}
	for _, n := range r.Nodes {
		for _, m := range []*time.Time{n.Tainted, n.DrainStart, n.Drained, n.Cordoned, n.Removed, n.ReplacementReady} {
			if m != nil {
				t = latest(t, *m)
			}
		}
	}
	return t
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func summarize(run Run, end time.Time) RunReport {
	rr := RunReport{Run: run}
	if end.After(run.StartedAt) {
		rr.Took = Duration(end.Sub(run.StartedAt).Truncate(time.Second))
	}
	for phase, d := range run.Phases {
		rr.PhaseTotals = append(rr.PhaseTotals, PhaseTotal{Phase: phase, Took: Duration(time.Duration(d).Truncate(time.Second))})
	}
	slices.SortFunc(rr.PhaseTotals, func(a, b PhaseTotal) int {
		return cmp.Or(cmp.Compare(b.Took, a.Took), cmp.Compare(a.Phase, b.Phase))
	})
	rr.Blockers = blockers(run)
	return rr
}

// blockers are the run's blocks summed by node, pod and PDB, longest
// first, at most TopBlockers.
func blockers(run Run) []Blocker {
	type key struct{ node, pod, pdb string }
	sum := map[key]*Blocker{}
	var out []*Blocker
	for _, n := range run.Nodes {
		for _, b := range n.Blocks {
			k := key{n.Name, b.Pod, b.PDB}
			if sum[k] == nil {
				sum[k] = &Blocker{Node: n.Name, Pod: b.Pod, PDB: b.PDB}
				out = append(out, sum[k])
			}
			sum[k].Held += Duration(b.Held())
			sum[k].Refusals += b.Refusals
		}
	}
	slices.SortStableFunc(out, func(a, b *Blocker) int { return cmp.Compare(b.Held, a.Held) })
	var top []Blocker
	for _, b := range out[:min(len(out), TopBlockers)] {
		top = append(top, *b)
	}
	return top
}
