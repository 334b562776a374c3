package karpenter

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
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

// world is a fake cluster with Karpenter's objects; the provider reads it.
func world(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		nodePools: "NodePoolList", nodeClaims: "NodeClaimList",
	}, objs...)
	client := fake.NewClientset()
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
	for _, want := range []string{userBudgets, freezeBudgetJSON, "2 NodeClaims of NodePool \"np\" are drifted: NodePoolDrifted", "1 NodeClaims of NodePool \"np\" are drifted: AMIDrift"} {
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

// TestHoldAndRestore: the hold adds a Drifted budget of 0 once, keeps the
// user's budgets aside, and the restore gives back their exact bytes.
func TestHoldAndRestore(t *testing.T) {
	ctx := context.Background()
	_, dc := world(t, pool(t, userBudgets, nil))
	p := &NodePool{dyn: dc, name: "np"}
	was, err := p.SelfUpdates(ctx)
	if err != nil || was != userBudgets {
		t.Fatalf("SelfUpdates = %q, %v; want %q", was, err, userBudgets)
	}
	for range 2 { // a re-run holds again
		if err := p.HoldUpdates(ctx); err != nil {
			t.Fatal(err)
		}
	}
	held, ann := budgetsOf(t, dc)
	if want := strings.TrimSuffix(userBudgets, "]") + "," + freezeBudgetJSON + "]"; held != want {
		t.Errorf("held budgets %s, want %s", held, want)
	}
	if ann[FrozenAnnotation] != userBudgets {
		t.Errorf("annotation %q, want the user's budgets", ann[FrozenAnnotation])
	}
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
}

// TestRemoveNode: the NodeClaim is deleted, never the Node; a replacement
// Karpenter cannot launch stops the run with its reason.
func TestRemoveNode(t *testing.T) {
	defer func(d, l time.Duration) { pollEvery, LaunchTimeout = d, l }(pollEvery, LaunchTimeout)
	pollEvery, LaunchTimeout = 10*time.Millisecond, 200*time.Millisecond
	for _, tc := range []struct {
		name    string
		other   *unstructured.Unstructured
		wantErr string
	}{
		{"replacement initialized", claim("new", "n9", "111", "Launched=True", "Registered=True", "Initialized=True"), ""},
		{"launch refused", claim("new", "", "111", "Launched=False/InsufficientCapacity"), `NodeClaim "new" of NodePool "np" was not launched: InsufficientCapacity: because InsufficientCapacity`},
		{"never registered", claim("new", "", "111", "Launched=True", "Registered=Unknown/NodeNotFound"), `NodeClaim "new" of NodePool "np" is not Registered after 200ms (NodeNotFound: because NodeNotFound)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, dc := world(t, pool(t, userBudgets, nil), claim("c1", "n1", "000", "Initialized=True"), tc.other)
			p := &NodePool{client: client, dyn: dc, name: "np"}
			err := p.RemoveNode(context.Background(), "n1")
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("RemoveNode: %v, want %q", err, tc.wantErr)
			}
			if _, err := dc.Resource(nodeClaims).Get(context.Background(), "c1", metav1.GetOptions{}); err == nil {
				t.Error("NodeClaim c1 not deleted")
			}
			for _, a := range client.Actions() {
				if a.GetVerb() == "delete" {
					t.Errorf("the provider deleted a %s itself", a.GetResource().Resource)
				}
			}
		})
	}
}
