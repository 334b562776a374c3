package capacity

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
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

func TestEstimate(t *testing.T) {
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
			room := Estimate(tc.evict, tc.nodes, func(n string) []*corev1.Pod { return byNode[n] }, sets.New("old"))
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

func TestStartupTaint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		taint *corev1.Taint
		want  string
	}{
		{name: "none"},
		{name: "not-ready, as the node lifecycle controller leaves it a moment after Ready", taint: &corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, want: corev1.TaintNodeNotReady},
		{name: "the cloud controller's", taint: &corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}, want: "node.cloudprovider.kubernetes.io/uninitialized"},
		{name: "a taint of the user's", taint: &corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}},
		{name: "only preferred", taint: &corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectPreferNoSchedule}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode("n", "a", "4")
			if tc.taint != nil {
				n.Spec.Taints = []corev1.Taint{*tc.taint}
			}
			if got := StartupTaint(n); got != tc.want {
				t.Errorf("StartupTaint = %q, want %q", got, tc.want)
			}
		})
	}
}

// A Tracker placing batch after batch must find what a fresh Estimate of
// each batch finds, given the pods the earlier batches placed: it only
// saves recomputing every node's room. Random clusters, where some batches
// fit and some do not.
func TestTrackerAgreesWithEstimate(t *testing.T) {
	for seed := range 40 {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			var nodes []*corev1.Node
			running := map[string][]*corev1.Pod{}
			for i := range 12 {
				name := fmt.Sprintf("n%02d", i)
				nodes = append(nodes, testNode(name, fmt.Sprintf("z%d", i%3), fmt.Sprintf("%dm", 1000+rng.IntN(4)*500)))
				for j := range rng.IntN(6) {
					running[name] = append(running[name], testPod(fmt.Sprintf("%s-p%d", name, j), name, fmt.Sprintf("%dm", 100+rng.IntN(5)*100)))
				}
			}
			// The first 8 nodes are outdated, in batches of 2.
			batches := [][]string{{"n00", "n01"}, {"n02", "n03"}, {"n04", "n05"}, {"n06", "n07"}}
			heldOff := seed%2 == 0
			var all []*corev1.Pod
			for _, b := range batches {
				for _, n := range b {
					all = append(all, running[n]...)
				}
			}
			tracker := NewTracker(nodes, func(n string) []*corev1.Pod { return running[n] }, all)
			excluded := sets.New[string]()
			if heldOff {
				for _, b := range batches {
					tracker.Exclude(b...)
					excluded.Insert(b...)
				}
			}
			for i, b := range batches {
				tracker.Exclude(b...)
				excluded.Insert(b...)
				var toEvict []*corev1.Pod
				for _, n := range b {
					toEvict = append(toEvict, running[n]...)
					delete(running, n)
				}
				want := Estimate(toEvict, nodes, func(n string) []*corev1.Pod { return running[n] }, excluded)
				got := tracker.Place(toEvict)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("batch %d: tracker placed %s, unplaced %v; Estimate placed %s, unplaced %v", i, placements(got), got.PodNames(), placements(want), want.PodNames())
				}
				for _, pl := range got.Placed {
					running[pl.Node] = append(running[pl.Node], pl.Pod)
				}
			}
		})
	}
}

func placements(r Room) string {
	var out []string
	for _, pl := range r.Placed {
		out = append(out, pl.Pod.Name+"→"+pl.Node)
	}
	return strings.Join(out, " ")
}
