package report

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// Duration marshals as a Go duration string ("1m30s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// BatchSpan is when a batch ran: from its first phase to its last.
type BatchSpan struct {
	Batch int       `json:"batch"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
}

// Run is one run (its attempts merged: a resume goes on with the same
// run) as the History keeps it.
type Run struct {
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// Outcome is how the last attempt ended: "finished", or what stopped it.
	Outcome  string `json:"outcome,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	// Estimate is the plan's estimate of the run's duration.
	Estimate Duration            `json:"estimate,omitempty"`
	Attempts int                 `json:"attempts"`
	Phases   map[string]Duration `json:"phases,omitempty"`
	Batches  []BatchSpan         `json:"batches,omitempty"`
	Nodes    []Node              `json:"nodes,omitempty"`
	// Trimmed counts the blocks left out to keep the History within
	// MaxBytes (the shortest go first).
	Trimmed int `json:"trimmed,omitempty"`
}

// Merge adds attempt (a later attempt of the same run) to r.
func (r *Run) Merge(attempt Run) {
	r.Attempts++
	r.FinishedAt, r.Outcome = attempt.FinishedAt, attempt.Outcome
	if attempt.Estimate > 0 && r.Estimate == 0 {
		r.Estimate = attempt.Estimate
	}
	if r.Phases == nil {
		r.Phases = map[string]Duration{}
	}
	for k, d := range attempt.Phases {
		r.Phases[k] += d
	}
	r.Batches = append(r.Batches, attempt.Batches...)
	byName := map[string]int{}
	for i, n := range r.Nodes {
		byName[n.Name] = i
	}
	for _, n := range attempt.Nodes {
		i, ok := byName[n.Name]
		if !ok {
			r.Nodes = append(r.Nodes, n)
			continue
		}
		mergeNode(&r.Nodes[i], n)
	}
}

// mergeNode keeps the first time of each milestone and every block.
func mergeNode(into *Node, n Node) {
	for _, f := range []struct{ dst, src **time.Time }{
		{&into.Tainted, &n.Tainted}, {&into.DrainStart, &n.DrainStart}, {&into.Drained, &n.Drained},
		{&into.Cordoned, &n.Cordoned}, {&into.Removed, &n.Removed}, {&into.ReplacementReady, &n.ReplacementReady},
	} {
		if *f.dst == nil {
			*f.dst = *f.src
		}
	}
	if into.Replacement == "" {
		into.Replacement = n.Replacement
	}
	if into.Batch == 0 {
		into.Batch = n.Batch
	}
	into.Blocks = append(into.Blocks, n.Blocks...)
}

// History is a node group's last runs, newest first.
type History struct {
	Runs []Run `json:"runs"`
}

// Bounds of a History: it lives in one ConfigMap (at most 1 MiB with its
// metadata), written at each batch's end; MaxBytes keeps it far below.
const (
	MaxRuns  = 5
	MaxBytes = 256 << 10
)

// Add records attempt of the run that started at startedAt: merged into
// that run where the History has it, else as the newest run.
func (h *History) Add(startedAt time.Time, attempt Run) {
	for i := range h.Runs {
		if h.Runs[i].StartedAt.Equal(startedAt) {
			h.Runs[i].Merge(attempt)
			return
		}
	}
	attempt.StartedAt, attempt.Attempts = startedAt, 1
	h.Runs = append([]Run{attempt}, h.Runs...)
}

// Encode writes h within MaxRuns and MaxBytes: the oldest runs go first,
// then, of the newest alone, the shortest blocks.
func (h *History) Encode() ([]byte, error) {
	if len(h.Runs) > MaxRuns {
		h.Runs = h.Runs[:MaxRuns]
	}
	for {
		data, err := json.Marshal(h)
		if err != nil || len(data) <= MaxBytes {
			return data, err
		}
		if len(h.Runs) > 1 {
			h.Runs = h.Runs[:len(h.Runs)-1]
			continue
		}
		if !trimBlocks(&h.Runs[0], len(data)-MaxBytes) {
			return data, nil // nothing left to trim: timelines alone
		}
	}
}

// trimBlocks drops the shortest blocks of r, about enough for excess
// bytes; false when it has none left.
func trimBlocks(r *Run, excess int) bool {
	type ref struct{ node, block int }
	var refs []ref
	for i, n := range r.Nodes {
		for k := range n.Blocks {
			refs = append(refs, ref{i, k})
		}
	}
	if len(refs) == 0 {
		return false
	}
	slices.SortFunc(refs, func(a, b ref) int {
		return cmp.Compare(r.Nodes[a.node].Blocks[a.block].Held(), r.Nodes[b.node].Blocks[b.block].Held())
	})
	drop := min(len(refs), excess/blockBytes(r, len(refs))+1)
	gone := map[ref]bool{}
	for _, x := range refs[:drop] {
		gone[x] = true
	}
	for i := range r.Nodes {
		var kept []Block
		for k, b := range r.Nodes[i].Blocks {
			if !gone[ref{i, k}] {
				kept = append(kept, b)
			}
		}
		r.Nodes[i].Blocks = kept
	}
	r.Trimmed += drop
	return true
}

// blockBytes is the JSON size of r's blocks, on average.
func blockBytes(r *Run, count int) int {
	size := 0
	for _, n := range r.Nodes {
		if data, err := json.Marshal(n.Blocks); err == nil {
			size += len(data)
		}
	}
	return max(size/count, 1)
}
