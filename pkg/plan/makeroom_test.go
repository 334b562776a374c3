package plan

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

func makeRoomSnapshot(stayCPU string) *snapshot.Cluster {
	node := func(name, cpu string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("10")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	one := int32(1)
	yes := true
	return &snapshot.Cluster{
		Nodes:       []corev1.Node{node("old", "4"), node("stay", stayCPU)},
		Deployments: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one}}},
		ReplicaSets: []appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", Controller: &yes}}}}},
		Pods: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1-a", OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", Controller: &yes}}},
			Spec:   corev1.PodSpec{NodeName: "old", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}},
	}
}

func TestPlanMakeRoom(t *testing.T) {
	singleReplica := check.Finding{Check: check.CheckSingleReplica, Severity: check.Blocker, Kind: "Deployment", Namespace: "shop", Name: "web", Nodes: []string{"old"}}
	tests := []struct {
		name     string
		stayCPU  string
		managed  bool
		blockers []string // check/name
		surges   int
		note     string
	}{
		{"a surge that fits answers single-replica", "4", false, nil, 1, ""},
		{"a surge that does not fit is a no-room blocker", "1500m", false, []string{"no-room/web"}, 1, ""},
		{"where the service drains, nothing is surged and a note says why", "4", true, []string{"single-replica/web"}, 0, "--make-room surges nothing here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Strategy: string(DefaultStrategy), Batches: []Batch{{Number: 1, Nodes: []PlannedNode{{Name: "old"}}}}, Findings: []check.Finding{singleReplica}}
			if tt.managed {
				p.Managed = &ManagedPlan{Service: "EKS managed node group"}
			}
			p.PlanMakeRoom(makeRoomSnapshot(tt.stayCPU), nil)
			var blockers []string
			for _, f := range p.Blockers() {
				blockers = append(blockers, f.Check+"/"+f.Name)
			}
			if strings.Join(blockers, ",") != strings.Join(tt.blockers, ",") {
				t.Errorf("blockers %v, want %v (%+v)", blockers, tt.blockers, p.Findings)
			}
			if n := len(p.MakeRoom); tt.surges > 0 && (n != 1 || len(p.MakeRoom[0].Surges) != tt.surges) || tt.surges == 0 && n != 0 {
				t.Errorf("make room %+v, want %d surges", p.MakeRoom, tt.surges)
			}
			if tt.note != "" && (len(p.Notes) != 1 || !strings.Contains(p.Notes[0], tt.note)) {
				t.Errorf("notes %q, want one with %q", p.Notes, tt.note)
			}
		})
	}
}

// TestMakeRoomTableSaysHowLongTheSurgeStays: the plan's table gives each
// surge the time it is estimated to stay up, from the plan's pace: the
// drain (3s here), not the post-drain wait of 30s, before which the run
// puts the surge back; -o json carries it.
func TestMakeRoomTableSaysHowLongTheSurgeStays(t *testing.T) {
	p := &Plan{Strategy: string(DefaultStrategy), Batches: []Batch{{Number: 1, Nodes: []PlannedNode{{Name: "old"}}}},
		Pace: &Pace{Drain: Duration(3 * time.Second)}, PostDrainWait: Duration(30 * time.Second)}
	p.PlanMakeRoom(makeRoomSnapshot("4"), nil)
	if len(p.MakeRoom) != 1 || p.MakeRoom[0].HoldSeconds != 3 {
		t.Fatalf("make room %+v, want the surge held for 3 s", p.MakeRoom)
	}
	var out strings.Builder
	writeMakeRoom(&out, p, output.Colorizer(false))
	if !strings.Contains(out.String(), "FOR (EST.)") || !strings.Contains(out.String(), " 3s ") {
		t.Errorf("table does not say how long the surge stays:\n%s", out.String())
	}
}

// TestMakeRoomCountsTheNodesTheRunCreates: with every outdated node held
// off and no node that stays, a surge fits on the nodes the run has
// created by its first drain (eks's scale-up, the surge's node, green),
// as the run's own estimate before each batch finds; without any, it is
// a no-room blocker.
func TestMakeRoomCountsTheNodesTheRunCreates(t *testing.T) {
	sizes := func(before, during int32) *CloudPlan {
		return &CloudPlan{Before: Sizes{Desired: before}, During: Sizes{Desired: during}}
	}
	for _, tt := range []struct {
		name      string
		strategy  StrategyName
		cloud     *CloudPlan
		blueGreen *BlueGreenPlan
		blockers  string
	}{
		{"eks: the scale-up's node", StrategyEKS, sizes(1, 2), nil, ""},
		{"surge: the surge's node", StrategySurge, sizes(1, 2), nil, ""},
		{"blue-green: green's node", StrategyBlueGreen, sizes(1, 1), &BlueGreenPlan{Create: true}, ""},
		{"blue-green onto a green that exists: in the snapshot", StrategyBlueGreen, sizes(1, 1), &BlueGreenPlan{}, "no-room/web"},
		{"no node created", StrategyEKS, sizes(1, 1), nil, "no-room/web"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap := makeRoomSnapshot("1")
			snap.Nodes = snap.Nodes[:1] // only "old": nothing stays
			snap.Nodes[0].Labels = map[string]string{"pool": "g"}
			snap.Pods[0].Spec.NodeSelector = map[string]string{"pool": "g"}
			p := &Plan{Strategy: string(tt.strategy), Batches: []Batch{{Number: 1, Nodes: []PlannedNode{{Name: "old"}}}}, Cloud: tt.cloud, BlueGreen: tt.blueGreen,
				Findings: []check.Finding{{Check: check.CheckSingleReplica, Severity: check.Blocker, Kind: "Deployment", Namespace: "shop", Name: "web", Nodes: []string{"old"}}}}
			p.PlanMakeRoom(snap, nil)
			var blockers []string
			for _, f := range p.Blockers() {
				blockers = append(blockers, f.Check+"/"+f.Name)
			}
			if got := strings.Join(blockers, ","); got != tt.blockers {
				t.Errorf("blockers %q, want %q (%+v)", got, tt.blockers, p.Findings)
			}
			if len(snap.Nodes) != 1 {
				t.Errorf("the snapshot was changed: %d nodes", len(snap.Nodes))
			}
		})
	}
}
