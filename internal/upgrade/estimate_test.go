package upgrade

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestPlanAndRunEstimateTheSameRoom: the plan (its snapshot) and the run
// (its pod cache) keep the same fields of a pod (snapshot.SlimPod), so
// they find the same room for a batch as the estimate on the whole pods:
// the same pods fit nowhere, with the same requests. Each pod carries
// what the estimate reads (sidecars, init containers, overhead, pod-level
// requests, node selector and affinity, tolerations, claims, the mirror
// annotation, its owner) beside what slimming drops (limits, env, probes,
// images, other volumes, big annotations).
func TestPlanAndRunEstimateTheSameRoom(t *testing.T) {
	tests := []struct {
		name string
		// hog takes this much CPU of new-1, a node that stays
		hog          string
		wantUnplaced []string
	}{
		{"every pod fits", "", nil},
		{"the sidecar pod fits nowhere", "2", []string{"ns/web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := newTestClient(estimateCluster(tc.hog)...)
			outdated := []string{"old-1", "old-2"}
			excluded := sets.New(outdated...)
			whole := wholeEstimate(estimateCluster(tc.hog), outdated, excluded)
			if got := whole.PodNames(); !slices.Equal(got, tc.wantUnplaced) {
				t.Fatalf("estimate on the whole pods leaves %v unplaced, want %v", got, tc.wantUnplaced)
			}

			view := newTestClusterView(t, client.Clientset)
			run := view.room(outdated, excluded)
			if run.Fits() != whole.Fits() || run.String() != whole.String() {
				t.Errorf("run's estimate %q (fits %t), on the whole pods %q (fits %t)", run, run.Fits(), whole, whole.Fits())
			}

			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			var noRoom []string
			for _, f := range p.Blockers() {
				if f.Check == check.CheckNoRoom {
					noRoom = append(noRoom, f.Message)
				}
			}
			switch {
			case whole.Fits() && len(noRoom) != 0:
				t.Errorf("plan finds no room: %v; the estimate on the whole pods fits", noRoom)
			case !whole.Fits() && (len(noRoom) != 1 || !strings.Contains(noRoom[0], whole.String())):
				t.Errorf("plan's no-room findings %q, want one naming %q", noRoom, whole.String())
			}
		})
	}
}

// wholeEstimate is capacity.Estimate of the batch on objs as they are,
// unslimmed.
func wholeEstimate(objs []runtime.Object, batch []string, excluded sets.Set[string]) capacity.Room {
	var nodes []*corev1.Node
	byNode := map[string][]*corev1.Pod{}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Node:
			nodes = append(nodes, o)
		case *corev1.Pod:
			byNode[o.Spec.NodeName] = append(byNode[o.Spec.NodeName], o)
		}
	}
	var toEvict []*corev1.Pod
	for _, n := range batch {
		for _, p := range byNode[n] {
			if plan.Evictable(p) {
				toEvict = append(toEvict, p)
			}
		}
	}
	return capacity.Estimate(toEvict, nodes, func(n string) []*corev1.Pod { return byNode[n] }, excluded)
}

// app is appPod changed by mutate.
func app(name, node, cpu string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := appPod(name, node, cpu)
	mutate(p)
	return p
}

// estimateCluster: old-1 and old-2 are outdated; new-1 (zone z1, disk=ssd,
// 4 CPUs) and new-2 (zone z2, tainted dedicated=db, 8 CPUs) stay. db
// (3 CPUs) can go only to new-2, web (2.25) and batch (1) only to new-1:
// web's sidecar and overhead and batch's pod-level request decide whether
// they fit. hog, if set, runs on new-1 and takes that many CPUs.
func estimateCluster(hog string) []runtime.Object {
	ssd := func(n *corev1.Node) { n.Labels["disk"] = "ssd" }
	dedicated := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("8")
	}
	objs := []runtime.Object{
		imageNode("old-1", "z1", "old", ssd), imageNode("old-2", "z2", "old", dedicated),
		imageNode("new-1", "z1", "new", ssd), imageNode("new-2", "z2", "new", dedicated),
		webPod(), dbPod(), batchPod(),
		// neither is evicted: a mirror pod, and a DaemonSet's pod
		noisy(testPod("kube-proxy-old-1", "old-1", "3", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		})),
		noisy(testPod("agent-old-1", "old-1", "3", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}
		})),
		// finished: takes no room on new-1
		noisy(testPod("job-done", "new-1", "3", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })),
	}
	if hog != "" {
		objs = append(objs, noisy(appPod("hog", "new-1", hog)))
	}
	return objs
}

// webPod needs 2.25 CPUs of new-1: 1 for its container and 1 for its
// sidecar (a restartable init container), more than its init container's
// 0.5 with the sidecar started before it, plus 0.25 of overhead.
func webPod() *corev1.Pod {
	return noisy(app("web", "old-1", "1", func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{
			{Name: "mesh", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: requests("1", "128Mi")},
			{Name: "migrate", Resources: requests("500m", "64Mi")},
		}
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
		// it tolerates new-2's taint, but its selector keeps it off new-2
		p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	}))
}

// dbPod needs 3 CPUs on a dedicated node of zone z2, where its claim is.
func dbPod() *corev1.Pod {
	return noisy(app("db", "old-2", "3", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		p.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}},
			},
			PodAntiAffinity: &corev1.PodAntiAffinity{},
		}
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}})
	}))
}

// batchPod asks 1 CPU for the pod as a whole, though its containers ask 4.
func batchPod() *corev1.Pod {
	return noisy(app("batch", "old-1", "2", func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "worker", Resources: requests("2", "")})
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	}))
}

func requests(cpu, memory string) corev1.ResourceRequirements {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if memory != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return corev1.ResourceRequirements{Requests: rl}
}

// noisy adds to p what the slimming drops and the estimate does not read.
func noisy(p *corev1.Pod) *corev1.Pod {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = strings.Repeat("x", 1000)
	p.Annotations["prometheus.io/scrape"] = "true"
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		c.Image, c.Env = "registry.example/app:1", []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}
	}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "config"}}}})
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}
