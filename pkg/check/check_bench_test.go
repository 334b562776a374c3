package check

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// bigInput is a synthetic large cluster: 5,000 nodes over 3 zones, 50
// namespaces of 10 Deployments of 300 pods (150,000 pods), one PDB per
// Deployment, one LoadBalancer Service per namespace, half the nodes
// outdated in batches of 100.
func bigInput() Input {
	const nodes, namespaces, perNS, podsPer, batch = 5000, 50, 10, 300, 100
	in := Input{}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	var cur []string
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("ip-10-0-%d-%d", i/250, i%250)
		in.Nodes = append(in.Nodes, node(name, zones[i%len(zones)]))
		if i%2 == 0 {
			in.Outdated = append(in.Outdated, name)
			if cur = append(cur, name); len(cur) == batch {
				in.Batches, cur = append(in.Batches, cur), nil
			}
		}
	}
	if len(cur) > 0 {
		in.Batches = append(in.Batches, cur)
	}
	n := 0
	for s := 0; s < namespaces; s++ {
		nsName := fmt.Sprintf("team-%02d", s)
		in.Namespaces = append(in.Namespaces, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName,
			Labels: map[string]string{labelGateInject: "enabled"}}})
		in.Services = append(in.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: "front"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "app-0"}}})
		for d := 0; d < perNS; d++ {
			app := fmt.Sprintf("app-%d", d)
			rs := app + "-5d8f9c"
			in.Deployments = append(in.Deployments, appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: app},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](podsPer), MinReadySeconds: 5}})
			in.ReplicaSets = append(in.ReplicaSets, appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: rs,
				OwnerReferences: ctrl("Deployment", app)}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](podsPer)}})
			in.PDBs = append(in.PDBs, policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: nsName, Name: app, Generation: 1},
				Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("10%")),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
				Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 30},
			})
			// one map for the Deployment's pods, as the plan's snapshot
			// interns them
			podLabels := map[string]string{"app": app, "pod-template-hash": "5d8f9c", "team": nsName}
			for k := 0; k < podsPer; k++ {
				p := webPod(fmt.Sprintf("%s-%05d", rs, k), in.Nodes[n%nodes].Name)
				n++
				p.Namespace, p.OwnerReferences = nsName, ctrl("ReplicaSet", rs)
				p.Labels = podLabels
				p.Spec.Tolerations = []corev1.Toleration{
					{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
					{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				}
				if d%3 == 0 {
					p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				}
				in.Pods = append(in.Pods, p)
			}
		}
	}
	return in
}

func BenchmarkRun5000Nodes150kPods(b *testing.B) {
	in := bigInput()
	var findings int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		findings = len(Run(in))
	}
	b.ReportMetric(float64(findings), "findings")
}
