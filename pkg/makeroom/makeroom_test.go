package makeroom

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

func node(name, zone, cpu string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// workload adds a Deployment (or StatefulSet) of replicas pods on nodes,
// in turn, each requesting cpu.
func workload(c *snapshot.Cluster, kind, name string, replicas int, cpu string, nodes ...string) {
	labels := map[string]string{"app": name}
	owner := metav1.OwnerReference{Kind: kind, Name: name, Controller: ptr.To(true)}
	switch kind {
	case "Deployment":
		c.Deployments = append(c.Deployments, appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(replicas))}})
		c.ReplicaSets = append(c.ReplicaSets, appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-rs",
			OwnerReferences: []metav1.OwnerReference{owner}}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(replicas))}})
		owner = metav1.OwnerReference{Kind: "ReplicaSet", Name: name + "-rs", Controller: ptr.To(true)}
	case "StatefulSet":
		c.StatefulSets = append(c.StatefulSets, appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(replicas))}})
	case "Pod":
		owner = metav1.OwnerReference{}
	}
	for i := range replicas {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", name, i), Labels: labels},
			Spec: corev1.PodSpec{NodeName: nodes[i%len(nodes)], Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		if owner.Kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{owner}
		}
		c.Pods = append(c.Pods, p)
	}
}

func pdb(c *snapshot.Cluster, app string, minAvailable, maxUnavailable *intstr.IntOrString) {
	c.PDBs = append(c.PDBs, policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}})
}

func cluster(cpuLeft string) *snapshot.Cluster {
	return &snapshot.Cluster{Nodes: []corev1.Node{node("old-a", "a", "4"), node("new-a", "a", cpuLeft), node("new-b", "b", cpuLeft)}}
}

func TestForBatch(t *testing.T) {
	int3, int0, pct100 := intstr.FromInt32(3), intstr.FromInt32(0), intstr.FromString("100%")
	int1, int2 := intstr.FromInt32(1), intstr.FromInt32(2)
	tests := []struct {
		name      string
		setup     func(c *snapshot.Cluster, in *Input)
		surges    []string // kind/name+extra (reason) [hpa min-max] missing
		untouched []string
		cpu       string
		fits      bool
	}{
		{"single replica is surged by one", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "web", 1, "100m", "old-a")
		}, []string{"Deployment/web+1 (single-replica)"}, nil, "100m", true},
		{"minAvailable equal to replicas is surged by what the batch takes", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "api", 3, "100m", "old-a", "new-a", "new-b")
			pdb(c, "api", &int3, nil)
		}, []string{"Deployment/api+1 (pdb-zero-disruptions)"}, nil, "100m", true},
		{"a budget that allows what the batch takes needs no surge", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "api", 3, "100m", "old-a", "new-a", "new-b")
			pdb(c, "api", nil, &int1)
		}, nil, nil, "", true},
		{"a budget that allows fewer than the batch takes is surged by what the batch takes, so Ready never drops", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "api", 3, "100m", "old-a")
			pdb(c, "api", &int2, nil)
		}, []string{"Deployment/api+3 (ready-count)"}, nil, "300m", true},
		{"maxUnavailable 1 lets the drain take them one at a time", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "api", 3, "100m", "old-a")
			pdb(c, "api", nil, &int1)
		}, nil, nil, "", true},
		{"no budget: as many as the batch takes Ready", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "api", 4, "100m", "old-a", "new-a")
		}, []string{"Deployment/api+2 (ready-count)"}, nil, "200m", true},
		{"maxUnavailable 0 opens for no surge", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "api", 2, "100m", "old-a", "new-a")
			pdb(c, "api", nil, &int0)
		}, nil, []string{"Deployment/api"}, "", true},
		{"minAvailable 100% opens for no surge", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "api", 2, "100m", "old-a", "new-a")
			pdb(c, "api", &pct100, nil)
		}, nil, []string{"Deployment/api"}, "", true},
		{"a StatefulSet and a bare pod are named, not surged", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "StatefulSet", "db", 1, "100m", "old-a")
			workload(c, "Pod", "lone", 1, "100m", "old-a")
		}, nil, []string{"Pod/lone-0", "StatefulSet/db"}, "", true},
		{"Recreate and GitOps-managed Deployments are named, not surged", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "rec", 1, "100m", "old-a")
			c.Deployments[0].Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
			workload(c, "Deployment", "argo", 1, "100m", "old-a")
			c.Deployments[1].Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "app:apps/Deployment:default/argo"}
			workload(c, "Deployment", "flux", 1, "100m", "old-a")
			c.Deployments[2].Labels["kustomize.toolkit.fluxcd.io/name"] = "apps"
		}, nil, []string{"Deployment/argo", "Deployment/flux", "Deployment/rec"}, "", true},
		{"an HPA's bounds are carried", func(c *snapshot.Cluster, in *Input) {
			workload(c, "Deployment", "hpa", 2, "100m", "old-a")
			in.HPAs = []autoscalingv2.HorizontalPodAutoscaler{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hpa"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "hpa"}, MinReplicas: ptr.To(int32(2)), MaxReplicas: 3}}}
		}, []string{"Deployment/hpa+2 (ready-count) [hpa 2-3]"}, nil, "200m", true},
		{"a surge short of CPU names it", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "big", 1, "3", "old-a")
		}, []string{"Deployment/big+1 (single-replica) missing cpu"}, nil, "3", false},
		{"a surge no node accepts names the affinity", func(c *snapshot.Cluster, _ *Input) {
			workload(c, "Deployment", "pinned", 1, "100m", "old-a")
			c.Pods[0].Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "old-a"}
		}, []string{"Deployment/pinned+1 (single-replica) missing affinity"}, nil, "100m", false},
		{"a surge that takes the room of the batch's own pods names it", func(c *snapshot.Cluster, in *Input) {
			workload(c, "Deployment", "big", 1, "1500m", "old-a")
			in.Excluded = []string{"new-b"}
		}, []string{"Deployment/big+1 (single-replica) missing room for the batch's own pods beside the extra replicas (cpu)"}, nil, "1500m", false},
		{"the excluded nodes take no surge", func(c *snapshot.Cluster, in *Input) {
			workload(c, "Deployment", "web", 1, "100m", "old-a")
			in.Excluded = []string{"new-a", "new-b"}
		}, []string{"Deployment/web+1 (single-replica) missing affinity"}, nil, "100m", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster("2")
			in := Input{Cluster: c, Batch: []string{"old-a"}, Number: 1}
			tt.setup(c, &in)
			b := ForBatch(in)
			var surges, untouched []string
			for _, s := range b.Surges {
				line := fmt.Sprintf("%s/%s+%d (%s)", s.Kind, s.Name, s.Extra, s.Reason)
				if s.HPA != nil {
					line += fmt.Sprintf(" [hpa %d-%d]", s.HPA.MinReplicas, s.HPA.MaxReplicas)
				}
				if s.Missing != "" {
					line += " missing " + s.Missing
				}
				surges = append(surges, line)
			}
			for _, u := range b.Untouched {
				untouched = append(untouched, u.Kind+"/"+u.Name)
			}
			if fmt.Sprint(surges) != fmt.Sprint(tt.surges) || fmt.Sprint(untouched) != fmt.Sprint(tt.untouched) {
				t.Errorf("surges %q, untouched %q; want %q, %q (%+v)", surges, untouched, tt.surges, tt.untouched, b)
			}
			if b.CPU != tt.cpu || b.Fits() != tt.fits {
				t.Errorf("cpu %q fits %v; want %q %v", b.CPU, b.Fits(), tt.cpu, tt.fits)
			}
		})
	}
}
