package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// Duration marshals as a Go duration string ("1m30s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// String is the duration as Go writes it.
func (d Duration) String() string { return time.Duration(d).String() }

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

// Attempt is one go at a run (the first, a resume, a re-run after a kill,
// an in-cluster pod, a rollback) as the History keeps it: written whole by
// that attempt alone and never merged into another, so writing it again
// changes nothing. Its batches are numbered within it, as its plan did.
type Attempt struct {
	Kind string `json:"kind,omitempty"`
	// Pod is the in-cluster Job's pod that made the attempt.
	Pod       string    `json:"pod,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// EndedAt is when it ended; nil while it runs, or when it was killed
	// before it could say: LastSeen, its last write, is then its end.
	EndedAt  *time.Time `json:"endedAt,omitempty"`
	LastSeen time.Time  `json:"lastSeen"`
	// Outcome is how it ended, in status's words; Error the error that
	// stopped it.
	Outcome string              `json:"outcome,omitempty"`
	Error   string              `json:"error,omitempty"`
	Phases  map[string]Duration `json:"phases,omitempty"`
	Batches []BatchSpan         `json:"batches,omitempty"`
	Nodes   []Node              `json:"nodes,omitempty"`
	// Fresh are the group's nodes that joined since the run started and
	// were Ready when the attempt last wrote: the report pairs the nodes
	// any attempt removed with them (a replacement may come up in the
	// attempt after the one that removed its node).
	Fresh []Replacement `json:"fresh,omitempty"`
}

// End is when the attempt ended, or its last word.
func (a Attempt) End() time.Time {
	if a.EndedAt != nil {
		return *a.EndedAt
	}
	return a.LastSeen
}

// Run is one run, its attempts in order, as the History keeps it.
type Run struct {
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// UpdatedAt is the run's last word: a run not finished is timed to it.
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// Outcome is how the run stands, in status's words.
	Outcome  string `json:"outcome,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	// Estimate is the first plan's estimate of the run's duration (a later
	// attempt's plan estimates only what was left to it).
	Estimate Duration `json:"estimate,omitempty"`
	// Soak is the part of Estimate that is the node-pool soak, which
	// "complete" ends early.
	Soak     Duration  `json:"soak,omitempty"`
	Attempts []Attempt `json:"attempts"`
	// Trimmed counts the blocks left out to keep the History within
	// MaxBytes (the shortest go first), TrimmedAttempts the attempts whose
	// node timelines went after them (the oldest first).
	Trimmed         int `json:"trimmed,omitempty"`
	TrimmedAttempts int `json:"trimmedAttempts,omitempty"`
	// Surges are the run's --make-room surges, from its record.
	Surges []Surge `json:"surges,omitempty"`
	// Gates are the verdicts of the gates before its waves, from its record.
	Gates []GateVerdict `json:"gates,omitempty"`
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

// With is h with attempt a of run (whose own attempts are ignored): in
// place of the attempt that started when a did, else after the run's
// others; the run's other fields replace those h had (its gates only
// when it has some: an attempt's writes before its end carry none). A run h lacks is
// the newest. h is not changed: its slices are copied where they differ.
func (h History) With(run Run, a Attempt) History {
	runs := slices.Clone(h.Runs)
	i := slices.IndexFunc(runs, func(r Run) bool { return r.StartedAt.Equal(run.StartedAt) })
	if i < 0 {
		runs = append([]Run{{}}, runs...)
		i = 0
	} else {
		run.Attempts = runs[i].Attempts
		if runs[i].Estimate > 0 {
			// The run is measured against its first plan: a later
			// attempt's plan estimates only what was left to it.
			run.Estimate, run.Soak = runs[i].Estimate, runs[i].Soak
		}
		run.Trimmed, run.TrimmedAttempts = runs[i].Trimmed, runs[i].TrimmedAttempts
		if run.Gates == nil {
			run.Gates = runs[i].Gates // an attempt's write before its end keeps its run's verdicts
		}
	}
	attempts := slices.Clone(run.Attempts)
	if k := slices.IndexFunc(attempts, func(b Attempt) bool { return b.StartedAt.Equal(a.StartedAt) }); k >= 0 {
		attempts[k] = a
	} else {
		attempts = append(attempts, a)
	}
	run.Attempts = attempts
	runs[i] = run
	return History{Runs: runs}
}

// Encode is h within MaxRuns and MaxBytes: the oldest runs go first;
// then, of the newest alone, its shortest blocks where leaving them out
// is enough, else its oldest attempts' node timelines (then the blocks of
// the last). h is not changed.
func (h History) Encode() ([]byte, error) {
	runs := h.Runs[:min(len(h.Runs), MaxRuns)]
	for {
		data, err := json.Marshal(History{Runs: runs})
		if err != nil || len(data) <= MaxBytes {
			return data, err
		}
		if len(runs) > 1 {
			runs = runs[:len(runs)-1]
			continue
		}
		excess := len(data) - MaxBytes
		run, ok := runs[0], false
		if _, size := blockBytes(run); size < excess {
			run, ok = trimAttempt(run)
		}
		if !ok {
			if run, ok = trimBlocks(run, excess); !ok {
				return data, nil // nothing left to trim: the last attempt's timelines alone
			}
		}
		runs = []Run{run}
	}
}

// blockBytes is how many blocks r has and their JSON size.
func blockBytes(r Run) (count, size int) {
	for _, a := range r.Attempts {
		for _, n := range a.Nodes {
			if len(n.Blocks) == 0 {
				continue
			}
			count += len(n.Blocks)
			if data, err := json.Marshal(n.Blocks); err == nil {
				size += len(data)
			}
		}
	}
	return count, size
}

// trimAttempt is r without the node timelines of its oldest attempt that
// has any but the last; false when none has.
func trimAttempt(r Run) (Run, bool) {
	for k, a := range r.Attempts[:max(len(r.Attempts)-1, 0)] {
		if len(a.Nodes) > 0 {
			r.Attempts = slices.Clone(r.Attempts)
			r.Attempts[k].Nodes = nil
			r.TrimmedAttempts++
			return r, true
		}
	}
	return r, false
}

// blockRef is a block of a run: its attempt, node and index.
type blockRef struct{ attempt, node, block int }

// trimBlocks is r without its shortest blocks, about enough for excess
// bytes; false when it has none left. r's slices are copied, not changed.
func trimBlocks(r Run, excess int) (Run, bool) {
	var refs []blockRef
	for a, at := range r.Attempts {
		for i, n := range at.Nodes {
			for k := range n.Blocks {
				refs = append(refs, blockRef{a, i, k})
			}
		}
	}
	if len(refs) == 0 {
		return r, false
	}
	_, size := blockBytes(r)
	held := func(x blockRef) time.Duration { return r.Attempts[x.attempt].Nodes[x.node].Blocks[x.block].Held() }
	slices.SortStableFunc(refs, func(a, b blockRef) int { return cmp.Compare(held(a), held(b)) })
	drop := min(len(refs), excess/max(size/len(refs), 1)+1)
	gone := map[blockRef]bool{}
	for _, x := range refs[:drop] {
		gone[x] = true
	}
	attempts := slices.Clone(r.Attempts)
	for a := range attempts {
		nodes := slices.Clone(attempts[a].Nodes)
		for i := range nodes {
			var kept []Block
			for k, b := range nodes[i].Blocks {
				if !gone[blockRef{a, i, k}] {
					kept = append(kept, b)
				}
			}
			nodes[i].Blocks = kept
		}
		attempts[a].Nodes = nodes
	}
	r.Attempts, r.Trimmed = attempts, r.Trimmed+drop
	return r, true
}

// legacyRun is a Run as versions before attempts wrote it: every attempt
// merged, "attempts" their count.
type legacyRun struct {
	Attempts json.RawMessage     `json:"attempts"`
	Phases   map[string]Duration `json:"phases"`
	Batches  []BatchSpan         `json:"batches"`
	Nodes    []Node              `json:"nodes"`
}

// UnmarshalJSON reads a Run, and one an earlier version wrote as a single
// attempt of unknown kind: the report of a run resumed across an upgrade
// of the plugin still reads.
func (r *Run) UnmarshalJSON(data []byte) error {
	type plain Run
	var legacy legacyRun
	if err := json.Unmarshal(data, &legacy); err != nil {
		return err
	}
	if a := bytes.TrimSpace(legacy.Attempts); len(a) == 0 || a[0] == '[' || string(a) == "null" {
		return json.Unmarshal(data, (*plain)(r))
	}
	var p struct {
		plain
		Attempts json.RawMessage `json:"attempts"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*r = Run(p.plain)
	a := Attempt{StartedAt: r.StartedAt, EndedAt: r.FinishedAt, Outcome: r.Outcome, Phases: legacy.Phases, Batches: legacy.Batches, Nodes: legacy.Nodes}
	a.LastSeen = lastMark(a)
	r.Attempts = []Attempt{a}
	return nil
}

// lastMark is the last time an attempt recorded.
func lastMark(a Attempt) time.Time {
	t := a.StartedAt
	for _, b := range a.Batches {
		t = latest(t, b.To)
	}
	for _, n := range a.Nodes {
		for _, m := range []*time.Time{n.Tainted, n.DrainStart, n.Drained, n.Cordoned, n.Removed, n.ReplacementReady} {
			if m != nil {
				t = latest(t, *m)
			}
		}
		for _, b := range n.Blocks {
			t = latest(t, b.To)
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
