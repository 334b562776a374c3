package upgrade

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func testNode(name, zone, cpu string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func testPod(name, node, cpu string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestEstimateRoom(t *testing.T) {
	tainted := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	}
	tests := []struct {
		name     string
		evict    []*corev1.Pod
		nodes    []*corev1.Node
		running  []*corev1.Pod
		unplaced []string
	}{
		{name: "fits on the free node",
			evict: []*corev1.Pod{testPod("a", "old", "1"), testPod("b", "old", "1")},
			nodes: []*corev1.Node{testNode("old", "a", "4"), testNode("new", "a", "4")}},
		{name: "requests exceed what is left",
			evict:   []*corev1.Pod{testPod("a", "old", "2"), testPod("b", "old", "2")},
			nodes:   []*corev1.Node{testNode("old", "a", "4"), testNode("new", "a", "4")},
			running: []*corev1.Pod{testPod("busy", "new", "3")}, unplaced: []string{"a", "b"}},
		{name: "finished pods free their requests",
			evict:   []*corev1.Pod{testPod("a", "old", "2")},
			nodes:   []*corev1.Node{testNode("old", "a", "4"), testNode("new", "a", "4")},
			running: []*corev1.Pod{testPod("done", "new", "3", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })}},
		{name: "cordoned and not-ready nodes take nothing",
			evict: []*corev1.Pod{testPod("a", "old", "1")},
			nodes: []*corev1.Node{testNode("old", "a", "4"),
				testNode("cordoned", "a", "4", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
				testNode("notready", "a", "4", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })},
			unplaced: []string{"a"}},
		{name: "untolerated taint",
			evict:    []*corev1.Pod{testPod("a", "old", "1")},
			nodes:    []*corev1.Node{testNode("old", "a", "4"), testNode("gpu", "a", "4", tainted)},
			unplaced: []string{"a"}},
		{name: "tolerated taint",
			evict: []*corev1.Pod{testPod("a", "old", "1", func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			})},
			nodes: []*corev1.Node{testNode("old", "a", "4"), testNode("gpu", "a", "4", tainted)}},
		{name: "node selector",
			evict:    []*corev1.Pod{testPod("a", "old", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })},
			nodes:    []*corev1.Node{testNode("old", "a", "4"), testNode("new", "a", "4")},
			unplaced: []string{"a"}},
		{name: "persistent volume stays in its zone",
			evict: []*corev1.Pod{testPod("db", "old", "1", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
			})},
			nodes:    []*corev1.Node{testNode("old", "a", "4"), testNode("new", "b", "4")},
			unplaced: []string{"db"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			byNode := map[string][]*corev1.Pod{}
			for _, p := range tc.running {
				byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
			}
			room := EstimateRoom(tc.evict, tc.nodes, func(n string) []*corev1.Pod { return byNode[n] }, sets.New("old"))
			var got []string
			for _, p := range room.Unplaced {
				got = append(got, p.Name)
			}
			if len(got) != len(tc.unplaced) || !sets.New(got...).Equal(sets.New(tc.unplaced...)) {
				t.Fatalf("unplaced %v, want %v", got, tc.unplaced)
			}
			if room.Fits() != (len(tc.unplaced) == 0) {
				t.Fatalf("Fits() = %v", room.Fits())
			}
		})
	}
}

func TestStateMachineOrder(t *testing.T) {
	batch := []Phase{PhaseRoom, PhaseDrain, PhaseCordon, PhaseRemove, PhaseRecover}
	twoBatches := append(append([]Phase{}, batch...), batch...)
	for _, tc := range []struct {
		name       string
		start      Phase
		batches    int
		cloudGroup bool
		surge      bool
		want       []Phase
	}{
		{name: "none, two batches", batches: 2, want: append(append([]Phase{PhaseTaint}, twoBatches...), PhaseDone)},
		{name: "none, nothing to drain", want: []Phase{PhaseTaint, PhaseDone}},
		{name: "cloud group, two batches", batches: 2, cloudGroup: true,
			want: append(append([]Phase{PhaseSetup, PhaseScaleUp, PhaseTaint}, twoBatches...), PhaseScaleDown, PhaseDone)},
		{name: "cloud group, nothing to drain", cloudGroup: true, want: []Phase{PhaseSetup, PhaseScaleUp, PhaseTaint, PhaseScaleDown, PhaseDone}},
		// A run interrupted in its scale-down goes on from there: the
		// batches are not repeated and the group is not scaled up again.
		{name: "resumed scale-down", start: PhaseScaleDown, batches: 2, cloudGroup: true, want: []Phase{PhaseScaleDown, PhaseDone}},
		// Surge taints nothing and scales per batch; the final ScaleDown
		// only checks the recorded sizes are back.
		{name: "surge, cloud group", batches: 2, cloudGroup: true, surge: true,
			want: []Phase{PhaseSetup, PhaseSurge, PhaseRoom, PhaseDrain, PhaseCordon, PhaseRemove, PhaseRecover,
				PhaseSurge, PhaseRoom, PhaseDrain, PhaseCordon, PhaseRemove, PhaseRecover, PhaseScaleDown, PhaseDone}},
		{name: "surge, none", batches: 2, surge: true, want: append(append([]Phase{}, twoBatches...), PhaseDone)},
		{name: "surge, nothing to drain", surge: true, want: []Phase{PhaseDone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := flow{batches: tc.batches, cloudGroup: tc.cloudGroup, surge: tc.surge}
			s := State{Phase: tc.start}
			if s.Phase == "" {
				s.Phase = first(f)
			}
			var got []Phase
			for range 100 {
				got = append(got, s.Phase)
				if s.Phase == PhaseDone {
					break
				}
				s = next(s, f)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("phases %v, want %v", got, tc.want)
			}
		})
	}
}
