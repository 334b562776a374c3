package plan

import (
	"fmt"
	"time"
)

// eks is the EKS managed node group update, the default: scale the group up,
// taint every outdated node, drain them in batches of maxUnavailable, remove
// them, and scale the group back down one node at a time.
type eks struct{}

func (eks) Name() StrategyName { return StrategyEKS }

func (eks) Help() string {
	return "scale up, taint all outdated nodes, drain in batches, scale down"
}

func (eks) Flags() []string { return []string{"max-unavailable", "order", "taint"} }

func (eks) Needs(Input) Capability { return CapRemoveNodes }

func (eks) Validate(in Input, groupSize int) (int, error) {
	return ParseMaxUnavailable(in.MaxUnavailable, groupSize)
}

func (eks) Plan(c *Planning) ([][]PlannedNode, error) {
	p := c.Plan
	if cp := p.Cloud; resizes(cp) && (!cp.Resumed || cp.RescaleFrom != "") && len(c.Outdated) > 0 {
		cp.ScaleUp = ScaleUpCount(len(p.Zones), p.MaxUnavailable)
		cp.During.Desired += cp.ScaleUp
		cp.During.Max += cp.ScaleUp
	}
	outdated := deferSurplus(c)
	if p.Order == OrderZoneBalanced {
		w := newWorkloads(c.Snapshot, c.PodsByNode)
		batches := zoneBalanced(outdated, p.MaxUnavailable, w)
		if svc := c.Input.serviceRunning(StrategyEKS); svc != "" {
			p.Notes = append(p.Notes, w.overBudgetAnyOrder(outdated, p.MaxUnavailable, svc)...)
		} else {
			notes, rounds := w.overBudget(batches)
			p.Notes, p.DrainRounds = append(p.Notes, notes...), rounds
		}
		return batches, nil
	}
	return fixedBatches(outdated, p.MaxUnavailable), nil
}

func (eks) Steps(p *Plan) []Step {
	var s steps
	s.setup(p)
	c := p.Cloud
	switch {
	case c != nil && c.RescaleFrom != "" && c.ScaleUp > 0:
		s.add("ScaleUp", fmt.Sprintf("+%d nodes again (the interrupted run's were for version %s, outdated too): %s; wait for them Ready", c.ScaleUp, c.RescaleFrom, c.ResizeText(c.During.less(c.ScaleUp), c.During)), p.JoinTime())
	case c != nil && c.ScaleUp > 0:
		s.add("ScaleUp", fmt.Sprintf("+%d nodes: %s; wait for them Ready", c.ScaleUp, c.ResizeText(c.Before, c.During)), p.JoinTime())
	}
	if len(p.Batches) > 0 {
		s.add("Taint", fmt.Sprintf("%d outdated nodes %s", p.Nodes.Outdated, p.Taint), 0)
		s.add("Upgrade", fmt.Sprintf("%s of up to %s: drain, cordon, remove", Count(len(p.Batches), "batch"), Count(p.MaxUnavailable, "node")), time.Duration(len(p.Batches))*perBatchEstimate(p))
	}
	if resizes(c) && (c.ScaleUp > 0 || c.Resumed) {
		n := c.During.Desired - c.Before.Desired
		first := ""
		if d := len(p.Deferred); d > 0 {
			first = fmt.Sprintf(", the %s no batch replaces first", Count(d, "outdated node"))
		}
		s.add("ScaleDown", fmt.Sprintf("back to %s, one node at a time%s", c.SizeText(c.Before), first), scaleDownEstimate(p, int(n)))
	}
	return s
}

func (eks) Summary(p *Plan) string { return p.Strategy }

func (eks) Traits() Traits {
	return Traits{DefaultMaxUnavailable: "1", DrainTimeout: 15 * time.Minute, OutdatedHeldOff: true, ScalesGroup: true, Rollback: RollbackInPlace}
}

func (eks) First(f Flow) Phase {
	if f.CloudGroup {
		return PhaseSetup
	}
	return PhaseTaint
}

func (eks) Next(s State, f Flow) State {
	end := State{Phase: PhaseDone, Batch: s.Batch}
	if f.CloudGroup {
		end.Phase = PhaseScaleDown
	}
	if next, ok := batchNext(s, f, PhaseRoom, end); ok {
		return next
	}
	switch s.Phase {
	case PhaseSetup:
		return State{Phase: PhaseScaleUp}
	case PhaseScaleUp:
		return State{Phase: PhaseTaint}
	case PhaseTaint:
		if f.Batches > 0 {
			return State{Phase: PhaseRoom}
		}
		return end
	}
	return State{Phase: PhaseDone, Batch: s.Batch}
}

// ResumeAt finishes the scale-down of a run stopped in it.
func (eks) ResumeAt(recorded Phase, f Flow) Phase {
	if recorded == PhaseScaleDown && f.CloudGroup {
		return PhaseScaleDown
	}
	return ""
}
