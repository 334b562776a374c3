package fleet

import (
	"slices"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Kind of "fleet plan -o json|yaml": the whole rollout as planned.
const RolloutKind = "FleetRollout"

// Rollout is every target's plan, stage by stage, with what each stage
// and the whole fleet would take.
type Rollout struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Name       string        `json:"name"`
	Hash       string        `json:"hash"`
	Stages     []StagePlan   `json:"stages"`
	Estimate   plan.Duration `json:"estimate"`
	// Approvals counts the stages that wait for "fleet approve", whose
	// time no estimate includes.
	Approvals int `json:"approvals,omitempty"`
}

// StagePlan is one stage as planned.
type StagePlan struct {
	Name           string         `json:"name"`
	MaxConcurrency int            `json:"maxConcurrency"`
	MaxFailures    int            `json:"maxFailures"`
	Soak           plan.Duration  `json:"soak,omitempty"`
	Gates          []string       `json:"gates,omitempty"`
	Approval       bool           `json:"approval,omitempty"`
	Targets        []TargetPlan   `json:"targets"`
	Quotas         []QuotaBlocker `json:"quotaBlockers,omitempty"`
	// Estimate is the targets' work, MaxConcurrency at once, plus the soak.
	Estimate plan.Duration `json:"estimate"`
}

// TargetPlan is one target's plan, or why there is none.
type TargetPlan struct {
	Target
	Plan *plan.Plan `json:"plan,omitempty"`
	// Refused says its run would refuse the plan for its blockers.
	Refused bool `json:"refused,omitempty"`
	// Error is why it could not be planned, with the exit code of plan.
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode,omitempty"`
}

// Estimate is what the target's run would take: nothing when it has
// nothing outdated or no plan.
func (t TargetPlan) Estimate() time.Duration {
	if t.Plan == nil {
		return 0
	}
	return t.Plan.EstimatedDuration()
}

// PlanRollout puts the targets' plans (by Target.ID) together: each
// stage's shared quotas and estimate, and the whole fleet's.
func PlanRollout(f *Fleet, plans map[string]TargetPlan) *Rollout {
	r := &Rollout{APIVersion: APIVersion, Kind: RolloutKind, Name: f.Name, Hash: f.Hash}
	var total time.Duration
	for _, st := range f.Stages {
		sp := StagePlan{Name: st.Name, MaxConcurrency: st.MaxConcurrency, MaxFailures: st.MaxFailures,
			Soak: plan.Duration(st.Soak), Gates: st.Gates, Approval: st.Approval}
		byID := map[string]*plan.Plan{}
		var work []time.Duration
		for _, t := range st.Targets {
			tp := plans[t.ID()]
			tp.Target = t
			sp.Targets = append(sp.Targets, tp)
			byID[t.ID()] = tp.Plan
			work = append(work, tp.Estimate())
		}
		sp.Quotas = StageQuotas(st, byID)
		d := Makespan(st.MaxConcurrency, work) + st.Soak
		sp.Estimate, total = plan.Duration(d), total+d
		if st.Approval {
			r.Approvals++
		}
		r.Stages = append(r.Stages, sp)
	}
	r.Estimate = plan.Duration(total)
	return r
}

// Refused says "fleet run" would not start it: a target that could not
// be planned, one whose run would refuse its blockers, or a stage whose
// targets need more of a shared quota than is free.
func (r *Rollout) Refused() bool {
	for _, st := range r.Stages {
		if len(st.Quotas) > 0 {
			return true
		}
		for _, t := range st.Targets {
			if t.Refused || t.Error != "" {
				return true
			}
		}
	}
	return false
}

// Makespan is how long work takes run at most n at once in its order,
// each starting as soon as one before it ends.
func Makespan(n int, work []time.Duration) time.Duration {
	if n < 1 {
		n = 1
	}
	ends := make([]time.Duration, min(n, max(len(work), 1)))
	for _, w := range work {
		i := slices.Index(ends, slices.Min(ends))
		ends[i] += w
	}
	return slices.Max(ends)
}
