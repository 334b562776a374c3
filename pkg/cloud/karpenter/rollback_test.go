package karpenter

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var ec2NodeClasses = schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1", Resource: "ec2nodeclasses"}

// onClass is c launched from EC2NodeClass class.
func onClass(c *unstructured.Unstructured, class string) *unstructured.Unstructured {
	ref := map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": class}
	_ = unstructured.SetNestedMap(c.Object, ref, "spec", "nodeClassRef")
	return c
}

func nodeClass(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": map[string]any{"name": name},
	}}
}

// TestPreviousNodeClass: a run records the NodeClass the pool ran before
// only where its outdated NodeClaims name one the pool no longer does;
// in place (same NodeClass, drifted), nothing is known.
func TestPreviousNodeClass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims []runtime.Object
		want   string
	}{
		{"pointed at another NodeClass", []runtime.Object{
			onClass(claim("c1", "n1", "000", "Initialized=True", "Drifted=True/NodePoolDrifted"), "old"),
			onClass(claim("c2", "n2", "111", "Initialized=True"), "al2023"),
		}, "karpenter.k8s.aws/EC2NodeClass/old"},
		{"NodeClass changed in place", []runtime.Object{
			onClass(claim("c1", "n1", "111", "Initialized=True", "Drifted=True/AMIDrift"), "al2023"),
		}, ""},
		{"outdated on two NodeClasses", []runtime.Object{
			onClass(claim("c1", "n1", "000", "Initialized=True", "Drifted=True/NodePoolDrifted"), "old"),
			onClass(claim("c2", "n2", "000", "Initialized=True", "Drifted=True/NodePoolDrifted"), "older"),
		}, ""},
		{"nothing outdated", []runtime.Object{onClass(claim("c1", "n1", "111", "Initialized=True"), "al2023")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := world(t, append(tc.claims, pool(t, userBudgets, nil))...)
			cg, _, err := cloud.OpenGroup(context.Background(), Cloud{}, client, []corev1.Node{node("n1", "np"), node("n2", "np")}, plan.CloudTarget{})
			if err != nil {
				t.Fatal(err)
			}
			if cg.Previous != tc.want {
				t.Errorf("previous %q, want %q", cg.Previous, tc.want)
			}
			// Where nothing is known, a rollback after the run is refused
			// saying why.
			if back := strings.Contains(cg.BackBy, "changed in place"); back != (tc.want == "") {
				t.Errorf("back by %q with previous %q", cg.BackBy, cg.Previous)
			}
		})
	}
}

// TestRollbackOpen: a rollback's target is the recorded NodeClass: every
// node of another is outdated and the plan says the pool is pointed back;
// a template hash (the NodeClass changed in place) or a NodeClass gone is
// refused as input, nothing changed.
func TestRollbackOpen(t *testing.T) {
	objs := func() []runtime.Object {
		return []runtime.Object{pool(t, userBudgets, nil), nodeClass("old"), nodeClass("al2023"),
			onClass(claim("c1", "n1", "111", "Initialized=True"), "al2023"),
			onClass(claim("c2", "n2", "111", "Initialized=True"), "al2023")}
	}
	nodes := []corev1.Node{node("n1", "np"), node("n2", "np")}
	for _, tc := range []struct{ name, version, refused string }{
		{"a template hash", "000", "changed in place"},
		{"a NodeClass gone", "karpenter.k8s.aws/EC2NodeClass/gone", "no longer exists"},
		{"a kind not served", "karpenter.k8s.aws/Other/old", "no longer exists"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			client, dc := world(t, objs()...)
			_, _, err := cloud.OpenGroup(context.Background(), Cloud{}, client, nodes, plan.CloudTarget{Version: tc.version})
			var in interface{ Input() bool }
			if err == nil || !errors.As(err, &in) || !strings.Contains(err.Error(), tc.refused) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want one line of bad input saying %q, got %v", tc.refused, err)
			}
			for _, a := range dc.Actions() {
				if a.GetVerb() != "get" && a.GetVerb() != "list" {
					t.Errorf("a refused rollback changed %s %s", a.GetVerb(), a.GetResource())
				}
			}
		})
	}
	t.Run("back to the recorded NodeClass", func(t *testing.T) {
		client, dc := world(t, objs()...)
		// Karpenter writes the pool between the read and the patch once:
		// the patch of the resourceVersion read is refused, read again.
		conflicts := 1
		dc.PrependReactor("patch", "nodepools", func(clienttesting.Action) (bool, runtime.Object, error) {
			if conflicts == 0 {
				return false, nil, nil
			}
			conflicts--
			return true, nil, apierrors.NewConflict(nodePools.GroupResource(), "np", errors.New("the object has been modified"))
		})
		cg, p, err := cloud.OpenGroup(context.Background(), Cloud{}, client, nodes, plan.CloudTarget{Version: "karpenter.k8s.aws/EC2NodeClass/old"})
		if err != nil {
			t.Fatal(err)
		}
		if cg.Template != "EC2NodeClass/old" || cg.Previous != "karpenter.k8s.aws/EC2NodeClass/al2023" {
			t.Errorf("template %q, previous %q", cg.Template, cg.Previous)
		}
		for _, n := range nodes {
			if m := cg.Nodes[n.Name]; m.Template != "EC2NodeClass/al2023" {
				t.Errorf("node %s: template %q, want its own", n.Name, m.Template)
			}
		}
		if notes := strings.Join(cg.Notes, "\n"); !strings.Contains(notes, `points NodePool "np" back at NodeClass karpenter.k8s.aws/EC2NodeClass/old`) {
			t.Errorf("notes do not say the pool is pointed back:\n%s", notes)
		}
		r := p.(cloud.Retargeter)
		for i, want := range []string{`NodePool "np" pointed back at NodeClass karpenter.k8s.aws/EC2NodeClass/old (was karpenter.k8s.aws/EC2NodeClass/al2023)`, ""} {
			what, err := r.Retarget(context.Background())
			if err != nil || what != want {
				t.Errorf("retarget %d: %q, %v; want %q", i, what, err, want)
			}
		}
		u, _ := dc.Resource(nodePools).Get(context.Background(), "np", metav1.GetOptions{})
		if got := refOf(u.Object, "spec", "template", "spec", "nodeClassRef"); got.String() != "karpenter.k8s.aws/EC2NodeClass/old" {
			t.Errorf("NodePool names %s after the retarget", got)
		}
	})
}
