package check

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const ns = "shop"

func node(name, zone string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelZone: zone}}}
}

func ctrl(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}}
}

// t0 is the time the audit is run at where a test says.
var t0 = time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)

// startedAgo annotates the i-th pod karpenter.sh/do-not-disrupt=value and
// starts it ago before t0, the audit's time.
func startedAgo(in *Input, i int, value string, ago time.Duration) {
	in.Now = t0
	in.Pods[i].Annotations = map[string]string{AnnDoNotDisrupt: value}
	in.Pods[i].Status.StartTime = &metav1.Time{Time: t0.Add(-ago)}
}

// webPod is a pod of the well-configured control workload.
func webPod(name, nodeName string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web", "pod-template-hash": "abc"},
			OwnerReferences: ctrl("ReplicaSet", "web-abc")},
		Spec: corev1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: "target-health.alb.ingress.k8s.aws/web_web_80"}},
			Containers: []corev1.Container{{
				Name:           "web",
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
				Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// control builds the well-configured workload: Deployment "web", 3 replicas
// over 3 zones on outdated nodes of 3 batches, PDB maxUnavailable 1,
// readiness probe, preStop sleep 5 < grace 30, readiness gate,
// minReadySeconds 5, behind a LoadBalancer Service. It has no findings.
func control() *Input {
	return &Input{
		Nodes: []corev1.Node{node("old-a", "a"), node("old-b", "b"), node("old-c", "c"),
			node("new-a", "a"), node("new-b", "b"), node("new-c", "c"), node("old-a2", "a")},
		Pods: []corev1.Pod{webPod("web-abc-1", "old-a"), webPod("web-abc-2", "old-b"), webPod("web-abc-3", "old-c")},
		PDBs: []policyv1.PodDisruptionBudget{{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Generation: 1},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3},
		}},
		ReplicaSets: []appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-abc", OwnerReferences: ctrl("Deployment", "web")},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}},
		Deployments: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), MinReadySeconds: 5}}},
		Services: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"}}}},
		Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{labelGateInject: "enabled"}}}},
		Outdated:   []string{"old-a", "old-b", "old-c", "old-a2"},
		Batches:    [][]string{{"old-a"}, {"old-b"}, {"old-c", "old-a2"}},
	}
}

func eachPod(in *Input, f func(p *corev1.Pod)) {
	for i := range in.Pods {
		f(&in.Pods[i])
	}
}

func containers0(in *Input, f func(c *corev1.Container)) {
	eachPod(in, func(p *corev1.Pod) { f(&p.Spec.Containers[0]) })
}

func setReplicas(in *Input, n int32) {
	in.Deployments[0].Spec.Replicas = ptr.To(n)
	in.ReplicaSets[0].Spec.Replicas = ptr.To(n)
}

func preStopExec(cmd ...string) *corev1.Lifecycle {
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}}
}

func TestControlHasNoFindings(t *testing.T) {
	if got := Run(*control()); len(got) != 0 {
		t.Fatalf("control workload: want no findings, got %+v", got)
	}
}

func TestChecks(t *testing.T) {
	web := [3]string{"Deployment", ns, "web"}
	cases := []struct {
		name   string
		mutate func(in *Input)
		check  string
		who    [3]string // kind, namespace, name of the workload expected (not) to be reported
		fires  bool
		msg    string // regexp the message must match when it fires
	}{
		{"pdb minAvailable equals replicas", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable, in.PDBs[0].Spec.MinAvailable = nil, ptr.To(intstr.FromInt32(3))
		}, CheckPDBZeroDisruptions, web, true, `^PodDisruptionBudget "shop/web" allows 0 disruptions \(minAvailable 3, 3 replicas\)$`},
		{"pdb minAvailable below replicas", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable, in.PDBs[0].Spec.MinAvailable = nil, ptr.To(intstr.FromInt32(2))
		}, CheckPDBZeroDisruptions, web, false, ""},
		{"pdb minAvailable 100%", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable, in.PDBs[0].Spec.MinAvailable = nil, ptr.To(intstr.FromString("100%"))
		}, CheckPDBZeroDisruptions, web, true, `minAvailable 100%, 3 replicas`},
		{"pdb minAvailable 90% rounds up to all", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable, in.PDBs[0].Spec.MinAvailable = nil, ptr.To(intstr.FromString("90%"))
		}, CheckPDBZeroDisruptions, web, true, `minAvailable 90%`},
		{"pdb minAvailable 60% of 3", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable, in.PDBs[0].Spec.MinAvailable = nil, ptr.To(intstr.FromString("60%"))
		}, CheckPDBZeroDisruptions, web, false, ""},
		{"pdb maxUnavailable 0", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}, CheckPDBZeroDisruptions, web, true, `\(maxUnavailable 0\)`},
		{"pdb maxUnavailable 0%", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable = ptr.To(intstr.FromString("0%"))
		}, CheckPDBZeroDisruptions, web, true, `\(maxUnavailable 0%\)`},
		{"pdb maxUnavailable 10% rounds up to 1", func(in *Input) {
			in.PDBs[0].Spec.MaxUnavailable = ptr.To(intstr.FromString("10%"))
		}, CheckPDBZeroDisruptions, web, false, ""},
		{"pdb allows 0 disruptions now", func(in *Input) {
			in.PDBs[0].Status.DisruptionsAllowed, in.PDBs[0].Status.CurrentHealthy = 0, 2
			notReady(&in.Pods[2])
		}, CheckPDBZeroDisruptions, web, true, `allows 0 disruptions now \(currentHealthy 2, desiredHealthy 2, expectedPods 3\)`},
		{"pdb status not yet observed", func(in *Input) {
			in.PDBs[0].Generation, in.PDBs[0].Status = 2, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1}
		}, CheckPDBZeroDisruptions, web, false, ""},

		{"two pdbs select the pods", func(in *Input) {
			p := in.PDBs[0]
			p.Name = "web-2"
			in.PDBs = append(in.PDBs, p)
		}, CheckMultiplePDBs, web, true, `^PodDisruptionBudgets "web", "web-2" select the same pods \(3 pods, e\.g\. "shop/web-abc-1"\)`},
		{"second pdb selects other pods", func(in *Input) {
			p := in.PDBs[0]
			p.Name, p.Spec.Selector = "api", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}
			in.PDBs = append(in.PDBs, p)
		}, CheckMultiplePDBs, web, false, ""},
		{"second pdb in another namespace", func(in *Input) {
			p := in.PDBs[0]
			p.Namespace = "other"
			in.PDBs = append(in.PDBs, p)
		}, CheckMultiplePDBs, web, false, ""},

		{"toleration Exists without key", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} })
		}, CheckToleratesAllTaints, web, true, `^3 pods with a toleration operator Exists and no key`},
		{"toleration Exists without key, NoSchedule", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			})
		}, CheckToleratesAllTaints, web, true, ``},
		{"toleration Exists with a key", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}
			})
		}, CheckToleratesAllTaints, web, false, ""},
		{"toleration Exists without key, NoExecute only", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
			})
		}, CheckToleratesAllTaints, web, false, ""},

		{"bare pod on an outdated node", func(in *Input) {
			p := webPod("debug", "old-a")
			p.OwnerReferences, p.Labels = nil, nil
			in.Pods = append(in.Pods, p)
		}, CheckBarePod, [3]string{"Pod", ns, "debug"}, true, `^pod "shop/debug" has no controller`},
		{"bare pod on a new node", func(in *Input) {
			p := webPod("debug", "new-a")
			p.OwnerReferences, p.Labels = nil, nil
			in.Pods = append(in.Pods, p)
		}, CheckBarePod, [3]string{"Pod", ns, "debug"}, false, ""},
		{"pod with a non-controller owner is bare", func(in *Input) {
			p := webPod("debug", "old-b")
			p.OwnerReferences[0].Controller = nil
			in.Pods = append(in.Pods, p)
		}, CheckBarePod, [3]string{"Pod", ns, "debug"}, true, ""},

		{"all replicas in one batch, no pdb", func(in *Input) {
			in.PDBs = nil
			in.Batches = [][]string{{"old-a", "old-b", "old-c"}}
		}, CheckSameBatch, web, true, `^all 3 ready of 3 replicas run on nodes of batch 1 of 1`},
		{"all ready replicas in one batch, one not ready", func(in *Input) {
			in.PDBs = nil
			in.Batches = [][]string{{"old-a", "old-b"}, {"old-c"}}
			in.Pods[2].Status.Conditions[0].Status = corev1.ConditionFalse
		}, CheckSameBatch, web, true, `^all 2 ready of 3 replicas run on nodes of batch 1 of 2`},
		{"replicas over several batches", func(in *Input) { in.PDBs = nil }, CheckSameBatch, web, false, ""},
		{"one ready replica on a new node", func(in *Input) {
			in.PDBs = nil
			in.Batches = [][]string{{"old-a", "old-b"}}
			in.Pods[2].Spec.NodeName = "new-c"
		}, CheckSameBatch, web, false, ""},
		{"all replicas in one batch, pdb evicts one at a time", func(in *Input) {
			in.Batches = [][]string{{"old-a", "old-b", "old-c"}}
		}, CheckSameBatch, web, false, ""},

		{"single replica", func(in *Input) {
			setReplicas(in, 1)
			in.Pods = in.Pods[:1]
		}, CheckSingleReplica, web, true, `^1 replica, on outdated node "old-a"`},
		{"single-replica statefulset", func(in *Input) {
			in.StatefulSets = []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}}}
			p := webPod("db-0", "old-b")
			p.OwnerReferences, p.Labels = ctrl("StatefulSet", "db"), map[string]string{"app": "db"}
			in.Pods = append(in.Pods, p)
		}, CheckSingleReplica, [3]string{"StatefulSet", ns, "db"}, true, ""},
		{"single-replica replicaset without deployment", func(in *Input) {
			in.ReplicaSets = append(in.ReplicaSets, appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo"},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)}})
			p := webPod("solo-x", "old-b")
			p.OwnerReferences, p.Labels = ctrl("ReplicaSet", "solo"), map[string]string{"app": "solo"}
			in.Pods = append(in.Pods, p)
		}, CheckSingleReplica, [3]string{"ReplicaSet", ns, "solo"}, true, `^1 replica, on outdated node "old-b"`},
		{"single replica already terminating", func(in *Input) {
			setReplicas(in, 1)
			in.Pods = in.Pods[:1]
			in.Pods[0].DeletionTimestamp = &metav1.Time{}
		}, CheckSingleReplica, web, false, ""},
		{"two replicas", func(in *Input) {
			setReplicas(in, 2)
			in.Pods = in.Pods[:2]
		}, CheckSingleReplica, web, false, ""},

		{"no pdb", func(in *Input) { in.PDBs = nil }, CheckNoPDB, web, true, `^3 replicas and no PodDisruptionBudget`},
		{"pdb present", func(in *Input) {}, CheckNoPDB, web, false, ""},
		{"pdb without selector selects no pod", func(in *Input) { in.PDBs[0].Spec.Selector = nil }, CheckNoPDB, web, true, ""},
		{"pdb with invalid selector is skipped", func(in *Input) {
			in.PDBs[0].Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, CheckNoPDB, web, true, ""},
		{"single replica needs no pdb warning", func(in *Input) {
			in.PDBs = nil
			setReplicas(in, 1)
			in.Pods = in.Pods[:1]
		}, CheckNoPDB, web, false, ""},

		{"replicas in one zone", func(in *Input) {
			in.Pods[1].Spec.NodeName, in.Pods[2].Spec.NodeName = "old-a2", "old-a"
		}, CheckZoneConcentration, web, true, `^3 replicas spread a:3 b:0 c:0 over the group's 3 zones \(skew 3 > 1\)`},
		{"2-1-0 over three zones", func(in *Input) {
			in.Pods[2].Spec.NodeName = "old-a2"
		}, CheckZoneConcentration, web, true, `skew 2`},
		{"2-1-0 by the deprecated zone label", func(in *Input) {
			for i := range in.Nodes {
				n := &in.Nodes[i]
				n.Labels = map[string]string{labelZoneDeprecated: n.Labels[labelZone]}
			}
			in.Pods[2].Spec.NodeName = "old-a2"
		}, CheckZoneConcentration, web, true, `^3 replicas spread a:2 b:1 c:0 over the group's 3 zones \(skew 2 > 1\)`},
		{"4 replicas 2-1-1", func(in *Input) {
			setReplicas(in, 4)
			in.Pods = append(in.Pods, webPod("web-abc-4", "old-a2"))
		}, CheckZoneConcentration, web, false, ""},

		{"no readiness probe", func(in *Input) {
			containers0(in, func(c *corev1.Container) { c.ReadinessProbe = nil })
		}, CheckNoReadinessProbe, web, true, `^container "web" without readinessProbe`},
		{"job without readiness probe", func(in *Input) {
			p := webPod("migrate-x", "old-a")
			p.OwnerReferences, p.Labels = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "migrate", Controller: ptr.To(true)}}, nil
			p.Spec.Containers[0].ReadinessProbe = nil
			in.Pods = append(in.Pods, p)
		}, CheckNoReadinessProbe, [3]string{"Job", ns, "migrate"}, false, ""},

		{"preStop sleep equals grace", func(in *Input) {
			containers0(in, func(c *corev1.Container) { c.Lifecycle = preStopExec("/bin/sleep", "30") })
		}, CheckPreStopExceedsGrace, web, true, `^container "web" sleeps 30s in preStop, terminationGracePeriodSeconds 30: killed mid-sleep$`},
		{"preStop sh -c sleep over default grace", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) {
				p.Spec.TerminationGracePeriodSeconds = nil
				p.Spec.Containers[0].Lifecycle = preStopExec("/bin/sh", "-c", "sleep 20 && nginx -s quit; sleep 15")
			})
		}, CheckPreStopExceedsGrace, web, true, `sleeps 35s in preStop, terminationGracePeriodSeconds 30`},
		{"preStop lifecycle sleep action", func(in *Input) {
			containers0(in, func(c *corev1.Container) {
				c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 40}}}
			})
		}, CheckPreStopExceedsGrace, web, true, `sleeps 40s`},
		{"preStop sh -c sleep within raised grace", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) {
				p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
				p.Spec.Containers[0].Lifecycle = preStopExec("sh", "-c", "sleep 30")
			})
		}, CheckPreStopExceedsGrace, web, false, ""},

		{"lb pod without gate in unlabelled namespace", func(in *Input) {
			in.Namespaces[0].Labels = nil
			eachPod(in, func(p *corev1.Pod) { p.Spec.ReadinessGates = nil })
		}, CheckLBNoReadinessGate, web, true, `^3 pods behind LoadBalancer Service "shop/web": no target-health readiness gate`},
		{"lb pod with gate in unlabelled namespace", func(in *Input) {
			in.Namespaces[0].Labels = nil
		}, CheckLBNoReadinessGate, web, false, ""},
		{"clusterIP pod without gate", func(in *Input) {
			in.Namespaces[0].Labels = nil
			in.Services[0].Spec.Type = corev1.ServiceTypeClusterIP
			eachPod(in, func(p *corev1.Pod) { p.Spec.ReadinessGates = nil })
		}, CheckLBNoReadinessGate, web, false, ""},

		{"lb pod without preStop", func(in *Input) {
			containers0(in, func(c *corev1.Container) { c.Lifecycle = nil })
		}, CheckLBNoPreStop, web, true, `^3 pods behind LoadBalancer Service "shop/web": no preStop delay`},
		{"lb pod with preStop sleep 0", func(in *Input) {
			containers0(in, func(c *corev1.Container) { c.Lifecycle = preStopExec("sleep", "0") })
		}, CheckLBNoPreStop, web, true, ""},
		{"clusterIP pod without preStop", func(in *Input) {
			in.Services[0].Spec.Type = corev1.ServiceTypeClusterIP
			containers0(in, func(c *corev1.Container) { c.Lifecycle = nil })
		}, CheckLBNoPreStop, web, false, ""},

		{"lb deployment minReadySeconds 0", func(in *Input) {
			in.Deployments[0].Spec.MinReadySeconds = 0
		}, CheckLBMinReadySeconds, web, true, `^Deployment behind LoadBalancer Service "shop/web" has minReadySeconds 0`},
		{"lb service selects other pods", func(in *Input) {
			in.Deployments[0].Spec.MinReadySeconds = 0
			in.Services[0].Spec.Selector = map[string]string{"app": "api"}
		}, CheckLBMinReadySeconds, web, false, ""},

		{"emptyDir volume", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			})
		}, CheckEmptyDirData, web, true, `^3 pods with emptyDir volume "cache": the data is lost on drain$`},
		{"configMap volume", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
			})
		}, CheckEmptyDirData, web, false, ""},

		{"safe-to-evict false", func(in *Input) {
			in.Pods[0].Annotations = map[string]string{annSafeToEvict: "false"}
		}, CheckDoNotEvict, web, true, `^1 pod annotated cluster-autoscaler.kubernetes.io/safe-to-evict="false"`},
		{"karpenter do-not-disrupt, another provider", func(in *Input) {
			in.Pods[1].Annotations = map[string]string{AnnDoNotDisrupt: "true"}
		}, CheckDoNotEvict, web, true, `karpenter.sh/do-not-disrupt="true"`},
		{"karpenter do-not-disrupt for 5m, started 4m ago", func(in *Input) {
			startedAgo(in, 1, "5m", 4*time.Minute)
		}, CheckDoNotEvict, web, true, `^1 pod annotated karpenter.sh/do-not-disrupt="5m"`},
		{"karpenter do-not-disrupt for 5m, started 6m ago", func(in *Input) {
			startedAgo(in, 1, "5m", 6*time.Minute)
		}, CheckDoNotEvict, web, false, ""},
		{"karpenter do-not-disrupt of an invalid value", func(in *Input) {
			startedAgo(in, 1, "5 minutes", time.Minute)
		}, CheckDoNotEvict, web, false, ""},
		{"karpenter do-not-disrupt where Karpenter replaces the nodes", func(in *Input) {
			in.DoNotDisrupt = true
			in.Pods[1].Annotations = map[string]string{AnnDoNotDisrupt: "true"}
		}, CheckDoNotEvict, web, false, ""},

		{"do-not-disrupt true", func(in *Input) {
			in.DoNotDisrupt = true
			in.Pods[1].Annotations = map[string]string{AnnDoNotDisrupt: "true"}
		}, CheckDoNotDisrupt, web, true, `^pod "shop/web-abc-2" annotated karpenter.sh/do-not-disrupt="true": Karpenter does not drift`},
		{"do-not-disrupt 5m, started 4m ago", func(in *Input) {
			in.DoNotDisrupt = true
			startedAgo(in, 0, "5m", 4*time.Minute)
			startedAgo(in, 2, "5m", 2*time.Minute)
		}, CheckDoNotDisrupt, web, true, `^2 pods annotated karpenter.sh/do-not-disrupt="5m" \(in force until 2026-11-28T03:03:00Z\) \(e.g. "shop/web-abc-1"\)`},
		{"do-not-disrupt 5m, not started", func(in *Input) {
			in.DoNotDisrupt = true
			in.Pods[0].Annotations = map[string]string{AnnDoNotDisrupt: "5m"}
		}, CheckDoNotDisrupt, web, true, `annotated karpenter.sh/do-not-disrupt="5m": `},
		{"do-not-disrupt on a DaemonSet pod", func(in *Input) {
			in.DoNotDisrupt = true
			p := webPod("agent-x", "old-c")
			p.OwnerReferences, p.Labels = ctrl("DaemonSet", "agent"), map[string]string{"app": "agent"}
			p.Annotations = map[string]string{AnnDoNotDisrupt: "true"}
			in.Pods = append(in.Pods, p)
		}, CheckDoNotDisrupt, [3]string{"DaemonSet", ns, "agent"}, true, `^pod "shop/agent-x"`},
		{"do-not-disrupt 5m, started 6m ago", func(in *Input) {
			in.DoNotDisrupt = true
			startedAgo(in, 1, "5m", 6*time.Minute)
		}, CheckDoNotDisrupt, web, false, ""},
		{"do-not-disrupt of an invalid value", func(in *Input) {
			in.DoNotDisrupt = true
			startedAgo(in, 1, "-5m", time.Minute)
		}, CheckDoNotDisrupt, web, false, ""},
		{"do-not-disrupt on a pod terminating", func(in *Input) {
			in.DoNotDisrupt = true
			in.Pods[1].Annotations = map[string]string{AnnDoNotDisrupt: "true"}
			in.Pods[1].DeletionTimestamp = &metav1.Time{Time: t0}
		}, CheckDoNotDisrupt, web, false, ""},
		{"do-not-disrupt on a node that stays", func(in *Input) {
			in.DoNotDisrupt = true
			in.Pods[1].Annotations = map[string]string{AnnDoNotDisrupt: "true"}
			in.Pods[1].Spec.NodeName = "new-b"
		}, CheckDoNotDisrupt, web, false, ""},
		{"node labelled hold=true by its owner", func(in *Input) {
			setLabel(&in.Nodes[0], LabelHold, "true")
		}, CheckNodeHold, [3]string{"Node", "", "old-a"}, true, `^node "old-a" is labelled nodeupgrade.dev/hold=true: the run skips it`},
		{"node labelled hold=false", func(in *Input) {
			setLabel(&in.Nodes[0], LabelHold, "false")
		}, CheckNodeHold, [3]string{"Node", "", "old-a"}, false, ""},
		{"safe-to-evict true", func(in *Input) {
			eachPod(in, func(p *corev1.Pod) { p.Annotations = map[string]string{annSafeToEvict: "true"} })
		}, CheckDoNotEvict, web, false, ""},
	}
	fired := map[string]bool{}
	quiet := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.check+"/"+tc.name, func(t *testing.T) {
			in := control()
			tc.mutate(in)
			got := Run(*in)
			if slim, same := sameOnSlimmed(in, got); !same {
				t.Fatalf("on the snapshot's slim objects the audit finds\n%+v\nwant what it finds on the full ones\n%+v", slim, got)
			}
			var hit *Finding
			for i := range got {
				f := &got[i]
				if f.Check == tc.check && f.Kind == tc.who[0] && f.Namespace == tc.who[1] && f.Name == tc.who[2] {
					if hit != nil {
						t.Fatalf("%s reported twice for %v", tc.check, tc.who)
					}
					hit = f
				}
			}
			if !tc.fires {
				quiet[tc.check] = true
				if hit != nil {
					t.Fatalf("want no %s finding, got %+v", tc.check, *hit)
				}
				return
			}
			fired[tc.check] = true
			if hit == nil {
				t.Fatalf("want a %s finding for %v, got %+v", tc.check, tc.who, got)
			}
			if want := severities[tc.check]; hit.Severity != want {
				t.Errorf("severity %s, want %s", hit.Severity, want)
			}
			if tc.msg != "" && !regexp.MustCompile(tc.msg).MatchString(hit.Message) {
				t.Errorf("message %q does not match %q", hit.Message, tc.msg)
			}
			if hit.Fix == "" || strings.Contains(hit.Message+hit.Fix, "\n") {
				t.Errorf("want a one-line message and fix, got %q / %q", hit.Message, hit.Fix)
			}
			if len(hit.Nodes) == 0 {
				t.Errorf("want the outdated nodes, got none")
			}
			for _, n := range hit.Nodes {
				if !strings.HasPrefix(n, "old-") {
					t.Errorf("node %q is not outdated", n)
				}
			}
		})
	}
	for _, c := range Names() {
		if slices.Contains(ByPlanner, c) {
			continue // tested in pkg/plan
		}
		if !fired[c] || !quiet[c] {
			t.Errorf("check %s lacks a firing case (%v) or a close quiet case (%v)", c, fired[c], quiet[c])
		}
	}
}

func TestNames(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	seen := map[string]bool{}
	names := Names()
	for i, n := range names {
		if !kebab.MatchString(n) || seen[n] {
			t.Errorf("bad or duplicate check name %q", n)
		}
		seen[n] = true
		s, ok := SeverityOf(n)
		if !ok {
			t.Errorf("%s has no severity", n)
		}
		if i > 0 {
			if prev, _ := SeverityOf(names[i-1]); prev == Warning && s == Blocker {
				t.Errorf("blockers must come first: %s after a warning", n)
			}
		}
	}
	if len(names) != len(severities) {
		t.Errorf("Names has %d checks, severities %d", len(names), len(severities))
	}
	names[0] = "changed"
	if Names()[0] == "changed" {
		t.Error("Names returns shared state")
	}
}

func TestWorkloadOf(t *testing.T) {
	rsOwner := DeploymentOwners{{"shop", "web-abc"}: "web"}
	pod := func(refs []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", OwnerReferences: refs}}
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		rsOwner DeploymentOwners
		want    [3]string
	}{
		{"deployment via replicaset", pod(ctrl("ReplicaSet", "web-abc")), rsOwner, [3]string{"Deployment", ns, "web"}},
		{"replicaset without deployment", pod(ctrl("ReplicaSet", "lone")), rsOwner, [3]string{"ReplicaSet", ns, "lone"}},
		{"nil rsOwner", pod(ctrl("ReplicaSet", "web-abc")), nil, [3]string{"ReplicaSet", ns, "web-abc"}},
		{"statefulset", pod(ctrl("StatefulSet", "db")), rsOwner, [3]string{"StatefulSet", ns, "db"}},
		{"job", pod([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", Controller: ptr.To(true)}}), rsOwner, [3]string{"Job", ns, "j"}},
		{"daemonset", pod(ctrl("DaemonSet", "ds")), rsOwner, [3]string{"DaemonSet", ns, "ds"}},
		{"bare", pod(nil), rsOwner, [3]string{"Pod", ns, "p"}},
		{"owner but no controller", pod([]metav1.OwnerReference{{Kind: "ConfigMap", Name: "c"}}), rsOwner, [3]string{"Pod", ns, "p"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, n, name := WorkloadOf(tc.pod, tc.rsOwner)
			if got := [3]string{k, n, name}; got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRunScope(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(in *Input)
		want   []string // "check kind ns/name" of every finding, in order
	}{
		{"daemonset, mirror and finished pods are ignored", func(in *Input) {
			ds := webPod("ds-1", "old-a")
			ds.OwnerReferences, ds.Labels = ctrl("DaemonSet", "agent"), nil
			mirror := webPod("kube-proxy-old-a", "old-a")
			mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "old-a", Controller: ptr.To(true)}}
			mirror.Annotations, mirror.Labels = map[string]string{corev1.MirrorPodAnnotationKey: "x"}, nil
			done := webPod("once", "old-a")
			done.OwnerReferences, done.Labels, done.Status.Phase = nil, nil, corev1.PodSucceeded
			in.Pods = append(in.Pods, ds, mirror, done)
		}, nil},
		{"namespace filter", func(in *Input) {
			p := webPod("debug", "old-a")
			p.Namespace, p.OwnerReferences = "tools", nil
			in.Pods = append(in.Pods, p)
			in.Namespace = "shop"
		}, nil},
		{"sorted blockers first, then namespace, kind, name, check", func(in *Input) {
			in.PDBs = nil
			b := webPod("debug", "old-a")
			b.Namespace, b.OwnerReferences, b.Labels = "a-tools", nil, nil
			in.Pods = append(in.Pods, b)
		}, []string{
			"bare-pod Pod a-tools/debug",
			"no-pdb Deployment shop/web",
		}},
		{"one finding per workload and check, nodes aggregated", func(in *Input) {
			containers0(in, func(c *corev1.Container) { c.ReadinessProbe = nil })
		}, []string{"no-readiness-probe Deployment shop/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := control()
			tc.mutate(in)
			var got []string
			for _, f := range Run(*in) {
				got = append(got, fmt.Sprintf("%s %s %s/%s", f.Check, f.Kind, f.Namespace, f.Name))
				if f.Check == CheckNoReadinessProbe && !reflect.DeepEqual(f.Nodes, []string{"old-a", "old-b", "old-c"}) {
					t.Errorf("nodes %v, want the three outdated nodes once each", f.Nodes)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPDBZeroWhileRecovering: a budget that allows no disruption now
// only because an interrupted run's evictions are still coming back is
// a warning, the run waits for them; a budget that allows none by its
// spec, or one of a workload nobody evicted, still blocks.
func TestPDBZeroWhileRecovering(t *testing.T) {
	web := Controller{Kind: "ReplicaSet", Namespace: ns, Name: "web-abc"}
	zeroNow := func(in *Input) {
		in.PDBs[0].Status.DisruptionsAllowed, in.PDBs[0].Status.CurrentHealthy = 0, 2
		notReady(&in.Pods[2])
	}
	// The status of a budget whose pods are all Ready again, before the
	// disruption controller counted them (a re-run right after a kill).
	lagging := func(in *Input) { in.PDBs[0].Status.DisruptionsAllowed, in.PDBs[0].Status.CurrentHealthy = 0, 2 }
	cases := []struct {
		name       string
		mutate     func(in *Input)
		recovering []Controller
		want       Severity
		msg        string
	}{
		{"zero now, web recovering", zeroNow, []Controller{web}, Warning,
			`allows 0 disruptions now \(currentHealthy 2, desiredHealthy 2, expectedPods 3\) while the pods an interrupted run evicted come back$`},
		{"zero now, nothing recovering", zeroNow, nil, Blocker, `allows 0 disruptions now \(currentHealthy 2, desiredHealthy 2, expectedPods 3\)$`},
		{"zero now, another workload recovering", zeroNow, []Controller{{Kind: "ReplicaSet", Namespace: ns, Name: "api-abc"}}, Blocker, `now \(`},
		{"zero now, a ReplicaSet of the same name in another namespace recovering", zeroNow,
			[]Controller{{Kind: "ReplicaSet", Namespace: "other", Name: "web-abc"}}, Blocker, `now \(`},
		{"zero now by a status behind its Ready pods, nothing recovering", lagging, nil, Warning,
			`allows 0 disruptions now \(currentHealthy 2, desiredHealthy 2, expectedPods 3\), but 3 of its pods are Ready now: its status has not caught up$`},
		// Karpenter drifted a node before the run held it off: its pod's
		// replacement waits for a node.
		{"zero now, a pod of it Pending, nothing recovering", func(in *Input) {
			zeroNow(in)
			in.Pods[2].Status.Phase = corev1.PodPending
		}, nil, Warning, `allows 0 disruptions now \(currentHealthy 2, desiredHealthy 2, expectedPods 3\) while 1 of its pods are Pending, replacing pods that went$`},
		{"zero by spec, a pod of it Pending", func(in *Input) {
			zeroNow(in)
			in.Pods[2].Status.Phase = corev1.PodPending
			in.PDBs[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}, nil, Blocker, `allows 0 disruptions \(maxUnavailable 0\)$`},
		{"zero by spec, web recovering", func(in *Input) {
			zeroNow(in)
			in.PDBs[0].Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		}, []Controller{web}, Blocker, `allows 0 disruptions \(maxUnavailable 0\)$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := control()
			tc.mutate(in)
			in.Recovering = tc.recovering
			var hits []Finding
			for _, f := range Run(*in) {
				if f.Check == CheckPDBZeroDisruptions {
					hits = append(hits, f)
				}
			}
			if len(hits) != 1 {
				t.Fatalf("want one %s finding, got %+v", CheckPDBZeroDisruptions, hits)
			}
			if hits[0].Severity != tc.want {
				t.Errorf("severity %s, want %s", hits[0].Severity, tc.want)
			}
			if !regexp.MustCompile(tc.msg).MatchString(hits[0].Message) {
				t.Errorf("message %q does not match %q", hits[0].Message, tc.msg)
			}
			if tc.want == Warning && !strings.Contains(hits[0].Fix, "--drain-timeout") {
				t.Errorf("fix %q does not say what bounds the wait", hits[0].Fix)
			}
		})
	}
}

func TestPreStopSleep(t *testing.T) {
	cases := []struct {
		cmd     []string
		secs    float64
		isSleep bool
	}{
		{[]string{"sleep", "5"}, 5, true},
		{[]string{"/bin/sleep", "2m"}, 120, true},
		{[]string{"/bin/sh", "-c", "sleep 0.5"}, 0.5, true},
		{[]string{"bash", "-c", "sleep 10; kill -QUIT 1"}, 10, true},
		{[]string{"/pre-stop.sh"}, 0, false},
		{[]string{"sh", "-c", "nginx -s quit"}, 0, false},
		{[]string{"sleep", "forever"}, 0, false},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.cmd, " "), func(t *testing.T) {
			s, ok := preStopSleep(&corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: tc.cmd}})
			if s != tc.secs || ok != tc.isSleep {
				t.Errorf("got %v, %v; want %v, %v", s, ok, tc.secs, tc.isSleep)
			}
		})
	}
}

// notReady marks a pod not Ready, as the disruption controller counts it.
func notReady(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

func setLabel(n *corev1.Node, key, value string) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[key] = value
}
