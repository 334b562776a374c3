package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/internal/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/karpenter"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// karpenterMu keeps one Karpenter at a time in the cluster: two would both
// act on every NodePool.
var karpenterMu sync.Mutex

// lockedBuffer is Karpenter's log, shown when a test fails.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	return s[max(0, len(s)-n):]
}

// startKarpenter runs the real Karpenter (sim/karpenter) beside the
// cluster until the test's end; cleanups registered after it run first.
func startKarpenter(t *testing.T) dynamic.Interface {
	t.Helper()
	karpenterMu.Lock()
	t.Cleanup(karpenterMu.Unlock)
	logs := &lockedBuffer{}
	k, err := karpenter.Start(testContext(t, 25*time.Minute), sim.RestConfig, karpenter.Options{Kubeconfig: sim.Kubeconfig, Logs: logs})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.tail(20000))
	}
	t.Cleanup(func() {
		k.Stop()
		if t.Failed() {
			t.Logf("Karpenter's log (its end):\n%s", logs.tail(30000))
		}
	})
	return dynamic.NewForConfigOrDie(sim.RestConfig)
}

// karpPool is a NodePool of 9 nodes over three zones with two workloads
// and their PDBs; its budgets are the user's, drift allowed.
type karpPool struct {
	name    string
	dc      dynamic.Interface
	budgets string // as the API server returned them before any run
}

// userBudgets let Karpenter replace 30% of the nodes for any reason, and
// hold consolidation off in office hours: the run must give them back as
// they are.
var userBudgets = []any{
	map[string]any{"nodes": "30%"},
	map[string]any{"nodes": "0", "reasons": []any{"Underutilized"}, "schedule": "0 9 * * mon-fri", "duration": "8h"},
}

func setupKarpenterPool(t *testing.T, name string) *karpPool {
	t.Helper()
	dc := startKarpenter(t)
	ctx := testContext(t, 5*time.Minute)
	p := &karpPool{name: name, dc: dc}
	spec := karpenter.PoolSpec{Name: name, NodeClass: name + "-v1", Zones: karpenter.Zones[:3], Budgets: userBudgets}
	if err := karpenter.Create(ctx, dc, karpenter.NodeClass(name+"-v1"), karpenter.NodeClass(name+"-v2"), karpenter.Pool(spec)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_ = client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if err := karpenter.DeletePool(ctx, dc, name, name+"-v1", name+"-v2"); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// pods created before the namespace's service account are refused
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		n    int32
		cpu  string
		one  bool
		pdb  policyv1.PodDisruptionBudgetSpec
	}{
		{"web", 9, "500m", true, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: num(1)}},
		{"api", 9, "300m", false, policyv1.PodDisruptionBudgetSpec{MinAvailable: num(7)}},
	} {
		if _, err := client.AppsV1().Deployments(name).Create(ctx, karpenter.Workload(name, w.name, name, w.n, w.cpu, w.one), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.pdb.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.name}}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: w.name}, Spec: w.pdb}
		if _, err := client.PolicyV1().PodDisruptionBudgets(name).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Fatal(err)
	}
	p.budgets, _ = p.poolBudgets(t)
	return p
}

// poolBudgets reads the NodePool's budgets as JSON and its annotations.
func (p *karpPool) poolBudgets(t *testing.T) (string, map[string]string) {
	t.Helper()
	u, err := p.dc.Resource(karpenter.NodePools).Get(context.Background(), p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "disruption", "budgets")
	out, _ := json.Marshal(b)
	return string(out), u.GetAnnotations()
}

// changeNodeClass points the NodePool at its v2 NodeClass (an AMI change,
// for KWOK's) and waits until Karpenter hashed the new template, so that
// the plugin sees the drift.
func (p *karpPool) changeNodeClass(t *testing.T) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	u, err := p.dc.Resource(karpenter.NodePools).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hash := u.GetAnnotations()["karpenter.sh/nodepool-hash"]
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.kwok.sh","kind":"KWOKNodeClass","name":%q}}}}}`, p.name+"-v2")
	if _, err := p.dc.Resource(karpenter.NodePools).Patch(ctx, p.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := p.dc.Resource(karpenter.NodePools).Get(ctx, p.name, metav1.GetOptions{})
		return err == nil && u.GetAnnotations()["karpenter.sh/nodepool-hash"] != hash, nil
	})
	if err != nil {
		t.Fatalf("Karpenter never hashed the new template: %v", err)
	}
}

// claimDeletion is a NodeClaim seen deleting, and whether its node was
// cordoned (the plugin's wave) then.
type claimDeletion struct {
	at             time.Time
	claim, node    string
	cordoned       bool
	deletingAtOnce int
}

// watchDeletions records every NodeClaim of the pool that begins deleting.
func (p *karpPool) watchDeletions(t *testing.T, ctx context.Context) func() []claimDeletion {
	t.Helper()
	w, err := p.dc.Resource(karpenter.NodeClaims).Watch(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + p.name})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []claimDeletion
	deleting := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			mu.Lock()
			switch {
			case ev.Type == watch.Deleted:
				delete(deleting, u.GetName())
			case u.GetDeletionTimestamp() != nil && !deleting[u.GetName()]:
				deleting[u.GetName()] = true
				node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
				d := claimDeletion{at: time.Now(), claim: u.GetName(), node: node, deletingAtOnce: len(deleting)}
				if n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
					d.cordoned = n.Spec.Unschedulable
				}
				seen = append(seen, d)
			}
			mu.Unlock()
		}
	}()
	return func() []claimDeletion {
		w.Stop()
		mu.Lock()
		defer mu.Unlock()
		return append([]claimDeletion(nil), seen...)
	}
}

// hold is when the run's hold landed on the NodePool, and the nodes
// Karpenter was disrupting then (tainted karpenter.sh/disrupted: its
// command begins so, before it launches their replacements): those it
// finishes after the hold, decided before it.
type hold struct {
	at         time.Time
	disrupting map[string]bool
}

// heldSince polls until the run's hold is on the NodePool.
func (p *karpPool) heldSince(t *testing.T, ctx context.Context) <-chan hold {
	ch := make(chan hold, 1)
	go func() {
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			u, err := p.dc.Resource(karpenter.NodePools).Get(ctx, p.name, metav1.GetOptions{})
			if err != nil || u.GetAnnotations()["nodeupgrade.dev/budgets-before-run"] == "" {
				return false, nil
			}
			h := hold{at: time.Now(), disrupting: map[string]bool{}}
			nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + p.name})
			if err != nil {
				return false, nil
			}
			for _, n := range nodes.Items {
				for _, taint := range n.Spec.Taints {
					if taint.Key == "karpenter.sh/disrupted" {
						h.disrupting[n.Name] = true
					}
				}
			}
			ch <- h
			return true, nil
		})
	}()
	return ch
}

// assertReplaced checks that the pool is back at 9 Ready nodes over three
// zones, none drifted, all of the v2 NodeClass.
func (p *karpPool) assertReplaced(t *testing.T) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	claims, err := karpenter.PoolClaims(ctx, p.dc, p.name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		ref, _, _ := unstructured.NestedString(claims[i].Object, "spec", "nodeClassRef", "name")
		if s, r := karpenter.Condition(&claims[i], "Drifted"); s == "True" || ref != p.name+"-v2" {
			t.Errorf("NodeClaim %q: NodeClass %q, Drifted %s %s", claims[i].GetName(), ref, s, r)
		}
	}
	zones := map[string]int{}
	for _, n := range groupNodes(t, ctx, "karpenter.sh/nodepool", p.name) {
		zones[n.Labels[corev1.LabelTopologyZone]]++
		if n.Spec.Unschedulable {
			t.Errorf("node %q left cordoned", n.Name)
		}
	}
	if len(claims) != 9 || len(zones) != 3 {
		t.Errorf("the pool has %d NodeClaims, nodes in zones %v; want 9 over 3 zones", len(claims), zones)
	}
	if err := scenario.WaitAppsReady(ctx, client, p.name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
}

func (p *karpPool) run(args ...string) []string {
	return append([]string{"run", p.name, "--max-unavailable", "3", "--post-drain-wait", "0s", "--yes"}, args...)
}

// TestKarpenterWaves: on the real Karpenter, a NodeClass change drifts a
// NodePool of 9 nodes over 3 zones; the run, its provider found from the
// nodes' label, holds Karpenter's drift off and replaces the nodes in
// waves of 3 by deleting their NodeClaims once drained, with no PDB
// violation and no disruption of Karpenter's own after the hold;
// cancelled mid-wave it holds, killed it is finished by a re-run, and the
// user's budgets are back byte for byte. --provider none is refused.
func TestKarpenterWaves(t *testing.T) {
	// Not parallel: Karpenter's cluster state syncs only when the nodes
	// it lists settle, and the other tests' node groups come and go all
	// the time (in the full suite it waited on sync for 5 minutes and
	// launched nothing).
	const name = "karp-waves"
	p := setupKarpenterPool(t, name)
	ctx := testContext(t, 25*time.Minute)

	t.Run("--provider none is refused, naming --provider karpenter", func(t *testing.T) {
		r := plugin(t, "plan", name, "--provider", "none", "--target-label", "a=b")
		if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, "use --provider karpenter") {
			t.Errorf("want exit %d naming --provider karpenter: %s", nodeupgrade.ExitUsage, r)
		}
	})

	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	deletions := p.watchDeletions(t, ctx)
	p.changeNodeClass(t)
	held := p.heldSince(t, ctx)
	run := startBackground(t, pluginCmd(p.run()...))

	t.Run("cancel mid-wave holds the drift", func(t *testing.T) {
		if !run.waitFor("batch 2/3", "draining") {
			t.Fatalf("the run ended before its second wave:\n%s", run.output())
		}
		if c := plugin(t, "cancel", name); c.code != nodeupgrade.ExitOK {
			t.Fatalf("cancel: %s", c)
		}
		if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitPaused {
			t.Fatalf("the cancelled run must end paused (exit %d), exit %d:\n%s", nodeupgrade.ExitPaused, code, out)
		}
		before := len(deletions())
		time.Sleep(30 * time.Second) // Karpenter's disruption loop runs every 10s
		if now := len(deletions()); now != before {
			t.Errorf("%d NodeClaims began deleting while the run was paused", now-before)
		}
		if budgets, ann := p.poolBudgets(t); !strings.Contains(budgets, `{"nodes":"0","reasons":["Drifted"]}`) || ann["nodeupgrade.dev/budgets-before-run"] != p.budgets {
			t.Errorf("paused, the NodePool's budgets are %s (annotation %q); want the hold beside %s", budgets, ann["nodeupgrade.dev/budgets-before-run"], p.budgets)
		}
		pl := plugin(t, "plan", name, "--max-unavailable", "3")
		for _, want := range []string{"NodePool", "KWOKNodeClass/" + name + "-v2", "drifted=NodePoolDrifted", "held off by an unfinished run"} {
			if !strings.Contains(pl.stdout, want) {
				t.Errorf("the plan lacks %q:\n%s", want, pl)
			}
		}
	})

	t.Run("SIGKILL mid-wave, then a re-run finishes", func(t *testing.T) {
		resumed := startBackground(t, pluginCmd("resume", name, "--yes"))
		if !resumed.waitFor("draining") {
			t.Fatalf("the resumed run drained nothing:\n%s", resumed.output())
		}
		_ = resumed.cmd.Process.Signal(syscall.SIGKILL)
		resumed.wait(t, time.Minute)
		r := plugin(t, p.run()...)
		if r.code != nodeupgrade.ExitOK {
			t.Fatalf("the re-run must finish: %s", r)
		}
	})

	violations := watcher.Stop()
	assertNoViolations(t, violations)
	p.assertReplaced(t)
	budgets, ann := p.poolBudgets(t)
	if budgets != p.budgets {
		t.Errorf("budgets after the run:\n%s\nwant, byte for byte:\n%s", budgets, p.budgets)
	}
	if v, ok := ann["nodeupgrade.dev/budgets-before-run"]; ok {
		t.Errorf("the hold's annotation is left: %q", v)
	}
	var h hold
	select {
	case h = <-held:
	default:
		t.Fatal("the run never held the drift off")
	}
	all, most, before := deletions(), 0, 0
	for _, d := range all {
		most = max(most, d.deletingAtOnce)
		if d.at.Before(h.at) || h.disrupting[d.node] {
			before++
		}
	}
	t.Logf("%d NodeClaims deleted, at most %d at once, %d of them by Karpenter's drift begun before the hold (nodes %v); PDB violations: %d", len(all), most, before, h.disrupting, len(violations))
	for _, d := range all {
		if d.deletingAtOnce > 3+len(h.disrupting) {
			t.Errorf("%d NodeClaims deleting at once (%s), more than a wave and what Karpenter began before the hold", d.deletingAtOnce, d.claim)
		}
		if !d.cordoned && d.at.After(h.at) && !h.disrupting[d.node] {
			t.Errorf("NodeClaim %q (node %q) began deleting at %s, after the hold, on an undrained node: Karpenter disrupted beyond the wave", d.claim, d.node, d.at.Format(time.RFC3339Nano))
		}
	}
}
