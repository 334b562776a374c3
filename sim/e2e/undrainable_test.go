package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

// TestAWSUndrainableCordon: one node's pod is held by a PDB allowing no
// disruption. With --undrainable cordon the run replaces the other nodes,
// quarantines the held one (cordoned, labelled, its instance kept) and
// exits ExitPaused naming it with the pod and the PDB; once the PDB is
// relaxed, the same run takes it first (batch 1, noted in its plan) and
// finishes. No PDB is violated.
func TestAWSUndrainableCordon(t *testing.T) {
	t.Parallel()
	const name = "aws-undrainable"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "db", Replicas: 1, MinAvailable: num(1)})
	ctx := testContext(t, 5*time.Minute)
	args := []string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--seed", "1", "--yes",
		"--undrainable", "cordon", "--drain-timeout", "20s", "--ignore-check", "pdb-zero-disruptions", "--ignore-check", "single-replica"}
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	held := heldNode(t, ctx, name, "db")
	r := g.run(t, args...)
	if r.code != nodeupgrade.ExitPaused || !oneLine(r.stderr) ||
		!strings.Contains(r.stderr, `node "`+held+`" (pod "`+name+`/db-`) || !strings.Contains(r.stderr, `PodDisruptionBudget "`+name+`/db"`) {
		t.Fatalf("run: want exit %d naming node %q, its pod and PDB, got %s", nodeupgrade.ExitPaused, held, r)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, held, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the quarantined node is gone: %v", err)
	}
	if n.Labels["nodeupgrade.dev/upgrade-status"] != "quarantined" || !n.Spec.Unschedulable {
		t.Errorf("node %q: labels %v, unschedulable %v", held, n.Labels, n.Spec.Unschedulable)
	}
	if st := g.run(t, "status", name); !strings.Contains(st.stdout, "quarantined") {
		t.Errorf("status: %s", st)
	}
	gr, _ := g.srv.Group(name)
	old := 0
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion == "1" {
			old++
		}
	}
	if old != 1 {
		t.Errorf("%d instances on version 1 after the first run, want the quarantined one", old)
	}
	// The PDB relaxed, the same run replaces the node and finishes.
	pdb, err := client.PolicyV1().PodDisruptionBudgets(name).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zero := intstr.FromInt32(0)
	pdb.Spec.MinAvailable = &zero
	if _, err := client.PolicyV1().PodDisruptionBudgets(name).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The run takes the node the last one quarantined first, and says so.
	if r := g.run(t, args...); r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, `1 node quarantined by the last run ("`+held+`"): batch 1 takes it first`) {
		t.Fatalf("run after the PDB was relaxed: want exit %d, its plan noting node %q first, got %s", nodeupgrade.ExitOK, held, r)
	}
	assertNoViolations(t, watcher.Stop())
	if err := g.srv.WaitStable(ctx, name); err != nil {
		t.Fatal(err)
	}
	gr, _ = g.srv.Group(name)
	for _, in := range gr.Instances {
		if in.LaunchTemplateVersion == "1" {
			t.Errorf("instance %s still runs version 1", in.ID)
		}
	}
}

// heldNode is the node the one pod of app runs on.
func heldNode(t *testing.T, ctx context.Context, ns, app string) string {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, app+"-") && p.Spec.NodeName != "" {
			return p.Spec.NodeName
		}
	}
	t.Fatalf("no pod of %q scheduled", app)
	return ""
}

// TestAWSMaxBlockedNodes: two nodes each hold a pod of a PDB allowing no
// disruption; --max-blocked-nodes 1 stops the run at the first one
// quarantined, the second left as it was (not quarantined, still there);
// abort then puts the quarantined node back in service.
func TestAWSMaxBlockedNodes(t *testing.T) {
	t.Parallel()
	const name = "aws-max-blocked"
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "db", Replicas: 2, MinAvailable: num(2), OnePerNode: true})
	ctx := testContext(t, 5*time.Minute)
	// A node its owner holds: plan names it, nothing changed.
	held := heldNode(t, ctx, name, "db")
	setHold(t, ctx, held, `"true"`)
	if p := g.run(t, "plan", name, "--ami", "ami-new"); !strings.Contains(p.stdout, "node-hold") || !strings.Contains(p.stdout, `node "`+held+`" is labelled nodeupgrade.dev/hold=true`) {
		t.Errorf("plan does not name the held node %q: %s", held, p)
	}
	setHold(t, ctx, held, "null")
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	r := g.run(t, "run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "0s", "--seed", "1", "--yes",
		"--undrainable", "cordon", "--max-blocked-nodes", "1", "--drain-timeout", "10s", "--ignore-check", "pdb-zero-disruptions")
	assertNoViolations(t, watcher.Stop())
	if r.code != nodeupgrade.ExitPaused || !strings.Contains(r.stderr, "1 node quarantined, the run stopped at --max-blocked-nodes") {
		t.Fatalf("run: want exit %d stopped at --max-blocked-nodes, got %s", nodeupgrade.ExitPaused, r)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: groupKey + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	quarantined, holding := 0, 0
	for _, n := range nodes.Items {
		if n.Labels["nodeupgrade.dev/upgrade-status"] == "quarantined" {
			quarantined++
		}
	}
	pods, err := client.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "db-") && p.Spec.NodeName != "" {
			holding++
		}
	}
	if quarantined != 1 || holding != 2 {
		t.Errorf("%d nodes quarantined, %d db pods running; want 1 and 2", quarantined, holding)
	}
	// abort puts the quarantined node back in service: its label, taint
	// and cordon come off with the run's other marks.
	if a := g.run(t, "abort", name); a.code != nodeupgrade.ExitOK {
		t.Fatalf("abort: %s", a)
	}
	assertUntouched(t, ctx, groupKey, name)
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if v, ok := n.Labels["nodeupgrade.dev/upgrade-status"]; ok {
			t.Errorf("node %q still labelled nodeupgrade.dev/upgrade-status=%s after abort", n.Name, v)
		}
	}
}

// setHold sets (a JSON string) or removes (null) node's nodeupgrade.dev/hold label.
func setHold(t *testing.T, ctx context.Context, node, value string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"nodeupgrade.dev/hold":` + value + `}}}`)
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
