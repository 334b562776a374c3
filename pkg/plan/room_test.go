package plan

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// TestNoRoom: with provider none and nothing adding nodes, every batch's
// pods, in the run's order, must fit on the 3 current nodes (4 CPUs each)
// that stay; the 6 outdated nodes go in 3 batches of 2.
func TestNoRoom(t *testing.T) {
	requesting := func(cpu string) []corev1.Pod {
		var pods []corev1.Pod
		for i := range 6 {
			p := pod("ns", fmt.Sprintf("app-%d", i), fmt.Sprintf("old-%d", i), "app", "ReplicaSet/app-1")
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
			pods = append(pods, p)
		}
		return pods
	}
	autoscaler := pod("kube-system", "cluster-autoscaler-6d4f", "other-0", "cluster-autoscaler", "ReplicaSet/cluster-autoscaler-6d4f")
	tests := []struct {
		name      string
		pods      []corev1.Pod
		cloud     bool
		namespace string // check -n
		wantBatch int    // 1-based batch named by the blocker; 0 for none
	}{
		{name: "every batch fits on the nodes that stay", pods: requesting("2")},
		// 4 nodes stay (other-0 of another group too), each with room for one pod
		{name: "the first batches fit, the last does not once theirs took the room", pods: requesting("2500m"), wantBatch: 3},
		{name: "a pod bigger than any node that stays", pods: requesting("5"), wantBatch: 1},
		{name: "a cluster autoscaler adds nodes", pods: append(requesting("5"), autoscaler)},
		{name: "a cloud group adds nodes", pods: requesting("5"), cloud: true},
		{name: "check -n of the pods' namespace", pods: requesting("5"), namespace: "ns", wantBatch: 1},
		{name: "check -n of another namespace", pods: requesting("5"), namespace: "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := groupSnapshot()
			snap.Pods = tc.pods
			in := baseInput()
			in.Namespace = tc.namespace
			if tc.cloud {
				in.Cloud = &CloudGroup{Can: CapRemoveNodes | CapResize}
			}
			var got []check.Finding
			for _, f := range mustBuild(t, snap, in).Findings {
				if f.Check == check.CheckNoRoom {
					got = append(got, f)
				}
			}
			if tc.wantBatch == 0 {
				if len(got) != 0 {
					t.Fatalf("want no %s finding, got %+v", check.CheckNoRoom, got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one %s finding, got %+v", check.CheckNoRoom, got)
			}
			f := got[0]
			if want := fmt.Sprintf("batch %d of 3: pods ", tc.wantBatch); !strings.HasPrefix(f.Message, want) || f.Severity != check.Blocker || len(f.Nodes) != 2 {
				t.Errorf("finding %+v: want a blocker on the 2 nodes of %q…", f, want)
			}
			if tc.wantBatch > 1 && !strings.Contains(f.Fix, "--max-unavailable does not help") {
				t.Errorf("fix %q: a later batch of a tainted group is not helped by smaller batches", f.Fix)
			}
			// The planner knows no cloud by name: the fix asks for the
			// nodes' own.
			if !strings.Contains(f.Fix, "the --provider of the cloud whose group adds them") || strings.Contains(f.Fix, "aws") {
				t.Errorf("fix %q: want the nodes' cloud's --provider, no cloud named", f.Fix)
			}
		})
	}
}

func mustBuild(t *testing.T, snap snapshot.Cluster, in Input) *Plan {
	t.Helper()
	p, err := Build(snap, in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
