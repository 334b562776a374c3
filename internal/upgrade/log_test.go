package upgrade

import (
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestRemovedNodeIsNamedWithItsMachine(t *testing.T) {
	b := &batchRun{cfg: &Config{Plan: &plan.Plan{Batches: []plan.Batch{{Nodes: []plan.PlannedNode{
		{Name: "a", MachineID: "i-0abc"},
		{Name: "b"},
	}}}}}}
	tests := []struct{ node, want string }{
		{"a", `node "a" (instance i-0abc)`},
		{"b", `node "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.node, func(t *testing.T) {
			if got := b.nodeWithMachine(0, tc.node); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
