package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The audit fixture: one workload per finding, plus a well-configured
// control workload that must produce none. Every workload starts from
// good(): spread over the zones, a readiness probe, a PDB with
// maxUnavailable 1; each then breaks exactly one habit.
const auditNS = "audit"

type auditCase struct {
	name     string
	replicas int32
	pdbs     []policyv1.PodDisruptionBudgetSpec // nil: the good PDB
	noPDB    bool
	mutate   func(*appsv1.Deployment)
	want     []string // the checks that must fire for this workload
}

func auditCases() []auditCase {
	// onNode pins a workload to one outdated node by hostname: its pods
	// also cannot move (pod-cannot-move).
	onNode := func(node string) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.TopologySpreadConstraints = nil
			d.Spec.Template.Spec.NodeSelector[corev1.LabelHostname] = node
		}
	}
	return []auditCase{
		{name: "control", replicas: 3, want: nil, mutate: func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 5
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
			d.Spec.Template.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
		}},
		{name: "pdb-zero", replicas: 2, pdbs: []policyv1.PodDisruptionBudgetSpec{{MinAvailable: ptr.To(intstr.FromInt32(2))}}, want: []string{"pdb-zero-disruptions"}},
		{name: "multi-pdb", replicas: 3, pdbs: []policyv1.PodDisruptionBudgetSpec{{MaxUnavailable: ptr.To(intstr.FromInt32(1))}, {MaxUnavailable: ptr.To(intstr.FromInt32(1))}}, want: []string{"multiple-pdbs"}},
		{name: "tolerate-all", replicas: 3, want: []string{"tolerates-all-taints"}, mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}},
		{name: "same-batch", replicas: 2, noPDB: true, mutate: onNode("audit-old-0"), want: []string{"no-pdb", "pod-cannot-move", "same-batch", "zone-concentration"}},
		{name: "single", replicas: 1, noPDB: true, want: []string{"single-replica"}},
		{name: "no-pdb", replicas: 3, noPDB: true, want: []string{"no-pdb"}},
		{name: "one-zone", replicas: 3, mutate: onNode("audit-old-1"), want: []string{"pod-cannot-move", "zone-concentration"}},
		{name: "no-probe", replicas: 3, want: []string{"no-readiness-probe"}, mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
		}},
		{name: "long-prestop", replicas: 3, want: []string{"prestop-exceeds-grace"}, mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
			d.Spec.Template.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "40"}}}}
		}},
		// Behind a Service of type LoadBalancer (created below), without a
		// readiness gate, a preStop delay or minReadySeconds.
		{name: "lb", replicas: 3, want: []string{"lb-min-ready-seconds", "lb-no-prestop", "lb-no-readiness-gate"}},
		{name: "scratch", replicas: 3, want: []string{"emptydir-data"}, mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}},
		{name: "pinned", replicas: 3, want: []string{"do-not-evict"}, mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
		}},
	}
}

// good is a well-configured Deployment of the audit node group.
func good(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: auditNS, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{groupKey: auditNS},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "app", Image: scenario.Image,
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
					}},
				},
			},
		},
	}
}

func TestCheckReportsEveryFindingOfTheFixture(t *testing.T) {
	t.Parallel()
	setupGroup(t, auditNS, 3, 0)
	ctx := testContext(t, 3*time.Minute)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: auditNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, c := range auditCases() {
		d := good(c.name, c.replicas)
		if c.mutate != nil {
			c.mutate(d)
		}
		if _, err := client.AppsV1().Deployments(auditNS).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pdbs := c.pdbs
		if pdbs == nil && !c.noPDB {
			pdbs = []policyv1.PodDisruptionBudgetSpec{{MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
		}
		for i, spec := range pdbs {
			spec.Selector = d.Spec.Selector
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: auditNS, Name: fmt.Sprintf("%s-%d", c.name, i)}, Spec: spec}
			if _, err := client.PolicyV1().PodDisruptionBudgets(auditNS).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		want["Deployment/"+c.name] = c.want
	}
	lb := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: auditNS, Name: "lb"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "lb"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := client.CoreV1().Services(auditNS).Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: auditNS, Name: "bare"},
		Spec:       good("bare", 1).Spec.Template.Spec,
	}
	bare.Spec.TopologySpreadConstraints = nil
	if _, err := client.CoreV1().Pods(auditNS).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["Pod/bare"] = []string{"bare-pod"}
	if err := scenario.WaitAppsReady(ctx, client, auditNS); err != nil {
		t.Fatal(err)
	}
	// Ready pods are not yet counted by the disruption controller: wait until
	// every budget that can allow a disruption does, so the audit sees the
	// settled state and not a 0 of the moment.
	for _, c := range auditCases() {
		if c.name == "pdb-zero" || c.noPDB || len(c.pdbs) > 1 {
			continue // zero by spec, none, or several (whose status the controller leaves stale)
		}
		for i := range max(len(c.pdbs), 1) {
			waitPDBAllows(t, auditNS, fmt.Sprintf("%s-%d", c.name, i), 1)
		}
	}

	r := plugin(t, "check", auditNS, "--target-label", target, "--max-unavailable", "1", "--seed", "1", "-o", "json")
	if r.code != nodeupgrade.ExitBlockers {
		t.Fatalf("check with blockers must exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	var report nodeupgrade.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	got := map[string][]string{}
	for _, f := range report.Findings {
		key := f.Kind + "/" + f.Name
		got[key] = append(got[key], f.Check)
		if f.Namespace != auditNS && f.Kind != "NodeGroup" || f.Message == "" || f.Fix == "" || strings.Contains(f.Message, "\n") {
			t.Errorf("finding %+v: want namespace %q and a one-line message and fix", f, auditNS)
		}
	}
	// The group has no node that stays and nothing adds one: its pods fit
	// nowhere.
	want["NodeGroup/"+auditNS] = []string{check.CheckNoRoom}
	for key, checks := range want {
		sort.Strings(checks)
		sort.Strings(got[key])
		if strings.Join(checks, ",") != strings.Join(got[key], ",") {
			t.Errorf("%s: findings %q, want %q", key, got[key], checks)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected findings for %s: %q", key, got[key])
		}
	}

	// The table says the same, and -n limits it to one namespace.
	table := plugin(t, "check", auditNS, "--target-label", target, "--max-unavailable", "1", "--seed", "1")
	if table.code != nodeupgrade.ExitBlockers || !strings.Contains(table.stdout, "pdb-zero-disruptions") {
		t.Errorf("table output: %s", table)
	}
	other := plugin(t, "check", auditNS, "--target-label", target, "-n", "default", "-o", "json")
	if other.code != nodeupgrade.ExitOK || !strings.Contains(other.stdout, `"findings": []`) {
		t.Errorf("check -n default should find nothing: %s", other)
	}
}
