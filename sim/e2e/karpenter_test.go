package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
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

// karpWorkload is a Deployment on a test's NodePool and its PDB; one:
// one pod a node.
type karpWorkload struct {
	name string
	n    int32
	cpu  string
	one  bool
	pdb  policyv1.PodDisruptionBudgetSpec
}

// demoWorkloads fill 9 nodes of 2 CPUs over three zones.
var demoWorkloads = []karpWorkload{
	{"web", 9, "500m", true, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: num(1)}},
	{"api", 9, "300m", false, policyv1.PodDisruptionBudgetSpec{MinAvailable: num(7)}},
}

func setupKarpenterPool(t *testing.T, name string) *karpPool {
	t.Helper()
	spec := karpenter.PoolSpec{Name: name, NodeClass: name + "-v1", Zones: karpenter.Zones[:3], Budgets: userBudgets}
	return setupKarpenterPoolOf(t, spec, demoWorkloads)
}

// setupKarpenterPoolOf makes NodePool spec (NodeClasses NAME-v1 and
// NAME-v2) and the workloads whose pods Karpenter launches its nodes for.
func setupKarpenterPoolOf(t *testing.T, spec karpenter.PoolSpec, workloads []karpWorkload) *karpPool {
	t.Helper()
	name := spec.Name
	dc := startKarpenter(t)
	ctx := testContext(t, 5*time.Minute)
	p := &karpPool{name: name, dc: dc}
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
	for _, w := range workloads {
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

// changeNodeClass points the NodePool at class (an AMI change,
// for KWOK's) and waits until Karpenter hashed the new template, so that
// the plugin sees the drift.
func (p *karpPool) changeNodeClass(t *testing.T, class string) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	u, err := p.dc.Resource(karpenter.NodePools).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hash := u.GetAnnotations()["karpenter.sh/nodepool-hash"]
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.kwok.sh","kind":"KWOKNodeClass","name":%q}}}}}`, class)
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

// deletionLog is what watchDeletions saw: each NodeClaim of the pool
// that began deleting, once, and those deleting now.
type deletionLog struct {
	mu       sync.Mutex
	seen     []claimDeletion
	deleting map[string]bool
}

func (l *deletionLog) observe(ctx context.Context, u *unstructured.Unstructured) {
	if u.GetDeletionTimestamp() == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deleting[u.GetName()] || slices.ContainsFunc(l.seen, func(d claimDeletion) bool { return d.claim == u.GetName() }) {
		return
	}
	l.deleting[u.GetName()] = true
	node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
	d := claimDeletion{at: time.Now(), claim: u.GetName(), node: node, deletingAtOnce: len(l.deleting)}
	if n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
		d.cordoned = n.Spec.Unschedulable
	}
	l.seen = append(l.seen, d)
}

// gone takes a NodeClaim off the deleting ones; one that went without
// ever being seen deleting (its finalizer done between two relists) is
// recorded all the same, not cordoned, so that no deletion goes unseen.
func (l *deletionLog) gone(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.deleting[u.GetName()] && !slices.ContainsFunc(l.seen, func(d claimDeletion) bool { return d.claim == u.GetName() }) {
		node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
		l.seen = append(l.seen, claimDeletion{at: time.Now(), claim: u.GetName(), node: node, deletingAtOnce: len(l.deleting) + 1})
	}
	delete(l.deleting, u.GetName())
}

// watchDeletions records every NodeClaim of the pool that begins deleting,
// through an informer: it lists again and watches anew whenever the API
// server ends a watch, which a bare watch does not (it saw 3 of 9).
func (p *karpPool) watchDeletions(t *testing.T, ctx context.Context) func() []claimDeletion {
	t.Helper()
	ctx, stop := context.WithCancel(ctx)
	l := &deletionLog{deleting: map[string]bool{}}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(p.dc, 0, "", func(o *metav1.ListOptions) {
		o.LabelSelector = "karpenter.sh/nodepool=" + p.name
	})
	inf := f.ForResource(karpenter.NodeClaims).Informer()
	on := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			l.observe(ctx, u)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }, DeleteFunc: l.gone}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the NodeClaims' informer never synced")
	}
	t.Cleanup(func() { stop(); f.Shutdown() })
	return func() []claimDeletion {
		l.mu.Lock()
		defer l.mu.Unlock()
		return slices.Clone(l.seen)
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
// nodes' label, holds Karpenter's drift and consolidation off and replaces
// the nodes in waves of 3 by deleting their NodeClaims once drained, with
// no PDB violation and no disruption of Karpenter's own after the hold;
// status -w follows its waves and blockers; cancelled mid-wave it holds,
// killed it is finished by a re-run, and the user's budgets are back byte
// for byte. A second change, cancelled mid-wave and aborted, gives the
// budgets and the nodes back. --provider none is refused.
func TestKarpenterWaves(t *testing.T) {
	// Not parallel: Karpenter's cluster state syncs only when the nodes
	// it lists settle, and the other tests' node groups come and go all
	// the time (in the full suite it waited on sync for 5 minutes and
	// launched nothing).
	const name = "karp-waves"
	p := setupKarpenterPool(t, name)
	ctx := testContext(t, 30*time.Minute)

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
	before := p.claimNames(t)
	deletions := p.watchDeletions(t, ctx)
	p.changeNodeClass(t, name+"-v2")
	held := p.heldSince(t, ctx)
	followed := startBackground(t, pluginCmd("status", name, "-w"))
	run := startBackground(t, pluginCmd(p.run()...))

	t.Run("cancel mid-wave holds the drift", func(t *testing.T) { p.cancelHolds(t, run, deletions) })
	t.Run("status -w shows the waves and what holds them", func(t *testing.T) { assertFollowed(t, followed) })
	t.Run("SIGKILL mid-wave, then a re-run finishes", p.killThenRerun)

	violations := watcher.Stop()
	assertNoViolations(t, violations)
	p.assertReplaced(t)
	p.assertBudgetsBack(t)
	var h hold
	select {
	case h = <-held:
	default:
		t.Fatal("the run never held the drift off")
	}
	p.assertWaves(t, before, deletions(), h)
	t.Run("status names the NodePool and its NodeClass", func(t *testing.T) {
		r := plugin(t, "status", name)
		if r.code != nodeupgrade.ExitOK || strings.Contains(r.stdout, "version <none>") || !strings.Contains(r.stdout, `NodePool "`+name+`", NodeClass KWOKNodeClass/`+name+"-v2") {
			t.Errorf("want the NodeClass the run ended on, not \"version <none>\": %s", r)
		}
	})
	t.Run("abort mid-wave gives the budgets and the nodes back", p.abortMidWave)
}

// claimNames are the names of the pool's NodeClaims now.
func (p *karpPool) claimNames(t *testing.T) []string {
	t.Helper()
	claims, err := karpenter.PoolClaims(testContext(t, time.Minute), p.dc, p.name)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(claims))
	for i := range claims {
		names[i] = claims[i].GetName()
	}
	return names
}

// cancelHolds cancels the run in its second wave: it ends paused, no
// NodeClaim begins deleting while it is, and the hold stays on.
func (p *karpPool) cancelHolds(t *testing.T, run *background, deletions func() []claimDeletion) {
	if !run.waitFor("batch 2/3", "draining") {
		t.Fatalf("the run ended before its second wave:\n%s", run.output())
	}
	if c := plugin(t, "cancel", p.name); c.code != nodeupgrade.ExitOK {
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
	if budgets, ann := p.poolBudgets(t); !strings.Contains(budgets, holdBudget) || ann["nodeupgrade.dev/budgets-before-run"] != p.budgets {
		t.Errorf("paused, the NodePool's budgets are %s (annotation %q); want the hold beside %s", budgets, ann["nodeupgrade.dev/budgets-before-run"], p.budgets)
	}
	pl := plugin(t, "plan", p.name, "--max-unavailable", "3")
	for _, want := range []string{"NodePool", "KWOKNodeClass/" + p.name + "-v2", "drifted=NodePoolDrifted", "held off by an unfinished run"} {
		if !strings.Contains(pl.stdout, want) {
			t.Errorf("the plan lacks %q:\n%s", want, pl)
		}
	}
}

// holdBudget is the budget the run adds to the NodePool.
const holdBudget = `{"nodes":"0","reasons":["Drifted","Underutilized","Empty"]}`

// assertFollowed: status -w, started before the run, followed it to its
// pause, wave by wave, naming a pod and the PDB that held a drain.
func assertFollowed(t *testing.T, followed *background) {
	code, out := followed.wait(t, time.Minute)
	if code != nodeupgrade.ExitPaused {
		t.Errorf("status -w must end as the run did, paused (exit %d): exit %d", nodeupgrade.ExitPaused, code)
	}
	for _, want := range []string{"batch 1/3", "batch 2/3", "held: pod ", " by PDB "} {
		if !strings.Contains(out, want) {
			t.Errorf("status -w never showed %q:\n%s", want, out)
		}
	}
}

func (p *karpPool) killThenRerun(t *testing.T) {
	resumed := startBackground(t, pluginCmd("resume", p.name, "--yes"))
	if !resumed.waitFor("draining") {
		t.Fatalf("the resumed run drained nothing:\n%s", resumed.output())
	}
	_ = resumed.cmd.Process.Signal(syscall.SIGKILL)
	resumed.wait(t, time.Minute)
	if r := plugin(t, p.run()...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("the re-run must finish: %s", r)
	}
}

// assertBudgetsBack: the user's budgets are back byte for byte, the
// hold's annotation gone.
func (p *karpPool) assertBudgetsBack(t *testing.T) {
	t.Helper()
	budgets, ann := p.poolBudgets(t)
	if budgets != p.budgets {
		t.Errorf("budgets after the run:\n%s\nwant, byte for byte:\n%s", budgets, p.budgets)
	}
	if v, ok := ann["nodeupgrade.dev/budgets-before-run"]; ok {
		t.Errorf("the hold's annotation is left: %q", v)
	}
}

// assertWaves: every NodeClaim of the pool before the change was seen
// deleting, each from a node the plugin's wave had cordoned, or one
// Karpenter was disrupting before the hold; never more at once than a
// wave and those.
func (p *karpPool) assertWaves(t *testing.T, before []string, all []claimDeletion, h hold) {
	t.Helper()
	most, early := 0, 0
	for _, d := range all {
		most = max(most, d.deletingAtOnce)
		if d.at.Before(h.at) || h.disrupting[d.node] {
			early++
		}
	}
	t.Logf("%d NodeClaims deleted, at most %d at once, %d of them by Karpenter's drift begun before the hold (nodes %v)", len(all), most, early, h.disrupting)
	for _, c := range before {
		if !slices.ContainsFunc(all, func(d claimDeletion) bool { return d.claim == c }) {
			t.Errorf("NodeClaim %q of the pool before the change was never seen deleting", c)
		}
	}
	for _, d := range all {
		if d.deletingAtOnce > 3+len(h.disrupting) {
			t.Errorf("%d NodeClaims deleting at once (%s), more than a wave and what Karpenter began before the hold", d.deletingAtOnce, d.claim)
		}
		if !d.cordoned && !d.at.Before(h.at) && !h.disrupting[d.node] {
			t.Errorf("NodeClaim %q (node %q) began deleting at %s, after the hold, on an undrained node: Karpenter disrupted beyond the wave", d.claim, d.node, d.at.Format(time.RFC3339Nano))
		}
	}
}

// abortMidWave drifts the pool again (back to its v1 NodeClass), cancels
// the run in its first wave and aborts it: exit 0, the user's budgets back
// byte for byte, and no node left cordoned or tainted by the plugin but
// those Karpenter is terminating.
func (p *karpPool) abortMidWave(t *testing.T) {
	p.changeNodeClass(t, p.name+"-v1")
	run := startBackground(t, pluginCmd(p.run()...))
	if !run.waitFor("batch 1/3", "draining") {
		t.Fatalf("the run drained nothing:\n%s", run.output())
	}
	if c := plugin(t, "cancel", p.name); c.code != nodeupgrade.ExitOK {
		t.Fatalf("cancel: %s", c)
	}
	if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitPaused {
		t.Fatalf("the cancelled run must end paused (exit %d), exit %d:\n%s", nodeupgrade.ExitPaused, code, out)
	}
	if marked := p.markedNodes(t); len(marked) == 0 {
		t.Fatal("the paused run marked no node: the abort has nothing to give back")
	} else {
		t.Logf("paused, the run left %d nodes cordoned or tainted: %v", len(marked), marked)
	}
	r := plugin(t, "abort", p.name)
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("abort: %s", r)
	}
	p.assertBudgetsBack(t)
	if marked := p.markedNodes(t); len(marked) > 0 {
		t.Errorf("after the abort, nodes left cordoned or tainted by the plugin: %v\n%s", marked, r)
	}
}

// runTaint is the taint the run puts on the outdated nodes by default:
// <nodegroup-label>=unschedulable:NoSchedule.
var runTaint = corev1.Taint{Key: "karpenter.sh/nodepool", Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}

// markedNodes are the pool's nodes cordoned or tainted by the plugin,
// less those whose NodeClaim Karpenter is terminating.
func (p *karpPool) markedNodes(t *testing.T) []string {
	t.Helper()
	ctx := testContext(t, time.Minute)
	claims, err := karpenter.PoolClaims(ctx, p.dc, p.name)
	if err != nil {
		t.Fatal(err)
	}
	leaving := map[string]bool{}
	for i := range claims {
		if node, _, _ := unstructured.NestedString(claims[i].Object, "status", "nodeName"); claims[i].GetDeletionTimestamp() != nil {
			leaving[node] = true
		}
	}
	var marked []string
	for _, n := range groupNodes(t, ctx, "karpenter.sh/nodepool", p.name) {
		ours := slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&runTaint) && x.Value == runTaint.Value })
		if (n.Spec.Unschedulable || ours) && !leaving[n.Name] {
			marked = append(marked, fmt.Sprintf("%s (cordoned %v, tainted %v)", n.Name, n.Spec.Unschedulable, ours))
		}
	}
	return marked
}
