package capacity

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/kubetest"
)

// Nodes and pods from the builder the capacity and engine tests share.
var (
	testNode = kubetest.Node
	testPod  = kubetest.Pod
)

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
		{name: "a sidecar on the node takes its room",
			evict: []*corev1.Pod{testPod("a", "old", "2")},
			nodes: []*corev1.Node{testNode("old", "a", "4"), testNode("new", "a", "4")},
			running: []*corev1.Pod{testPod("meshed", "new", "1", func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: new(corev1.ContainerRestartPolicyAlways),
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}
			})},
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

// TestPodRequestIsPodRequests: the estimate's own sum of a pod's requests
// is the scheduler's (component-helpers' PodRequests), for every shape of
// pod that changes it.
func TestPodRequestIsPodRequests(t *testing.T) {
	reqs := func(kv ...string) corev1.ResourceRequirements {
		rl := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return corev1.ResourceRequirements{Requests: rl}
	}
	sidecar := func(r corev1.ResourceRequirements) corev1.Container {
		return corev1.Container{Name: "sidecar", RestartPolicy: new(corev1.ContainerRestartPolicyAlways), Resources: r}
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
	}{
		{"no requests", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}},
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: reqs("cpu", "250m", "memory", "1Gi")}, {Name: "b", Resources: reqs("cpu", "1500m")}}}},
		{"an init container needs more", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "migrate", Resources: reqs("cpu", "3", "memory", "100Mi")}},
			Containers: []corev1.Container{{Name: "a", Resources: reqs("cpu", "1", "memory", "1Gi")}}}},
		{"sidecars run with the containers and the later init containers", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "first", Resources: reqs("cpu", "2")}, sidecar(reqs("cpu", "500m", "memory", "64Mi")),
				{Name: "after", Resources: reqs("cpu", "2", "memory", "2Gi")}, sidecar(reqs("cpu", "100m"))},
			Containers: []corev1.Container{{Name: "a", Resources: reqs("cpu", "1", "memory", "1Gi")}}}},
		{"overhead", corev1.PodSpec{Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("120Mi")},
			Containers: []corev1.Container{{Name: "a", Resources: reqs("cpu", "1")}}}},
		{"pod-level requests", corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
			Overhead:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Containers: []corev1.Container{{Name: "a", Resources: reqs("cpu", "1", "memory", "1Gi")}}}},
		{"pod-level requests of a resource they cannot set", corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}},
			Containers: []corev1.Container{{Name: "a", Resources: reqs("cpu", "1", "example.com/gpu", "2")}}}},
	}
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "example.com/gpu"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tc.spec}
			want := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
			for _, name := range names {
				if got, want := podRequest(p, name), quantityValue(name, want[name]); got != want {
					t.Errorf("%s: podRequest %d, PodRequests %d", name, got, want)
				}
			}
			var wantNames []corev1.ResourceName
			for _, name := range names {
				if q := want[name]; !q.IsZero() {
					wantNames = append(wantNames, name)
				}
			}
			if got := requestedResources([]*corev1.Pod{p}); !slices.Equal(got, wantNames) {
				t.Errorf("requested resources %v, want %v", got, wantNames)
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

// TestIsAutoscaler: a running pod of the cluster autoscaler or Karpenter is
// known by its app labels or, failing those, the start of its name.
func TestIsAutoscaler(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pod    string
		labels map[string]string
		phase  corev1.PodPhase
		want   bool
	}{
		{"app.kubernetes.io/name", "controller-0", map[string]string{"app.kubernetes.io/name": "karpenter"}, corev1.PodRunning, true},
		{"app", "ca-0", map[string]string{"app": "cluster-autoscaler"}, corev1.PodRunning, true},
		{"name of a Deployment's pod", "cluster-autoscaler-7d9c5b8f6-abcde", nil, corev1.PodRunning, true},
		{"name of Karpenter's pod", "karpenter-5f7b9-xyz", nil, corev1.PodRunning, true},
		{"the bare name", "karpenter", nil, corev1.PodRunning, false},
		{"a name that only starts alike", "karpenterish-0", nil, corev1.PodRunning, false},
		{"another app", "web-0", map[string]string{"app": "web", "app.kubernetes.io/name": "web"}, corev1.PodRunning, false},
		{"not running", "cluster-autoscaler-0", map[string]string{"app": "cluster-autoscaler"}, corev1.PodPending, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.pod, Labels: tc.labels}, Status: corev1.PodStatus{Phase: tc.phase}}
			if got := IsAutoscaler(p); got != tc.want {
				t.Errorf("IsAutoscaler(%q, %v) = %v, want %v", tc.pod, tc.labels, got, tc.want)
			}
		})
	}
}
