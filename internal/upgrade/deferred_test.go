package upgrade

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestDeferredNodesUnderAbort: a rollback's scale-down removes the nodes
// its plan deferred first; abort of that rollback keeps them with the
// other outdated nodes, and does not read the group as all on its target.
func TestDeferredNodesUnderAbort(t *testing.T) {
	t.Parallel()
	p := &plan.Plan{
		Strategy: "eks",
		Batches:  []plan.Batch{{Number: 1, Nodes: []plan.PlannedNode{{Name: "batched"}}}},
		Deferred: []plan.PlannedNode{{Name: "surplus"}},
	}
	for _, tc := range []struct {
		name         string
		aborting     bool
		wantKept     []string
		wantDeferred []string
	}{
		{name: "rollback", wantDeferred: []string{"surplus"}},
		{name: "abort", aborting: true, wantKept: []string{"batched", "surplus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cg := &cloudGroup{toolkit: toolkit{cfg: &Config{Plan: p}}}
			s := &shrinker{cloudGroup: cg, aborting: tc.aborting}
			if got := s.keptOutdated(); !got.Equal(sets.New(tc.wantKept...)) {
				t.Errorf("kept %v, want %v", sets.List(got), tc.wantKept)
			}
			if got := s.deferred(); !got.Equal(sets.New(tc.wantDeferred...)) {
				t.Errorf("deferred first %v, want %v", sets.List(got), tc.wantDeferred)
			}
		})
	}
	onlyDeferred := &plan.Plan{Strategy: "eks", Deferred: p.Deferred}
	pin := &defaultPin{cloudGroup: &cloudGroup{toolkit: toolkit{cfg: &Config{Plan: onlyDeferred}}}}
	if pin.allOnTarget() {
		t.Error("a plan with deferred outdated nodes reads as all on the target: abort would keep the target the default")
	}
}
