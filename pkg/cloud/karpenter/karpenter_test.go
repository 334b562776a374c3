package karpenter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// userBudgets are a NodePool's budgets as the API server returns them
// (keys sorted): the run must give back these bytes.
const userBudgets = `[{"nodes":"20%"},{"duration":"8h","nodes":"0","reasons":["Underutilized"],"schedule":"0 9 * * mon-fri"}]`

func pool(t *testing.T, budgets string, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	var b []any
	if err := json.Unmarshal([]byte(budgets), &b); err != nil {
		t.Fatal(err)
	}
	ann := map[string]any{hashAnnotation: "111", hashVersionAnnot: "v3"}
	for k, v := range annotations {
		ann[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": "np", "annotations": ann},
		"spec": map[string]any{
			"template":   map[string]any{"spec": map[string]any{"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "al2023"}}},
			"disruption": map[string]any{"budgets": b},
		},
	}}
}

// claim is a NodeClaim of NodePool np for node (none: not registered),
// from template hash, with conditions type=status[/reason].
func claim(name, node, hash string, conds ...string) *unstructured.Unstructured {
	var cs []any
	for _, c := range conds {
		typ, rest, _ := strings.Cut(c, "=")
		status, reason, _ := strings.Cut(rest, "/")
		cs = append(cs, map[string]any{"type": typ, "status": status, "reason": reason, "message": "because " + reason})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{
			"name":        name,
			"labels":      map[string]any{NodePoolLabel: "np", "topology.kubernetes.io/zone": "zone-a"},
			"annotations": map[string]any{hashAnnotation: hash, hashVersionAnnot: "v3"},
		},
		"spec":   map[string]any{"nodeClassRef": map[string]any{"kind": "EC2NodeClass", "name": "al2023"}},
		"status": map[string]any{"nodeName": node, "conditions": cs},
	}}
}

// world is a fake cluster with Karpenter's objects, EC2NodeClasses
// served (discovery too); the provider reads it.
func world(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		nodePools: "NodePoolList", nodeClaims: "NodeClaimList", ec2NodeClasses: "EC2NodeClassList",
	}, objs...)
	client := fake.NewClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "karpenter.k8s.aws/v1", APIResources: []metav1.APIResource{
		{Name: "ec2nodeclasses", Kind: "EC2NodeClass"}, {Name: "ec2nodeclasses/status", Kind: "EC2NodeClass"},
	}}}
	prev := dynamicFor
	dynamicFor = func(kubernetes.Interface) (dynamic.Interface, error) { return dc, nil }
	t.Cleanup(func() { dynamicFor = prev })
	return client, dc
}

func node(name, pool string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NodePoolLabel: pool}}, Spec: corev1.NodeSpec{ProviderID: "aws:///zone-a/i-" + name}}
}

// TestOpen: the plan's view of a NodePool: each node's drift (the
// condition's reason, or the template hash moved on before Karpenter
// marked it), the NodeClaims not yet nodes, the budgets in force.
func TestOpen(t *testing.T) {
	client, _ := world(t, pool(t, userBudgets, nil),
		claim("c1", "n1", "000", "Initialized=True", "Drifted=True/NodePoolDrifted"),
		claim("c2", "n2", "111", "Initialized=True", "Drifted=True/AMIDrift"),
		claim("c3", "n3", "000", "Initialized=True"),
		claim("c4", "n4", "111", "Initialized=True"),
		claim("c5", "", "111", "Launched=Unknown"),
	)
	nodes := []corev1.Node{node("n1", "np"), node("n2", "np"), node("n3", "np"), node("n4", "np")}
	cg, p, err := cloud.OpenGroup(context.Background(), Cloud{}, client, nodes, plan.CloudTarget{})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"n1": "NodePoolDrifted", "n2": "AMIDrift", "n3": "NodePoolDrifted", "n4": "111"} {
		if got := cg.Nodes[n].Version; got != want {
			t.Errorf("node %s: version %q, want %q", n, got, want)
		}
	}
	if cg.Template != "EC2NodeClass/al2023" || cg.TargetVersion != "111" || cg.GroupKind != "NodePool" || cg.Group != "np" {
		t.Errorf("group %q %q, NodeClass %q, target %q", cg.GroupKind, cg.Group, cg.Template, cg.TargetVersion)
	}
	if len(cg.Unjoined) != 1 || cg.Unjoined[0].ID != "c5" || cg.Sizes.Desired != 5 {
		t.Errorf("unjoined %v, sizes %v", cg.Unjoined, cg.Sizes)
	}
	notes := strings.Join(cg.Notes, "\n")
	for _, want := range []string{userBudgets, `the run adds {"nodes":"0","reasons":["Drifted","Underutilized","Empty"]} for its span`, "nor consolidates nodes away", "2 NodeClaims of NodePool \"np\" are drifted: NodePoolDrifted", "1 NodeClaims of NodePool \"np\" are drifted: AMIDrift"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	want := plan.CapRemoveNodes
	if cg.Can != want || cg.Can.Has(plan.CapResize) {
		t.Errorf("capabilities %v, want %v", cg.Can, want)
	}
	if _, ok := p.(cloud.SelfUpdater); !ok {
		t.Error("the provider holds no drift off")
	}
}

// TestPoolOf: the NodePool is the nodes' one; nodes of two are refused,
// naming both.
func TestPoolOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   []corev1.Node
		want    string
		wantErr string
	}{
		{"one pool", []corev1.Node{node("a", "np"), node("b", "np")}, "np", ""},
		{"two pools", []corev1.Node{node("a", "np"), node("b", "other")}, "", `the nodes belong to NodePools "np", "other"`},
		{"no label", []corev1.Node{node("a", "")}, "", "no node carries the label karpenter.sh/nodepool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := poolOf(tc.nodes, "")
			if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("poolOf = %q, %v; want %q, %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestDetect: Karpenter's nodes are the provider's by their label,
// whatever their provider IDs say.
func TestDetect(t *testing.T) {
	if got := cloud.Detect([]corev1.Node{node("a", "np"), node("b", "np")}); got != Name {
		t.Errorf("Detect = %q, want %q", got, Name)
	}
	if got := cloud.Detect([]corev1.Node{node("a", "np"), node("b", "")}); got == Name {
		t.Errorf("Detect = %q for a node of no NodePool", got)
	}
}

func budgetsOf(t *testing.T, dc dynamic.Interface) (string, map[string]string) {
	t.Helper()
	u, err := dc.Resource(nodePools).Get(context.Background(), "np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "disruption", "budgets")
	out, _ := json.Marshal(b)
	return string(out), u.GetAnnotations()
}

// TestHoldAndRestore: the hold adds a budget of 0 for drift and
// consolidation once, keeps the user's budgets aside, brings an older
// run's drift-only hold up to it, and the restore gives back the user's
// exact bytes.
func TestHoldAndRestore(t *testing.T) {
	const driftOnly = `{"nodes":"0","reasons":["Drifted"]}`
	withHold := func(hold string) string { return strings.TrimSuffix(userBudgets, "]") + "," + hold + "]" }
	for _, tc := range []struct {
		name        string
		budgets     string
		annotations map[string]string
	}{
		{"user's budgets", userBudgets, nil},
		{"held by an older run, drift only", withHold(driftOnly), map[string]string{FrozenAnnotation: userBudgets}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, dc := world(t, pool(t, tc.budgets, tc.annotations))
			p := &NodePool{dyn: dc, name: "np"}
			was, err := p.SelfUpdates(ctx)
			if err != nil || was != userBudgets {
				t.Fatalf("SelfUpdates = %q, %v; want %q", was, err, userBudgets)
			}
			assertHeld(t, p, dc)
			// A run that lost its record reads the user's budgets, not the hold.
			if again, _ := p.SelfUpdates(ctx); again != userBudgets {
				t.Errorf("SelfUpdates while held = %q, want %q", again, userBudgets)
			}
			if _, err := p.RestoreUpdates(ctx, was); err != nil {
				t.Fatal(err)
			}
			restored, ann := budgetsOf(t, dc)
			if restored != userBudgets {
				t.Errorf("restored budgets %s, want %s", restored, userBudgets)
			}
			if _, ok := ann[FrozenAnnotation]; ok {
				t.Errorf("annotation %s left after the restore", FrozenAnnotation)
			}
			if _, err := p.RestoreUpdates(ctx, "not json"); err == nil {
				t.Error("a record that is not JSON was restored")
			}
		})
	}
}

// assertHeld holds twice (a re-run holds again): the budgets are the
// user's and the hold of Drifted, Underutilized and Empty, patched once
// at most when held already.
func assertHeld(t *testing.T, p *NodePool, dc *dynamicfake.FakeDynamicClient) {
	t.Helper()
	for range 2 {
		if err := p.HoldUpdates(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	held, ann := budgetsOf(t, dc)
	if want := strings.TrimSuffix(userBudgets, "]") + `,{"nodes":"0","reasons":["Drifted","Underutilized","Empty"]}]`; held != want {
		t.Errorf("held budgets %s, want %s", held, want)
	}
	if ann[FrozenAnnotation] != userBudgets {
		t.Errorf("annotation %q, want the user's budgets", ann[FrozenAnnotation])
	}
	patches := 0
	for _, a := range dc.Actions() {
		if a.GetVerb() == "patch" {
			patches++
		}
	}
	if patches != 1 {
		t.Errorf("%d patches of the NodePool for two holds, want 1", patches)
	}
}

// removeNodeCase is the pool RemoveNode meets beside NodeClaim c1 of
// node n1, and what the call must do.
type removeNodeCase struct {
	name    string
	node    string // the node removed; n1 (NodeClaim c1) when ""
	objs    []runtime.Object
	react   func(client *fake.Clientset, dc *dynamicfake.FakeDynamicClient)
	wantErr string
	kept    bool // NodeClaim c1 is still there at the end
}

func removeNodeCases() []removeNodeCase {
	ready := claim("new", "n9", "111", "Launched=True", "Registered=True", "Initialized=True")
	return []removeNodeCase{
		{name: "replacement initialized", objs: []runtime.Object{ready}},
		{name: "launch refused", objs: []runtime.Object{claim("new", "", "111", "Launched=False/InsufficientCapacity")}, wantErr: `NodeClaim "new" of NodePool "np" was not launched: InsufficientCapacity: because InsufficientCapacity`},
		{name: "a refused launch behind one still launching", objs: []runtime.Object{claim("a-new", "", "111", "Launched=Unknown"), claim("b-new", "", "111", "Launched=False/InsufficientCapacity")}, wantErr: `NodeClaim "b-new" of NodePool "np" was not launched: InsufficientCapacity`},
		{name: "never registered", objs: []runtime.Object{claim("new", "", "111", "Launched=True", "Registered=Unknown/NodeNotFound")}, wantErr: `NodeClaim "new" of NodePool "np" is not Registered after 200ms (NodeNotFound: because NodeNotFound)`},
		{name: "a NodeClaim Karpenter never took up", objs: []runtime.Object{claim("new", "", "111")}, wantErr: `NodeClaim "new" of NodePool "np" is not Launched after 200ms (no reason given)`},
		{name: "a node whose NodeClaim is gone already (a re-run)", node: "n7", objs: []runtime.Object{ready}, kept: true},
		{name: "a NodeClaim Karpenter deleted meanwhile", objs: []runtime.Object{ready}, react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("delete", "nodeclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
				_ = dc.Tracker().Delete(nodeClaims, "", "c1")
				return true, nil, apierrors.NewNotFound(nodeClaims.GroupResource(), "c1")
			})
		}},
		{name: "deleting the NodeClaim forbidden", kept: true, react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("delete", "nodeclaims", refuse(apierrors.NewForbidden(nodeClaims.GroupResource(), "c1", nil)))
		}, wantErr: `cannot delete NodeClaim "c1" of node "n1": nodeclaims.karpenter.sh "c1" is forbidden`},
		{name: "a finalizer that never lets go", kept: true, react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("delete", "nodeclaims", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
		}, wantErr: `NodeClaim "c1" (node "n1") was not terminated by Karpenter within 200ms`},
		{name: "a Node that outlives its NodeClaim", react: func(client *fake.Clientset, _ *dynamicfake.FakeDynamicClient) {
			n := node("n1", "np")
			_ = client.Tracker().Add(&n)
		}, wantErr: `NodeClaim "c1" (node "n1") was not terminated by Karpenter within 200ms`},
		{name: "reading the terminating NodeClaim forbidden", react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("get", "nodeclaims", refuse(apierrors.NewForbidden(nodeClaims.GroupResource(), "c1", nil)))
		}, wantErr: `cannot follow the termination of NodeClaim "c1" (node "n1"): nodeclaims.karpenter.sh "c1" is forbidden`},
		{name: "a throttled read while terminating", objs: []runtime.Object{ready}, react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("get", "nodeclaims", refuseCalls(apierrors.NewTooManyRequests("slow down", 1), 1, 1))
		}},
		{name: "reads throttled until the termination's timeout", react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("get", "nodeclaims", refuse(apierrors.NewTooManyRequests("slow down", 1)))
		}, wantErr: `cannot follow the termination of NodeClaim "c1" (node "n1"): slow down`},
		{name: "lists throttled until the launch's timeout", react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("list", "nodeclaims", refuseCalls(apierrors.NewTooManyRequests("slow down", 1), 2, math.MaxInt))
		}, wantErr: `cannot list the NodeClaims of NodePool "np": slow down (still after 200ms)`},
		{name: "listing NodeClaims forbidden", kept: true, react: func(_ *fake.Clientset, dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("list", "nodeclaims", refuse(apierrors.NewForbidden(nodeClaims.GroupResource(), "", nil)))
		}, wantErr: `cannot list the NodeClaims of NodePool "np"`},
	}
}

// TestRemoveNode: the NodeClaim is deleted, never the Node; the wait
// ends when Karpenter has terminated both and launched the pool's
// replacements, and each way it can end otherwise is named for what
// happened: a launch Karpenter refused (its reason, whatever else is
// still launching), a step not reached in time, a call the API server
// refused.
func TestRemoveNode(t *testing.T) {
	defer func(d, l, g time.Duration) { pollEvery, LaunchTimeout, TerminateTimeout = d, l, g }(pollEvery, LaunchTimeout, TerminateTimeout)
	pollEvery, LaunchTimeout, TerminateTimeout = 10*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	for _, tc := range removeNodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			client, dc := world(t, append([]runtime.Object{pool(t, userBudgets, nil), claim("c1", "n1", "000", "Initialized=True")}, tc.objs...)...)
			if tc.react != nil {
				tc.react(client, dc)
			}
			p := &NodePool{client: client, dyn: dc, name: "np"}
			err := p.RemoveNode(context.Background(), cmp.Or(tc.node, "n1"))
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("RemoveNode: %v, want %q", err, tc.wantErr)
			}
			if _, err := dc.Tracker().Get(nodeClaims, "", "c1"); (err == nil) != tc.kept {
				t.Errorf("NodeClaim c1 kept: %v, want %v", err == nil, tc.kept)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() == "delete" {
					t.Errorf("the provider deleted a %s itself", a.GetResource().Resource)
				}
			}
		})
	}
}

// refuse is a reactor the API server's refusal answers.
func refuse(err error) clienttesting.ReactionFunc {
	return func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err }
}

// refuseCalls answers err to the calls from..to (counted from 1) and
// lets the others through.
func refuseCalls(err error, from, to int) clienttesting.ReactionFunc {
	var mu sync.Mutex
	n := 0
	return func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return n >= from && n <= to, nil, err
	}
}

// TestExpiryWarned: the plan warns of a node whose NodeClaim expires
// (created + spec.expireAfter) before the run's estimated end, as
// Karpenter deletes it then whatever the hold; one expiring later, or
// never, is not named.
func TestExpiryWarned(t *testing.T) {
	defer func(n func() time.Time) { now = n }(now)
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return at }
	expiring := func(c *unstructured.Unstructured, created time.Time, after string) *unstructured.Unstructured {
		c.SetCreationTimestamp(metav1.NewTime(created))
		_ = unstructured.SetNestedField(c.Object, after, "spec", "expireAfter")
		return c
	}
	client, _ := world(t, pool(t, userBudgets, nil),
		expiring(claim("c1", "n1", "000", "Initialized=True"), at.Add(-720*time.Hour+time.Minute), "720h"),
		expiring(claim("c2", "n2", "000", "Initialized=True"), at.Add(-100*time.Hour), "720h"),
		expiring(claim("c3", "n3", "000", "Initialized=True"), at.Add(-9000*time.Hour), "Never"),
	)
	nodes := []corev1.Node{node("n1", "np"), node("n2", "np"), node("n3", "np")}
	cg, _, err := cloud.OpenGroup(context.Background(), Cloud{}, client, nodes, plan.CloudTarget{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(snapshot.Cluster{Nodes: nodes}, plan.Input{NodeGroup: "np", NodeGroupLabel: NodePoolLabel, MaxUnavailable: "1", Provider: Name, Strategy: plan.StrategyEKS, Cloud: cg})
	if err != nil {
		t.Fatal(err)
	}
	if p.EstimatedDuration() <= time.Minute || len(p.Batches) != 3 {
		t.Fatalf("the run's estimate is %s in %d batches; the test wants node n1 to expire within it", p.EstimatedDuration(), len(p.Batches))
	}
	notes := strings.Join(p.Notes, "\n")
	if !strings.Contains(notes, `node "n1" expires in 1m (2026-11-27T12:01:00Z, its NodeClaim's expireAfter), within the run's estimated`) || !strings.Contains(notes, "whatever the disruption budgets") {
		t.Errorf("the plan does not warn of node n1's expiry:\n%s", notes)
	}
	for _, n := range []string{`"n2"`, `"n3"`} {
		if strings.Contains(notes, "node "+n+" expires") {
			t.Errorf("the plan warns of node %s, which does not expire within the run:\n%s", n, notes)
		}
	}
}

// TestPoolDuringRun: what a run reads of the pool as it goes: its size is
// its NodeClaims not being deleted (a NodePool has none of its own), a
// NodeClaim is a node's machine once registered and pending before, and a
// drifted machine is not current.
func TestPoolDuringRun(t *testing.T) {
	deleting := claim("c3", "n3", "111", "Initialized=True")
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	_, dc := world(t, pool(t, userBudgets, nil),
		claim("c1", "n1", "000", "Initialized=True"),
		claim("c2", "n2", "111", "Initialized=True"),
		deleting,
		claim("c4", "", "111", "Launched=True"),
	)
	p := &NodePool{dyn: dc, name: "np"}
	ctx := context.Background()
	sizes, err := p.Sizes(ctx)
	if err != nil || sizes != (plan.Sizes{Desired: 3, Max: 3}) {
		t.Errorf("Sizes = %v, %v; want desired 3, max 3 (c3 is being deleted)", sizes, err)
	}
	byNode, pending, err := p.Machines(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		node, id, version string
		state             plan.MachineState
		current           bool
	}{
		{"n1", "c1", nodePoolDrifted, plan.MachineInService, false},
		{"n2", "c2", "111", plan.MachineInService, true},
		{"n3", "c3", "111", plan.MachineLeaving, true},
	} {
		t.Run(tc.node, func(t *testing.T) {
			m := byNode[tc.node]
			if m.ID != tc.id || m.Version != tc.version || m.State != tc.state || p.Current(m, "111") != tc.current {
				t.Errorf("machine %+v, current %v; want %s %s %s, current %v", m, p.Current(m, "111"), tc.id, tc.version, tc.state, tc.current)
			}
		})
	}
	if len(byNode) != 3 || len(pending) != 1 || pending[0].ID != "c4" || pending[0].State != plan.MachinePending {
		t.Errorf("machines %v, pending %v; want n1-n3, and c4 pending", byNode, pending)
	}
}

// TestRefuseNone: provider none is refused on Karpenter's nodes, naming
// the NodePool and the provider to use; other nodes are not refused.
func TestRefuseNone(t *testing.T) {
	got := cloud.NoneRefused([]corev1.Node{node("a", ""), node("b", "np")})
	for _, want := range []string{`NodePool "np"`, NodePoolLabel, "use --provider karpenter"} {
		if !strings.Contains(got, want) {
			t.Errorf("refusal %q lacks %q", got, want)
		}
	}
	if got := cloud.NoneRefused([]corev1.Node{node("a", "")}); got != "" {
		t.Errorf("provider none refused on nodes of no NodePool: %q", got)
	}
}

// TestOpenRefused: a NodePool that is gone is the user's to fix (exit 2,
// named); one the API server will not show is not.
func TestOpenRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		react   func(dc *dynamicfake.FakeDynamicClient)
		wantErr string
		input   bool
	}{
		{name: "NodePool gone", wantErr: `NodePool "np" not found: the nodes' label karpenter.sh/nodepool names a NodePool that no longer exists`, input: true},
		{name: "NodePools forbidden", react: func(dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("get", "nodepools", refuse(apierrors.NewForbidden(nodePools.GroupResource(), "np", nil)))
		}, wantErr: `cannot read NodePool "np": nodepools.karpenter.sh "np" is forbidden`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, dc := world(t)
			if tc.react != nil {
				tc.react(dc)
			}
			_, _, err := cloud.OpenGroup(context.Background(), Cloud{}, client, []corev1.Node{node("a", "np")}, plan.CloudTarget{})
			var in interface{ Input() bool }
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || (errors.As(err, &in) && in.Input()) != tc.input {
				t.Errorf("Open: %v (input %v), want %q (input %v)", err, in != nil, tc.wantErr, tc.input)
			}
		})
	}
}

// TestHoldWithoutBudgets: a NodePool with no budgets of its own is held
// with the run's budget alone, and the restore leaves it with none again,
// not with an empty list Karpenter would read otherwise.
func TestHoldWithoutBudgets(t *testing.T) {
	ctx := context.Background()
	np := pool(t, "[]", nil)
	unstructured.RemoveNestedField(np.Object, "spec", "disruption", "budgets")
	_, dc := world(t, np)
	p := &NodePool{dyn: dc, name: "np"}
	was, err := p.SelfUpdates(ctx)
	if err != nil || was != "null" {
		t.Fatalf("SelfUpdates = %q, %v; want null", was, err)
	}
	if err := p.HoldUpdates(ctx); err != nil {
		t.Fatal(err)
	}
	if held, ann := budgetsOf(t, dc); held != "["+freezeBudgetJSON+"]" || ann[FrozenAnnotation] != "null" {
		t.Errorf("held budgets %s, annotation %q; want the run's budget alone, and null kept", held, ann[FrozenAnnotation])
	}
	if _, err := p.RestoreUpdates(ctx, was); err != nil {
		t.Fatal(err)
	}
	u, _ := dc.Resource(nodePools).Get(ctx, "np", metav1.GetOptions{})
	if b, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "disruption", "budgets"); found {
		t.Errorf("restored budgets %v, want none", b)
	}
	if _, ok := u.GetAnnotations()[FrozenAnnotation]; ok {
		t.Errorf("annotation %s left after the restore", FrozenAnnotation)
	}
}

// TestHoldRefused: a hold or restore that cannot be made says which and
// why, and changes nothing: the hold names the resourceVersion it read, so
// that a user's edit meanwhile makes the API server refuse it (409)
// rather than be overwritten.
func TestHoldRefused(t *testing.T) {
	conflict := apierrors.NewConflict(nodePools.GroupResource(), "np", errors.New("the object has been modified"))
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		react   func(dc *dynamicfake.FakeDynamicClient)
		restore bool
		wantErr string
	}{
		{name: "edited meanwhile", react: func(dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("patch", "nodepools", refuse(conflict))
		}, wantErr: `cannot hold off the disruptions of NodePool "np": Operation cannot be fulfilled on nodepools.karpenter.sh "np": the object has been modified`},
		{name: "kept budgets that are not JSON", ann: map[string]string{FrozenAnnotation: "[{nodes: 0}"}, wantErr: `cannot read the budgets of NodePool "np"`},
		{name: "restore forbidden", restore: true, react: func(dc *dynamicfake.FakeDynamicClient) {
			dc.PrependReactor("patch", "nodepools", refuse(apierrors.NewForbidden(nodePools.GroupResource(), "np", nil)))
		}, wantErr: `cannot put back the budgets of NodePool "np": nodepools.karpenter.sh "np" is forbidden`},
		{name: "the NodePool gone", react: func(dc *dynamicfake.FakeDynamicClient) {
			_ = dc.Tracker().Delete(nodePools, "", "np")
		}, wantErr: `NodePool "np" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := pool(t, userBudgets, tc.ann)
			np.SetResourceVersion("42")
			_, dc := world(t, np)
			if tc.react != nil {
				tc.react(dc)
			}
			p := &NodePool{dyn: dc, name: "np"}
			var err error
			if tc.restore {
				_, err = p.RestoreUpdates(context.Background(), userBudgets)
			} else {
				err = p.HoldUpdates(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			for _, a := range dc.Actions() {
				if pa, ok := a.(clienttesting.PatchAction); ok && !tc.restore && !strings.Contains(string(pa.GetPatch()), `"resourceVersion":"42"`) {
					t.Errorf("the hold's patch %s does not name the resourceVersion read", pa.GetPatch())
				}
			}
			if tc.react == nil {
				if got, ann := budgetsOf(t, dc); got != userBudgets || ann[FrozenAnnotation] != tc.ann[FrozenAnnotation] {
					t.Errorf("budgets %s, annotation %q changed by a refused hold", got, ann[FrozenAnnotation])
				}
			}
		})
	}
}

// TestOpenHeld: the plan of a NodePool an unfinished run holds says so,
// with the user's budgets the run keeps aside, and counts the run's
// budget as in force.
func TestOpenHeld(t *testing.T) {
	held := strings.TrimSuffix(userBudgets, "]") + "," + freezeBudgetJSON + "]"
	client, _ := world(t, pool(t, held, map[string]string{FrozenAnnotation: userBudgets}), claim("c1", "n1", "000", "Initialized=True"))
	cg, _, err := cloud.OpenGroup(context.Background(), Cloud{}, client, []corev1.Node{node("n1", "np")}, plan.CloudTarget{})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(cg.Notes, "\n")
	for _, want := range []string{"disruption budgets in force: " + held, `NodePool "np" has its drift and consolidation held off by an unfinished run (budgets before it: ` + userBudgets + `): run, resume or abort puts them back`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}
