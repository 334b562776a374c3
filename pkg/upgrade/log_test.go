package upgrade

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestRemovedNodeIsNamedWithItsMachine(t *testing.T) {
	e := &Engine{cfg: Config{Plan: &plan.Plan{Batches: []plan.Batch{{Nodes: []plan.PlannedNode{
		{Name: "a", InstanceID: "i-0abc"},
		{Name: "b"},
	}}}}}}
	tests := []struct{ node, want string }{
		{"a", `node "a" (instance i-0abc)`},
		{"b", `node "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.node, func(t *testing.T) {
			if got := e.nodeWithMachine(0, tc.node); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRoomNamesOnlyWhatPodsRequest(t *testing.T) {
	tests := []struct {
		name string
		pod  string
		cpu  string
		want string
	}{
		{"cpu only", "big", "3", `pods "ns/big" (requests cpu 3) fit on no schedulable node`},
		{"no requests", "free", "0", `pods "ns/free" (no requests) fit on no schedulable node`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Room{Unplaced: []*corev1.Pod{testPod(tc.pod, "old", tc.cpu)}}
			if got := r.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
