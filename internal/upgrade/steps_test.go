package upgrade

import (
	"fmt"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestEveryPhaseOfEveryStrategyHasAStep walks each strategy's phases, as
// its First and Next lead a run with and without a cloud group and with
// 0 to 2 batches (and its rollback, where it has one live): the engine
// has a step for every one.
func TestEveryPhaseOfEveryStrategyHasAStep(t *testing.T) {
	for _, name := range plan.StrategyNames() {
		s, err := plan.LookupStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, flow := range []plan.Flow{{Batches: 0}, {Batches: 2}, {Batches: 0, CloudGroup: true}, {Batches: 2, CloudGroup: true}} {
			t.Run(fmt.Sprintf("%s/%+v", name, flow), func(t *testing.T) {
				phases := map[plan.Phase]bool{}
				st := plan.State{Phase: s.First(flow)}
				for n := 0; st.Phase != plan.PhaseDone; n++ {
					if n > 100 {
						t.Fatalf("no end after 100 phases: %v", phases)
					}
					phases[st.Phase] = true
					st = s.Next(st, flow)
				}
				if s.Traits().Rollback == plan.RollbackGreen {
					phases[plan.PhaseRollback] = true
				}
				e := &Engine{cfg: Config{Plan: &plan.Plan{}}, strategy: s}
				e.group = newCloudGroup(nil)
				_, steps := stepsOf(e)
				for p := range phases {
					if _, ok := steps[p]; !ok {
						t.Errorf("phase %s has no step", p)
					}
				}
			})
		}
	}
}

// TestRunsAgreeWithTheirTraits: the questions the shared steps ask a
// strategy's run (does it hold every outdated node off, replace the whole
// group, turn around live) get the answers the planner reads from the
// strategy's traits, so plan and run never disagree.
func TestRunsAgreeWithTheirTraits(t *testing.T) {
	for _, name := range plan.StrategyNames() {
		t.Run(name, func(t *testing.T) {
			s, err := plan.LookupStrategy(name)
			if err != nil {
				t.Fatal(err)
			}
			e := &Engine{cfg: Config{Plan: &plan.Plan{}}, strategy: s}
			e.group = newCloudGroup(nil)
			e.run, e.steps = stepsOf(e)
			traits := s.Traits()
			_, heldOff := e.run.(outdatedHolder)
			_, wholeGroup := e.run.(groupAborter)
			for _, c := range []struct {
				question    string
				run, traits bool
			}{
				{"holds the outdated nodes off", heldOff, traits.OutdatedHeldOff},
				{"replaces the whole group", wholeGroup, traits.WholeGroup},
				{"turns around live", e.liveRollback(), traits.Rollback == plan.RollbackGreen},
			} {
				if c.run != c.traits {
					t.Errorf("%s: the run says %v, the traits %v", c.question, c.run, c.traits)
				}
			}
		})
	}
}
