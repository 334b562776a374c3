package plan

import (
	"fmt"
	"time"
)

// AutoscaledDrainBatch is how many blue nodes autoscaled blue/green drains at
// once after the wait period, as GKE does.
const AutoscaledDrainBatch = 20

// autoscaledBlueGreen is blue/green where the cluster autoscaler grows green
// from zero as blue's pods need room and may shrink cordoned blue; after the
// wait period the rest of blue is drained and blue deleted. No soak.
type autoscaledBlueGreen struct{ blueGreen }

func (autoscaledBlueGreen) Name() StrategyName { return StrategyAutoscaledBlueGreen }

func (autoscaledBlueGreen) Help() string {
	return "green starts at 0 and the cluster autoscaler grows it while blue, cordoned, shrinks; after --wait-period the rest of blue is drained"
}

func (autoscaledBlueGreen) Flags() []string {
	return []string{"wait-period", GreenGroupFlag, "no-wait"}
}

func (autoscaledBlueGreen) Plan(c *Planning) ([][]PlannedNode, error) {
	// The wait period stands where the pool soak is.
	planGreen(c, AutoscaledDrainBatch, 0, c.Input.BlueGreen.WaitPeriod)
	return fixedBatches(c.Outdated, AutoscaledDrainBatch), nil
}

func (autoscaledBlueGreen) Steps(p *Plan) []Step {
	var s steps
	s.prepare(p)
	bg, c := p.BlueGreen, p.Cloud
	s.add("CreateGreen", fmt.Sprintf("a new %s %s at 0 nodes (max %d), grown by the cluster autoscaler; blue may shrink to 0", c.GroupKind, bg.Green, c.Before.Max), 0)
	s.add("CordonBlue", fmt.Sprintf("cordon the %d blue nodes", p.Nodes.Outdated), 0)
	s.add("WaitPeriod", fmt.Sprintf("%s for the autoscaler to remove under-used blue nodes (not those running safe-to-evict=false pods)", time.Duration(bg.NodePoolSoak)), time.Duration(bg.NodePoolSoak))
	s.add("DrainBlue", fmt.Sprintf("the blue nodes left, %d at a time, PDBs honoured up to 1h, grace up to 24h", AutoscaledDrainBatch), time.Duration(len(p.Batches))*(p.DrainTime()+p.JoinTime()))
	s.add("DeleteBlue", "delete the blue "+c.GroupKind+renamed(bg, c.GroupKind), 0)
	return s
}

func (autoscaledBlueGreen) Traits() Traits {
	// GKE honours PDBs for up to an hour, then deletes with up to 24h of
	// grace; cannot be rolled back.
	return Traits{DefaultMaxUnavailable: "1", DrainTimeout: time.Hour, DeleteAtTimeout: true, MaxGrace: 24 * time.Hour,
		OutdatedHeldOff: true, WholeGroup: true, GreenFromZero: true}
}

// ResumeAt goes to blue's deletion where blue/green's would go to the
// soak: the wait period is for the autoscaler to remove blue's nodes, and
// none is left.
func (autoscaledBlueGreen) ResumeAt(recorded Phase, f Flow) Phase {
	at := blueGreen{}.ResumeAt(recorded, f)
	if at == PhaseSoak && recorded != PhaseSoak {
		return PhaseDeleteBlue
	}
	return at
}

func (autoscaledBlueGreen) Next(s State, f Flow) State {
	switch s.Phase {
	case PhaseCordonBlue:
		return State{Phase: PhaseSoak}
	case PhaseSoak:
		// The wait period is over: drain what the autoscaler left of blue,
		// with no room check (the autoscaler makes room).
		if f.Batches > 0 {
			return State{Phase: PhaseDrain}
		}
		return State{Phase: PhaseDeleteBlue, Batch: s.Batch}
	case PhaseRecover:
		if s.Batch+1 < f.Batches {
			return State{Phase: PhaseDrain, Batch: s.Batch + 1}
		}
		return State{Phase: PhaseDeleteBlue, Batch: s.Batch}
	}
	return blueGreen{}.Next(s, f)
}
