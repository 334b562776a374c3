package upgrade

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// toolkit is what a strategy's run has of the engine: its parts, each
// holding what it uses (the batch steps, the node writes, the cloud group
// it resizes through the provider's contract, the waits for arrivals and
// windows, the hooks, the progress), the run's log and record, and
// nothing of the run loop. The pointers are set once in New; what a part
// gets only once the run watches the cluster (the view, the drainer) it
// keeps itself.
type toolkit struct {
	logf     func(format string, args ...any)
	save     func(ctx context.Context) error
	record   func(ctx context.Context, s plan.State) error
	cfg      *Config
	group    *cloudGroup
	nodes    *nodeWriter
	batches  *batchRun
	tally    *tally
	drains   *drainReport
	arrivals *arrivals
	words    cloudWords
	strategy plan.StrategyName
	windows  *windowWait
	hooks    hooks
	progress *progress
}

// hooks runs the plan's hooks around the nodes a step takes out
// (hookRunner).
type hooks interface {
	run(ctx context.Context, hook string, names []string) error
}

// toolkit is e's toolkit for its strategy's run.
func (e *Engine) toolkit() toolkit {
	return toolkit{logf: e.logf, save: e.save, record: e.record, cfg: &e.cfg, group: e.group, nodes: e.nodes, batches: e.batches, tally: e.tally, drains: e.drains, arrivals: e.arrivals, words: e.words, strategy: e.strategy.Name(), windows: e.windows, hooks: e.hooks, progress: e.progress}
}

// tally is what a run has done so far: the nodes it replaced and what it
// wants the operator to know.
type tally struct {
	done []string
	note string
}

// markDone counts nodes as done by the run.
func (t *tally) markDone(names ...string) { t.done = append(t.done, names...) }

// doneNodes are the nodes this run has done so far.
func (t *tally) doneNodes() []string { return t.done }

// addNote adds to what the run wants the operator to know.
func (t *tally) addNote(note string) { t.note = joinNote(t.note, note) }

// setNote replaces what the run wants the operator to know.
func (t *tally) setNote(note string) { t.note = note }

// drainNodes drains names with the run's drainer (the batches' options).
func (b *batchRun) drainNodes(ctx context.Context, names []string) error {
	_, err := b.drainer.DrainNodes(ctx, names)
	return err
}
