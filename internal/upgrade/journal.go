package upgrade

import (
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// journalEnter tells the report's journal the state entered.
func (e *Engine) journalEnter(s plan.State) {
	batch := 0
	if plan.BatchPhase(s.Phase) {
		batch = s.Batch + 1
	}
	e.cfg.Journal.Enter(string(s.Phase), batch)
}

// journalDrainEvent tells the report's journal a refused eviction (by each
// PDB that refused it) or a pod that left its node.
func (e *Engine) journalDrainEvent(ev drain.Event) {
	j := e.cfg.Journal
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
