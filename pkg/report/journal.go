// Package report keeps what a run did, node by node, for "kubectl
// nodeupgrade report": a Journal the run writes as it goes (each node's
// milestones, each refused eviction with its pod and PDB, the phases),
// a History of the last runs bounded in size to live in one ConfigMap, and
// the Report read from it (per batch and per phase durations, the top
// blockers, the estimate against what happened). It is pure: no client.
package report

import (
	"slices"
	"sync"
	"time"
)

// Node is one node's timeline in a run.
type Node struct {
	Name string `json:"name"`
	// Batch is the attempt's batch (1-based) that drained the node; 0
	// for a node it did not drain, or drained outside batches (a
	// scale-down).
	Batch int `json:"batch,omitempty"`
	// The milestones, each the first time it happened.
	Tainted    *time.Time `json:"tainted,omitempty"`
	DrainStart *time.Time `json:"drainStart,omitempty"`
	Drained    *time.Time `json:"drained,omitempty"`
	Cordoned   *time.Time `json:"cordoned,omitempty"`
	Removed    *time.Time `json:"removed,omitempty"`
	// Replacement is the new node counted as this one's: the first to be
	// Ready after its removal, not counted for another. The report pairs
	// them when it is shown (PairReplacements); a History written before
	// attempts may hold them.
	Replacement      string     `json:"replacement,omitempty"`
	ReplacementReady *time.Time `json:"replacementReady,omitempty"`
	// Blocks are the refused evictions, one per pod and PDB: from the
	// first refusal to the pod's leaving (or the end of what was
	// recorded).
	Blocks []Block `json:"blocks,omitempty"`
}

// Block is a pod whose eviction a PDB refused, and for how long.
type Block struct {
	Pod      string    `json:"pod"` // namespace/name
	PDB      string    `json:"pdb"` // namespace/name; "" when the refusal named none
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Refusals int       `json:"refusals"`
	open     bool
}

// Held is how long the block held its node.
func (b Block) Held() time.Duration { return b.To.Sub(b.From) }

// Journal collects a run attempt's timeline; its methods are safe for the
// run's goroutines and do nothing on a nil Journal.
type Journal struct {
	mu      sync.Mutex
	now     func() time.Time
	started time.Time
	nodes   map[string]*Node
	order   []string
	phases  map[string]time.Duration
	spans   []BatchSpan
	phase   string
	cur     int // 1-based batch of the phase, 0 none
	since   time.Time
	// changed is told, outside the lock, of each change a report shows:
	// a phase entered, a milestone, a block begun or ended.
	changed func()
}

// OnChange has f told of each change a report shows (a phase entered, a
// node's milestone, a refused eviction begun or ended), not of a block's
// repeated refusals: the run writes its report then, and a run killed
// loses no more than what was not written yet.
func (j *Journal) OnChange(f func()) {
	if j != nil {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.changed = f
	}
}

// unlockTelling unlocks j and, if it changed, tells OnChange's f.
func (j *Journal) unlockTelling(changed bool) {
	f := j.changed
	j.mu.Unlock()
	if changed && f != nil {
		f()
	}
}

// NewJournal starts a journal of an attempt, on the clock now.
func NewJournal(now func() time.Time) *Journal {
	return &Journal{now: now, started: now(), nodes: map[string]*Node{}, phases: map[string]time.Duration{}}
}

func (j *Journal) node(name string) *Node {
	n, ok := j.nodes[name]
	if !ok {
		n = &Node{Name: name}
		j.nodes[name] = n
		j.order = append(j.order, name)
	}
	return n
}

// stamp sets field to at, unless set: it reports whether it did.
func stamp(field **time.Time, at time.Time) bool {
	if *field != nil {
		return false
	}
	t := at.UTC().Truncate(time.Second)
	*field = &t
	return true
}

// The waits a run's journal counts as phases of their own: they come
// before the state they hold is entered, and would otherwise be counted
// in the phase before it.
const (
	PhaseWaveSoak   = "WaveSoak"   // the soak before a gated wave, and its gates
	PhaseWindowWait = "WindowWait" // a wait for a maintenance window to open
)

// Enter notes the run entering phase (of batch, 1-based; 0 none).
func (j *Journal) Enter(phase string, batch int) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.unlockTelling(true)
	now := j.now()
	j.closePhase(now)
	j.phase, j.cur, j.since = phase, batch, now
	if batch > 0 && (len(j.spans) == 0 || j.spans[len(j.spans)-1].Batch != batch) {
		j.spans = append(j.spans, BatchSpan{Batch: batch, From: now.UTC().Truncate(time.Second)})
	}
}

func (j *Journal) closePhase(now time.Time) {
	if j.phase == "" {
		return
	}
	j.phases[j.phase] += now.Sub(j.since)
	if n := len(j.spans); n > 0 && j.spans[n-1].Batch == j.cur {
		j.spans[n-1].To = now.UTC().Truncate(time.Second)
	}
}

// Node reasons the run records as Kubernetes Events on nodes, and the
// milestone each is.
const (
	ReasonTainted  = "NodeUpgradeTainted"
	ReasonDraining = "NodeUpgradeDraining"
	ReasonDrained  = "NodeUpgradeDrained"
	ReasonCordoned = "NodeUpgradeCordoned"
	ReasonRemoved  = "NodeUpgradeRemoved"
)

// NodeEvent notes a node's milestone by the reason of the run's Event.
func (j *Journal) NodeEvent(node, reason string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	n, now := j.node(node), j.now()
	changed := true
	switch reason {
	case ReasonTainted:
		changed = stamp(&n.Tainted, now)
	case ReasonDraining:
		changed = stamp(&n.DrainStart, now)
		j.drainedIn(n)
	case ReasonDrained:
		changed = stamp(&n.Drained, now)
		j.drainedIn(n)
		j.release(n, "", now)
	case ReasonCordoned:
		changed = stamp(&n.Cordoned, now)
	case ReasonRemoved:
		changed = stamp(&n.Removed, now)
	}
	j.unlockTelling(changed)
}

// drainedIn gives n the batch under way, which drains it: a node the
// attempt only tainted, left for a later one, or drained outside batches
// (a scale-down) shows none.
func (j *Journal) drainedIn(n *Node) {
	if n.Batch == 0 {
		n.Batch = j.cur
	}
}

// Blocked notes a refused eviction of pod on node by pdb ("" none named):
// a new block, or one more refusal of the open one.
func (j *Journal) Blocked(node, pod, pdb string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	n, now := j.node(node), j.now().UTC()
	for i := range n.Blocks {
		if b := &n.Blocks[i]; b.open && b.Pod == pod && b.PDB == pdb {
			b.Refusals++
			b.To = now
			j.unlockTelling(false)
			return
		}
	}
	n.Blocks = append(n.Blocks, Block{Pod: pod, PDB: pdb, From: now, To: now, Refusals: 1, open: true})
	j.unlockTelling(true)
}

// Left notes pod gone from node (evicted or deleted): its blocks end.
func (j *Journal) Left(node, pod string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.unlockTelling(j.release(j.node(node), pod, j.now()))
}

// release ends the open blocks of pod ("" every pod) on n at now, and
// reports whether any was open.
func (j *Journal) release(n *Node, pod string, now time.Time) bool {
	ended := false
	for i := range n.Blocks {
		if b := &n.Blocks[i]; b.open && (pod == "" || b.Pod == pod) {
			b.open, b.To = false, now.UTC()
			ended = true
		}
	}
	return ended
}

// Attempt is the attempt so far, as the History keeps it: open blocks
// and the phase under way counted up to now, its last word.
func (j *Journal) Attempt() Attempt {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	a := Attempt{StartedAt: j.started.UTC(), LastSeen: now.UTC(), Phases: map[string]Duration{}}
	for k, d := range j.phases {
		a.Phases[k] = Duration(d)
	}
	if j.phase != "" {
		a.Phases[j.phase] += Duration(now.Sub(j.since))
	}
	a.Batches = slices.Clone(j.spans)
	if n := len(a.Batches); n > 0 && a.Batches[n-1].Batch == j.cur && j.cur > 0 {
		a.Batches[n-1].To = now.UTC().Truncate(time.Second)
	}
	for _, name := range j.order {
		n := *j.nodes[name]
		n.Blocks = slices.Clone(n.Blocks)
		for i := range n.Blocks {
			if n.Blocks[i].open {
				n.Blocks[i].To, n.Blocks[i].open = now.UTC(), false
			}
		}
		a.Nodes = append(a.Nodes, n)
	}
	return a
}
