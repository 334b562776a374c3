package upgrade

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// toolkit is what a strategy's run has of the engine: the steps it calls
// (drain a batch, wait for Ready, write nodes, record), the cloud group it
// resizes through the provider's contract, the hooks and the progress,
// and nothing of the run loop. The pointers are the engine's, set once in
// New; what changes during a run (its cluster view, the drainer, the nodes
// done, the note) is reached through methods.
type toolkit struct {
	engineTools
	cfg      *Config
	group    *cloudGroup
	nodes    *nodeWriter
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
	return toolkit{engineTools: e, cfg: &e.cfg, group: e.group, nodes: e.nodes, windows: e.windows, hooks: e.hooks, progress: e.progress}
}

// engineTools are the engine's methods the strategies' runs call.
type engineTools interface {
	// the run's record and log
	logf(format string, args ...any)
	save(ctx context.Context) error
	record(ctx context.Context, s plan.State) error
	markDone(names ...string)
	doneNodes() []string
	addNote(note string)
	setNote(note string)
	strategyName() plan.StrategyName
	planDescription() string
	groupKind() string
	templateVersion(version string) string
	batchLabel(i int) string
	// the batch steps
	batchNodesLeft(i int) []string
	drainBatch(ctx context.Context, i int) error
	removeBatch(ctx context.Context, i int) error
	removeBatchWith(ctx context.Context, i int, remove func(context.Context, string) (string, error)) error
	removeNode(ctx context.Context, name string) (string, error)
	waitRecovered(ctx context.Context, i int) error
	recoverAfter(ctx context.Context, i int, first func(context.Context) error) error
	// nodes: reads, writes and drains
	clusterView() *clusterView
	deregister(ctx context.Context, what string, names []string) error
	drainNodes(ctx context.Context, names []string) error
	reportDrainEvent(ctx context.Context, ev drain.Event)
	// waits
	awaitNodes(ctx context.Context, look func(ctx context.Context) (bool, error), failure func() *NodeCreationFailure) error
}

// markDone counts nodes as done by the run.
func (e *Engine) markDone(names ...string) { e.done = append(e.done, names...) }

// doneNodes are the nodes this run has done so far.
func (e *Engine) doneNodes() []string { return e.done }

// addNote adds to what the run wants the operator to know.
func (e *Engine) addNote(note string) { e.note = joinNote(e.note, note) }

// setNote replaces what the run wants the operator to know.
func (e *Engine) setNote(note string) { e.note = note }

// strategyName is what --strategy the run runs.
func (e *Engine) strategyName() plan.StrategyName { return e.strategy.Name() }

// clusterView is the run's view of the cluster; nil before the run
// watches it.
func (e *Engine) clusterView() *clusterView { return e.view }

// drainNodes drains names with the run's drainer (the batches' options).
func (e *Engine) drainNodes(ctx context.Context, names []string) error {
	_, err := e.drainer.DrainNodes(ctx, names)
	return err
}
