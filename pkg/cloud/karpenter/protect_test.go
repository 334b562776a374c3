package karpenter

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// annotated gives u karpenter.sh/do-not-disrupt=value.
func annotated(u *unstructured.Unstructured, value string) *unstructured.Unstructured {
	ann := u.GetAnnotations()
	ann[check.AnnDoNotDisrupt] = value
	u.SetAnnotations(ann)
	return u
}

// TestOpenProtected: the plan's view says Karpenter's drift honours
// do-not-disrupt, and names each node whose Node or NodeClaim carries
// karpenter.sh/do-not-disrupt=true (what Karpenter reads of either, v1.15.0
// statenode.go ValidateNodeDisruptable); other values of it protect no
// node, as in Karpenter.
func TestOpenProtected(t *testing.T) {
	client, _ := world(t, pool(t, userBudgets, nil),
		annotated(claim("c1", "n1", "000", "Initialized=True"), "true"),
		claim("c2", "n2", "000", "Initialized=True"),
		annotated(claim("c3", "n3", "000", "Initialized=True"), "true"),
		annotated(claim("c4", "n4", "000", "Initialized=True"), "5m"),
		claim("c5", "n5", "000", "Initialized=True"),
		annotated(claim("c6", "", "111", "Launched=Unknown"), "true"),
	)
	nodes := []corev1.Node{node("n1", "np"), node("n2", "np"), node("n3", "np"), node("n4", "np"), node("n5", "np"), node("n6", "np")}
	for i, v := range map[int]string{1: "true", 2: "true", 4: "false", 5: "true"} {
		nodes[i].Annotations = map[string]string{check.AnnDoNotDisrupt: v}
	}
	cg, _, err := cloud.OpenGroup(context.Background(), Cloud{}, client, nodes, plan.CloudTarget{})
	if err != nil {
		t.Fatal(err)
	}
	if !cg.DoNotDisrupt {
		t.Error("the view does not say Karpenter honours do-not-disrupt")
	}
	want := []struct{ kind, name, node, msg, fix string }{
		{"NodeClaim", "c1", "n1", `NodeClaim "c1" of node "n1" is annotated karpenter.sh/do-not-disrupt="true"`, "kubectl annotate nodeclaim c1 karpenter.sh/do-not-disrupt-"},
		{"Node", "n2", "n2", `node "n2" is annotated karpenter.sh/do-not-disrupt="true"`, "kubectl annotate node n2 karpenter.sh/do-not-disrupt-"},
		{"Node", "n3", "n3", `node "n3" and its NodeClaim "c3" are annotated`, "kubectl annotate node n3 karpenter.sh/do-not-disrupt- and kubectl annotate nodeclaim c3 karpenter.sh/do-not-disrupt-"},
		{"Node", "n6", "n6", `node "n6" is annotated`, "kubectl annotate node n6 karpenter.sh/do-not-disrupt-"},
	}
	if len(cg.Findings) != len(want) {
		t.Fatalf("findings %+v, want %d", cg.Findings, len(want))
	}
	for i, w := range want {
		f := cg.Findings[i]
		if f.Check != check.CheckNodeDoNotDisrupt || f.Severity != check.Blocker || f.Kind != w.kind || f.Name != w.name ||
			len(f.Nodes) != 1 || f.Nodes[0] != w.node || !strings.HasPrefix(f.Message, w.msg) || !strings.Contains(f.Fix, w.fix) {
			t.Errorf("finding %d: %+v, want %s %q on %q: %q, fix %q", i, f, w.kind, w.name, w.node, w.msg, w.fix)
		}
	}
}
