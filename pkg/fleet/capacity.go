package fleet

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// QuotaBlocker is a stage whose targets, run MaxConcurrency at once, need
// more of a shared limit than was free.
type QuotaBlocker struct {
	Stage  string `json:"stage"`
	Scope  string `json:"scope"`
	Name   string `json:"name"`
	Unit   string `json:"unit"`
	Needed int64  `json:"needed"`
	Free   int64  `json:"free"`
}

func (b QuotaBlocker) String() string {
	return fmt.Sprintf("stage %q cannot fit: quota %q (%s) needs %d %s with its targets running at once, %d free; lower the stage's maxConcurrency or raise the quota", b.Stage, b.Name, b.Scope, b.Needed, b.Unit, b.Free)
}

// StageQuotas adds up, by Scope, what the stage's targets need of the
// shared limits when MaxConcurrency run at once (the largest needs, the
// worst case), against the least that any of their plans saw free; plans
// are by Target.ID, a target without a plan or a Capacity counts nothing.
func StageQuotas(st ResolvedStage, plans map[string]*plan.Plan) []QuotaBlocker {
	needs := map[string][]int64{}
	limit := map[string]plan.QuotaUse{}
	for _, t := range st.Targets {
		p := plans[t.ID()]
		if p == nil || p.Capacity == nil {
			continue
		}
		for _, q := range p.Capacity.Quotas {
			needs[q.Scope] = append(needs[q.Scope], q.Needed)
			if l, seen := limit[q.Scope]; !seen || q.Free < l.Free {
				limit[q.Scope] = q
			}
		}
	}
	var out []QuotaBlocker
	for _, scope := range slices.Sorted(maps.Keys(needs)) {
		ns := needs[scope]
		sort.Slice(ns, func(i, j int) bool { return ns[i] > ns[j] })
		var sum int64
		for _, n := range ns[:min(st.MaxConcurrency, len(ns))] {
			sum += n
		}
		if l := limit[scope]; sum > l.Free {
			out = append(out, QuotaBlocker{Stage: st.Name, Scope: scope, Name: l.Name, Unit: l.Unit, Needed: sum, Free: l.Free})
		}
	}
	return out
}
