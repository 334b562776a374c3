package plan

import "fmt"

// shortLived is GKE's short-lived upgrade: the group is only pointed at the
// target; nothing is drained, and the old nodes run until they go away on
// their own.
type shortLived struct{}

func (shortLived) Name() StrategyName { return StrategyShortLived }

func (shortLived) Help() string {
	return "only point the group at the target: nothing is drained, old nodes go away on their own"
}

func (shortLived) Flags() []string { return []string{"max-age"} }

func (shortLived) Needs(Input) Capability { return CapResize }

func (shortLived) Validate(Input, int) (int, error) { return 0, nil }

// Plan lists the outdated nodes as left running: as batches they would read
// as if they were drained.
func (shortLived) Plan(c *Planning) ([][]PlannedNode, error) {
	keepSizes(c.Plan)
	c.Plan.ShortLived = c.Outdated
	return nil, nil
}

func (shortLived) Steps(p *Plan) []Step {
	var s steps
	s.setup(p)
	s.add("Wait", fmt.Sprintf("nothing is drained: the %d outdated nodes run until they go away on their own; status shows how many are left", p.Nodes.Outdated), 0)
	return s
}

func (shortLived) Summary(p *Plan) string { return p.Strategy }

func (shortLived) Traits() Traits { return Traits{DefaultMaxUnavailable: "1", LeavesRunning: true} }

func (shortLived) First(Flow) Phase { return PhaseSetup }

// Next ends after Setup: that is all it does.
func (shortLived) Next(State, Flow) State { return State{Phase: PhaseDone} }

func (shortLived) ResumeAt(Phase, Flow) Phase { return "" }
