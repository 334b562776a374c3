package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

func addCurrentNodes(t *testing.T, group string, zones []string, n int) []string {
	t.Helper()
	_, current, err := scenario.CreateNodeGroup(testContext(t, time.Minute), client, scenario.NodeGroup{
		LabelKey: groupKey, Name: group, Zones: zones, Current: n,
		TargetLabels: map[string]string{imageKey: "ami-new"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return current
}

func planJSON(t *testing.T, args ...string) *plan.Plan {
	t.Helper()
	r := plugin(t, append([]string{"plan", "-o", "json"}, args...)...)
	if r.code != nodeupgrade.ExitOK {
		t.Fatal(r)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func sameBatch(p *plan.Plan, a, b string) bool {
	for _, batch := range p.Batches {
		names := map[string]bool{}
		for _, n := range batch.Nodes {
			names[n.Name] = true
		}
		if names[a] && names[b] {
			return true
		}
	}
	return false
}

func TestZoneBalancedOrderKeepsReplicasApart(t *testing.T) {
	t.Parallel()
	const name = "zb"
	zones := []string{"sim-a", "sim-b"}
	ctx := testContext(t, 5*time.Minute)
	// Outdated nodes first: zb-old-0 and zb-old-2 are in sim-a, where a
	// zone-by-zone batch of two would take both replicas of "pair".
	if _, _, err := scenario.CreateNodeGroup(ctx, client, scenario.NodeGroup{
		LabelKey: groupKey, Name: name, Zones: zones, Outdated: 4, OldLabels: map[string]string{imageKey: "ami-old"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "pair"}
	hosts := []string{"zb-old-0", "zb-old-2", "zb-new-0", "zb-new-1"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "pair"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{{Name: "app", Image: scenario.Image}},
					Affinity: &corev1.Affinity{
						NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
							NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
								Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: hosts,
							}}}},
						}},
						PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
						}}},
					},
				},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(name).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "pair"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: d.Spec.Selector}}
	if _, err := client.PolicyV1().PodDisruptionBudgets(name).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	waitPDBAllows(t, name, "pair", 1)
	addCurrentNodes(t, name, zones, 2)

	args := []string{name, "--target-label", target, "--max-unavailable", "2"}
	seed := 0
	for s := 1; s <= 50 && seed == 0; s++ {
		if sameBatch(planJSON(t, append(args, "--order", "random", "--seed", fmt.Sprint(s))...), "zb-old-0", "zb-old-2") {
			seed = s
		}
	}
	if seed == 0 {
		t.Fatal("no seed pairs the two replicas in the random order: the scenario tests nothing")
	}
	p := planJSON(t, append(args, "--seed", fmt.Sprint(seed))...)
	if p.Order != plan.OrderZoneBalanced {
		t.Fatalf("default order on a 2-zone group is %q, want zone-balanced", p.Order)
	}
	if sameBatch(p, "zb-old-0", "zb-old-2") {
		t.Fatalf("zone-balanced order with seed %d takes both replicas of pair in one batch: %+v", seed, p.Batches)
	}

	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	r := plugin(t, append([]string{"run", "--seed", fmt.Sprint(seed), "--post-drain-wait", "0s", "--yes", "--ignore-check", "zone-concentration"}, args...)...)
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	assertNoViolations(t, violations)
	assertUpgraded(t, name, 2)
}

// waitPDBAllows waits until the disruption controller has computed the PDB.
func waitPDBAllows(t *testing.T, ns, name string, allowed int32) {
	t.Helper()
	// Two minutes: a pod bound to a node deleted at once is replaced only
	// once the pod garbage collector found it orphaned (40 s at least).
	ctx := testContext(t, 2*time.Minute)
	w, err := client.PolicyV1().PodDisruptionBudgets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if pdb, ok := ev.Object.(*policyv1.PodDisruptionBudget); ok && pdb.Status.ObservedGeneration >= pdb.Generation && pdb.Status.DisruptionsAllowed == allowed {
			return
		}
	}
	t.Fatalf("PDB %s/%s never allowed %d disruptions; its pods:\n%s", ns, name, allowed, podsAndNodes(ns))
}

// podsAndNodes says, for a test that waited in vain, where each pod of
// ns is, whether it runs and is ready, and how its node stands.
func podsAndNodes(ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  pod %s on %q: %s, ready %v, deleting %v", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(&p), p.DeletionTimestamp != nil)
		if n, err := client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{}); p.Spec.NodeName != "" && err != nil {
			fmt.Fprintf(&b, "; node: %v", err)
		} else if err == nil {
			fmt.Fprintf(&b, "; node unschedulable %v, conditions %v, created %s", n.Spec.Unschedulable, nodeConditions(n), n.CreationTimestamp.Format(time.TimeOnly))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeConditions(n *corev1.Node) []string {
	var out []string
	for _, c := range n.Status.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status))
	}
	return out
}

// Not parallel: its stand-in cluster autoscaler is seen cluster-wide, and
// would turn other tests' "nothing adds a node" into a wait for room.
func TestRunWaitsForRoomInsteadOfEvictingIntoPending(t *testing.T) {
	const name = "room"
	zones := []string{"sim-a", "sim-b"}
	// Two outdated nodes of 4 CPUs, four 1-CPU replicas, and nowhere else to go.
	if _, _, err := scenario.CreateNodeGroup(testContext(t, time.Minute), client, scenario.NodeGroup{
		LabelKey: groupKey, Name: name, Zones: zones, Outdated: 2, OldLabels: map[string]string{imageKey: "ami-old"},
	}); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 5*time.Minute)
	if err := scenario.CreateApp(ctx, client, scenario.App{Namespace: name, Name: "web", Replicas: 4, CPU: "1",
		MinAvailable: ptr.To(intstr.FromInt32(2)), NodeSelector: map[string]string{groupKey: name}}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	// A run waits for room only while something can add a node: here a
	// cluster autoscaler's pod stands for it (the test adds the node);
	// it requests no CPU, so the one node added is room enough.
	if err := scenario.CreateApp(ctx, client, scenario.App{Namespace: name + "-ca", Name: "cluster-autoscaler", Replicas: 1, CPU: "0",
		NodeSelector: map[string]string{groupKey: name}}); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitAppsReady(ctx, client, name+"-ca"); err != nil {
		t.Fatal(err)
	}
	// Gone before the next test: while it runs, every run and plan of the
	// cluster counts on an autoscaler.
	t.Cleanup(func() { deleteApp(t, name+"-ca", "cluster-autoscaler") })
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}

	run := startBackground(t, pluginCmd("run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "0s",
		"--node-ready-timeout", "3m", "--yes", "--ignore-check", "zone-concentration", "--ignore-check", "single-replica"))
	if !run.waitFor("waiting up to", "for room") {
		t.Fatalf("the run never waited for room:\n%s", run.output())
	}
	// Nothing was evicted while there was no room.
	pods, err := client.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			t.Errorf("pod %s is %s (deleting: %v) while the run waits for room", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
		}
	}
	if len(pods.Items) != 4 {
		t.Errorf("%d pods, want the 4 original ones", len(pods.Items))
	}

	// New capacity arrives; the run goes on by itself.
	addCurrentNodes(t, name, zones, 1)
	code, out := run.wait(t, 5*time.Minute)
	violations := watcher.Stop()
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run failed after capacity arrived: exit %d\n%s", code, out)
	}
	assertNoViolations(t, violations)
	assertUpgraded(t, name, 1)

	// The run left its history as Events on the nodes.
	events, err := client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=room-old-0"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, e := range events.Items {
		if e.Source.Component == "kubectl-nodeupgrade" {
			reasons[e.Reason] = true
		}
	}
	for _, want := range []string{"NodeUpgradeTainted", "NodeUpgradeDraining", "NodeUpgradeDrained", "NodeUpgradeCordoned", "NodeUpgradeRemoved"} {
		if !reasons[want] {
			t.Errorf("no %s event on node room-old-0; got %v", want, reasons)
		}
	}
}

// deleteApp deletes a Deployment and waits until its pods are gone.
func deleteApp(t *testing.T, namespace, name string) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	if err := client.AppsV1().Deployments(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: scenario.AppLabel + "=" + name})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("the pods of %s/%s are not gone: %v", namespace, name, err)
	}
}
