package report

import (
	"cmp"
	"slices"
	"time"
)

// Replacement is a node of the group that joined during a run: when it
// was Ready.
type Replacement struct {
	Name  string    `json:"name"`
	Ready time.Time `json:"ready"`
}

// PairReplacements gives each removed node of nodes its replacement: in
// order of removal, the first fresh node Ready after it that no earlier
// removal took (nor a pairing recorded before). nodes are changed in
// place.
func PairReplacements(nodes []*Node, fresh []Replacement) {
	fresh = slices.Clone(fresh)
	slices.SortStableFunc(fresh, func(a, b Replacement) int { return a.Ready.Compare(b.Ready) })
	taken := map[string]bool{}
	var removed []*Node
	for _, n := range nodes {
		if n.Replacement != "" {
			taken[n.Replacement] = true
		} else if n.Removed != nil {
			removed = append(removed, n)
		}
	}
	slices.SortStableFunc(removed, func(a, b *Node) int { return a.Removed.Compare(*b.Removed) })
	for _, n := range removed {
		for _, f := range fresh {
			if !taken[f.Name] && !f.Ready.Before(*n.Removed) {
				taken[f.Name] = true
				ready := f.Ready.UTC()
				n.Replacement, n.ReplacementReady = f.Name, &ready
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

// RunReport is one run: its attempts, their timelines, and what they add
// up to, computed from them each time it is shown.
type RunReport struct {
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	Outcome    string     `json:"outcome,omitempty"`
	Strategy   string     `json:"strategy,omitempty"`
	// Estimate is the run's first plan's (a later attempt plans only
	// what is left), Soak of it the node-pool soak.
	Estimate Duration `json:"estimate,omitempty"`
	Soak     Duration `json:"soak,omitempty"`
	// Took is the run's wall time: from its start to its end, or its last
	// word, across its attempts and the pauses between them.
	Took     Duration        `json:"took"`
	Attempts []AttemptReport `json:"attempts"`
	// PhaseTotals are the phases by time spent over every attempt,
	// longest first: their sum is at most Took.
	PhaseTotals []PhaseTotal `json:"phaseTotals,omitempty"`
	// Blockers are the pods and PDBs that held nodes longest.
	Blockers []Blocker    `json:"blockers,omitempty"`
	Batches  []BatchRow   `json:"batches,omitempty"`
	Nodes    []NodeReport `json:"nodes,omitempty"`
	// Trimmed and TrimmedAttempts: see Run.
	Trimmed         int `json:"trimmed,omitempty"`
	TrimmedAttempts int `json:"trimmedAttempts,omitempty"`
	// Surges are what --make-room scaled up, per workload.
	Surges []Surge `json:"surges,omitempty"`
	// Gates are the gates' verdicts before each wave (--waves, --gate).
	Gates []GateVerdict `json:"gates,omitempty"`
}

// AttemptReport is one attempt of a run: what it was, when, how long,
// how it ended.
type AttemptReport struct {
	Attempt   int        `json:"attempt"` // 1-based, in order
	Kind      string     `json:"kind,omitempty"`
	Pod       string     `json:"pod,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	LastSeen  time.Time  `json:"lastSeen"`
	Took      Duration   `json:"took"`
	Batches   int        `json:"batches"`
	Outcome   string     `json:"outcome,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// BatchRow is a batch of an attempt.
type BatchRow struct {
	Attempt int `json:"attempt"`
	BatchSpan
}

// NodeReport is a node's timeline in an attempt.
type NodeReport struct {
	Attempt int `json:"attempt"`
	Node
}

// PhaseTotal is the time a run spent in a phase, over its attempts.
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

// Of is the report of h's runs of group.
func Of(group string, h History) Report {
	rep := Report{APIVersion: "nodeupgrade.dev/v1alpha1", Kind: "UpgradeReport", NodeGroup: group, Runs: []RunReport{}}
	for _, run := range h.Runs {
		rep.Runs = append(rep.Runs, summarize(run))
	}
	return rep
}

// End is when run ended (finished, aborted), or else its last word: the
// latest its record or any of its attempts wrote.
func (r Run) End() time.Time {
	end := latest(r.StartedAt, r.UpdatedAt)
	if r.FinishedAt != nil {
		end = latest(r.StartedAt, *r.FinishedAt) // the record may be written after, not the run
	}
	for _, a := range r.Attempts {
		end = latest(end, a.End())
	}
	return end
}

func summarize(run Run) RunReport {
	rr := RunReport{StartedAt: run.StartedAt, FinishedAt: run.FinishedAt, Outcome: run.Outcome, Strategy: run.Strategy, Estimate: run.Estimate, Soak: run.Soak,
		Took: Duration(run.End().Sub(run.StartedAt).Truncate(time.Second)), Attempts: []AttemptReport{},
		Trimmed: run.Trimmed, TrimmedAttempts: run.TrimmedAttempts, Surges: run.Surges, Gates: run.Gates}
	totals := map[string]time.Duration{}
	var nodes []*Node
	var fresh []Replacement
	for i, a := range run.Attempts {
		rr.Attempts = append(rr.Attempts, AttemptReport{Attempt: i + 1, Kind: a.Kind, Pod: a.Pod, StartedAt: a.StartedAt, EndedAt: a.EndedAt, LastSeen: a.LastSeen,
			Took: Duration(max(a.End().Sub(a.StartedAt), 0).Truncate(time.Second)), Batches: len(a.Batches), Outcome: attemptOutcome(run, i), Error: a.Error})
		for phase, d := range a.Phases {
			totals[phase] += time.Duration(d)
		}
		for _, b := range a.Batches {
			rr.Batches = append(rr.Batches, BatchRow{Attempt: i + 1, BatchSpan: b})
		}
		for _, n := range a.Nodes {
			rr.Nodes = append(rr.Nodes, NodeReport{Attempt: i + 1, Node: n})
		}
		fresh = append(fresh, a.Fresh...)
	}
	for i := range rr.Nodes {
		nodes = append(nodes, &rr.Nodes[i].Node)
	}
	PairReplacements(nodes, fresh)
	for phase, d := range totals {
		rr.PhaseTotals = append(rr.PhaseTotals, PhaseTotal{Phase: phase, Took: Duration(d.Truncate(time.Second))})
	}
	slices.SortFunc(rr.PhaseTotals, func(a, b PhaseTotal) int {
		return cmp.Or(cmp.Compare(b.Took, a.Took), cmp.Compare(a.Phase, b.Phase))
	})
	rr.Blockers = blockers(rr.Nodes)
	return rr
}

// attemptOutcome is how the run's attempt i ended: as it said, else, the
// last, as the run stands, and an earlier one, killed before it could say
// (status's "interrupted").
func attemptOutcome(run Run, i int) string {
	switch {
	case run.Attempts[i].Outcome != "":
		return run.Attempts[i].Outcome
	case i == len(run.Attempts)-1:
		return run.Outcome
	}
	return "interrupted"
}

// blockers are the run's blocks summed by node, pod and PDB over its
// attempts, longest first, at most TopBlockers.
func blockers(nodes []NodeReport) []Blocker {
	type key struct{ node, pod, pdb string }
	sum := map[key]*Blocker{}
	var out []*Blocker
	for _, n := range nodes {
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
