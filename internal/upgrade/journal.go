package upgrade

import (
	"sync/atomic"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
)

// drainReport tells what the drains do: in the log, as Events on nodes
// and pods, and in the report's journal; drained notes the run's first
// eviction (or pod deleted), after which a stopped run keeps its marks.
type drainReport struct {
	journal *report.Journal
	events  *Recorder
	color   output.Colorizer
	logf    func(format string, args ...any)
	drained atomic.Bool
}

// journalEnter tells the report's journal the state entered.
func (dr *drainReport) journalEnter(s plan.State) {
	batch := 0
	if plan.BatchPhase(s.Phase) {
		batch = s.Batch + 1
	}
	dr.journal.Enter(string(s.Phase), batch)
}

// journalDrainEvent tells the report's journal a refused eviction (by each
// PDB that refused it) or a pod that left its node.
func (dr *drainReport) journalDrainEvent(ev drain.Event) {
	j := dr.journal
	pod := ev.Namespace + "/" + ev.Pod
	switch ev.Type {
	case drain.EventBlocked:
		if len(ev.PDBs) == 0 {
			j.Blocked(ev.Node, pod, "")
		}
		for _, p := range ev.PDBs {
			j.Blocked(ev.Node, pod, p.Namespace+"/"+p.Name)
		}
	case drain.EventEvicted, drain.EventDeleted:
		j.Left(ev.Node, pod)
	}
}
