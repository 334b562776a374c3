package upgrade

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
)

// TestHeldTracker: a hold (pod and PDB) is reported once when first
// seen and keeps the time it was first seen; a read that misses it while
// its pod is still on its node (PDB status lagging an eviction) neither
// releases it nor makes it new again; it is released once the pod has
// left its node, and a hold by another PDB is new.
func TestHeldTracker(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tr := newHeldTracker(func() time.Time { return now })
	db := HeldPod{Node: "n1", Namespace: "shop", Pod: "db-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "db"}}
	web := HeldPod{Node: "n2", Namespace: "shop", Pod: "web-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "web"}}
	dbByQuorum := db
	dbByQuorum.PDB.Name = "quorum"
	steps := []struct {
		name      string
		held      []HeldPod
		onNode    []string // pods still on their nodes
		wantFresh []string
		wantSince map[string]time.Duration // ago, by pod
	}{
		{"first seen", []HeldPod{db}, []string{"db-0"}, []string{"db-0"}, map[string]time.Duration{"db-0": 0}},
		{"still held a minute later", []HeldPod{db, web}, []string{"db-0", "web-0"}, []string{"web-0"}, map[string]time.Duration{"db-0": time.Minute, "web-0": 0}},
		{"a read without db: its PDB lags", []HeldPod{web}, []string{"db-0", "web-0"}, nil, map[string]time.Duration{"web-0": time.Minute}},
		{"db held again is not new", []HeldPod{web, db}, []string{"db-0", "web-0"}, nil, map[string]time.Duration{"web-0": 2 * time.Minute, "db-0": 3 * time.Minute}},
		{"web evicted, db held by another PDB", []HeldPod{dbByQuorum}, []string{"db-0"}, []string{"db-0"}, map[string]time.Duration{"db-0": 0}},
		{"web back on its node is a new hold", []HeldPod{dbByQuorum, web}, []string{"db-0", "web-0"}, []string{"web-0"}, map[string]time.Duration{"db-0": time.Minute, "web-0": 0}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			fresh := tr.update(st.held, func(h HeldPod) bool { return slices.Contains(st.onNode, h.Pod) })
			var names []string
			for _, h := range fresh {
				names = append(names, h.Pod)
			}
			if strings.Join(names, ",") != strings.Join(st.wantFresh, ",") {
				t.Errorf("fresh %v, want %v", names, st.wantFresh)
			}
			all := tr.all()
			if len(all) != len(st.wantSince) {
				t.Fatalf("held %v, want %d pods", all, len(st.wantSince))
			}
			for _, h := range all {
				if ago := now.Sub(h.Since); ago != st.wantSince[h.Pod] {
					t.Errorf("%s held since %s ago, want %s", h.Pod, ago, st.wantSince[h.Pod])
				}
			}
		})
		now = now.Add(time.Minute)
	}
}

// TestMarkedByService: a node the service cordoned or tainted
// unschedulable before its drain; a node with another NoSchedule taint is
// not one.
func TestMarkedByService(t *testing.T) {
	for _, tc := range []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}, true},
		{"EKS's taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "eks.amazonaws.com/nodegroup", Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}}}}, true},
		{"a dedicated taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}}}, false},
		{"in service", corev1.Node{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := markedByService(&tc.node); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestServiceUpdateFailureNamesNodesPodsAndPDBs: the one-line error of a
// failed service update keeps what the service said and adds what held
// the nodes.
func TestServiceUpdateFailureNamesNodesPodsAndPDBs(t *testing.T) {
	f := &ServiceUpdateFailure{Service: "EKS managed node group", ID: "u-1", Group: "ng",
		Errors: []cloud.UpdateError{{Code: "PodEvictionFailure", Message: "Reached max retries while trying to evict pods from nodes in node group ng", Nodes: []string{"n1"}}},
		Held:   []HeldPod{{Node: "n1", Namespace: "shop", Pod: "db-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "db"}}}}
	msg := f.Error()
	for _, want := range []string{"PodEvictionFailure", "nodes n1", `pod "shop/db-0" on node "n1" (PodDisruptionBudget "shop/db")`, `"kubectl nodeupgrade abort ng" puts it back`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") || f.Code() != "PodEvictionFailure" {
		t.Errorf("want one line and code PodEvictionFailure: %q, %q", msg, f.Code())
	}
}
