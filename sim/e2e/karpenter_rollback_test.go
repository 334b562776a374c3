package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/karpenter"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestKarpenterRollbackAfterAFinishedRun: on the real Karpenter, a run
// replaced a NodePool's 2 nodes for NodeClass v2; the morning after,
// rollback points the pool back at v1, the NodeClass its nodes ran before
// the run (recorded from their NodeClaims), and replaces them in waves as
// a run does: plan --rollback says so first and changes nothing, no --yes
// is refused, killed after its first drain it is finished by resume, no
// PDB violated, the user's budgets back; past --rollback-window it is
// refused in one line, nothing changed.
func TestKarpenterRollbackAfterAFinishedRun(t *testing.T) {
	const name = "karp-rollback"
	// The user's own Drifted budget of 0: Karpenter replaces no node
	// between the NodeClass change and the run.
	budgets := []any{map[string]any{"nodes": "30%"}, map[string]any{"nodes": "0", "reasons": []any{"Drifted"}}}
	spec := karpenter.PoolSpec{Name: name, NodeClass: name + "-v1", Zones: karpenter.Zones[:1], Budgets: budgets}
	p := setupKarpenterPoolOf(t, spec, []karpWorkload{{"web", 2, "500m", true, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: num(1)}}})
	ctx := testContext(t, 15*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	p.changeNodeClass(t, name+"-v2")
	args := []string{"--max-unavailable", "1", "--post-drain-wait", "0s", "--yes"}
	if r := plugin(t, append([]string{"run", name}, args...)...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run: %s", r)
	}
	p.assertOn(t, ctx, name+"-v2")
	back := "KWOKNodeClass/" + name + "-v1"
	if r := plugin(t, "plan", name, "--rollback"); r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "points NodePool \""+name+"\" back at NodeClass karpenter.kwok.sh/"+back) {
		t.Fatalf("plan --rollback does not say the pool goes back to %s: %s", back, r)
	}
	if r := plugin(t, "rollback", name); r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) {
		t.Fatalf("rollback without --yes: want exit %d in one line, got %s", nodeupgrade.ExitUsage, r)
	}
	if ref := p.classRef(t, ctx); ref != name+"-v2" {
		t.Fatalf("plan --rollback or a refused rollback changed the NodePool: it names %s", ref)
	}
	killed, first := runAndKill(t, pluginCmd("rollback", name, "--yes"), killPoint{marker: ": drained"})
	if !killed || !strings.Contains(first, "pointed back at NodeClass karpenter.kwok.sh/"+back) {
		t.Fatalf("the rollback ended before its first drain, or did not point the pool back:\n%s", first)
	}
	if r := plugin(t, "resume", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume of the killed rollback: %s", r)
	}
	assertNoViolations(t, watcher.Stop())
	p.assertOn(t, ctx, name+"-v1")
	if got, _ := p.poolBudgets(t); got != p.budgets {
		t.Errorf("budgets after the rollback %s, want the user's %s", got, p.budgets)
	}
	// The rollback is a finished run too; past its window it is refused.
	r := plugin(t, "rollback", name, "--rollback-window", "1ms", "--yes")
	if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, "--rollback-window") {
		t.Errorf("rollback past the window: want exit %d in one line naming --rollback-window, got %s", nodeupgrade.ExitUsage, r)
	}
	if ref := p.classRef(t, ctx); ref != name+"-v1" {
		t.Errorf("a refused rollback changed the NodePool: it names %s", ref)
	}
}

// classRef is the NodeClass the NodePool names.
func (p *karpPool) classRef(t *testing.T, ctx context.Context) string {
	t.Helper()
	u, err := p.dc.Resource(karpenter.NodePools).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "nodeClassRef", "name")
	return ref
}

// assertOn checks that the pool names class and that its 2 NodeClaims
// were launched from it, none drifted, the workloads Ready.
func (p *karpPool) assertOn(t *testing.T, ctx context.Context, class string) {
	t.Helper()
	if ref := p.classRef(t, ctx); ref != class {
		t.Errorf("NodePool names %s, want %s", ref, class)
	}
	claims, err := karpenter.PoolClaims(ctx, p.dc, p.name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		ref, _, _ := unstructured.NestedString(claims[i].Object, "spec", "nodeClassRef", "name")
		if s, r := karpenter.Condition(&claims[i], "Drifted"); s == "True" || ref != class {
			t.Errorf("NodeClaim %q: NodeClass %q, Drifted %s %s; want %s", claims[i].GetName(), ref, s, r, class)
		}
	}
	if len(claims) != 2 {
		t.Errorf("the pool has %d NodeClaims, want 2", len(claims))
	}
	if err := scenario.WaitAppsReady(ctx, client, p.name); err != nil {
		t.Errorf("workloads not back to full Ready: %v", err)
	}
}
