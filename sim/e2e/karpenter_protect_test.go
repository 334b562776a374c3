package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/karpenter"
)

// TestKarpenterDoNotDisrupt: on the real Karpenter, a drifted NodePool
// with a pod annotated karpenter.sh/do-not-disrupt=true on one node and
// the NodeClaim of another annotated the same: plan names both as
// blockers, run refuses with exit 5 before anything changes, --force
// lifts the pod's but not the NodeClaim's; and the plan read through a
// kubeconfig whose server has a path (a Rancher-like proxy) finds the
// NodePool.
func TestKarpenterDoNotDisrupt(t *testing.T) {
	const name = "karp-dnd"
	p := setupKarpenterPool(t, name)
	ctx := testContext(t, 15*time.Minute)
	// Karpenter would replace the drifted nodes itself at the user's 30%:
	// a budget of 0 for drift keeps them for the plugin to plan.
	patch := `{"spec":{"disruption":{"budgets":[{"nodes":"30%"},{"nodes":"0","reasons":["Drifted"]}]}}}`
	if _, err := p.dc.Resource(karpenter.NodePools).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, claim, claimNode := p.protect(t, ctx)
	p.changeNodeClass(t, name+"-v2")
	budgets, _ := p.poolBudgets(t)

	t.Run("plan names the pod and the NodeClaim", func(t *testing.T) {
		r := plugin(t, "plan", name)
		if r.code != nodeupgrade.ExitOK {
			t.Fatalf("plan: %s", r)
		}
		for _, want := range []string{
			"do-not-disrupt", fmt.Sprintf("pod %q annotated karpenter.sh/do-not-disrupt=\"true\"", name+"/"+pod.Name),
			"node-do-not-disrupt", fmt.Sprintf("NodeClaim %q of node %q is annotated karpenter.sh/do-not-disrupt=\"true\"", claim, claimNode),
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("plan lacks %q:\n%s", want, r.stdout)
			}
		}
	})
	for _, args := range [][]string{nil, {"--force"}} {
		t.Run(strings.Join(append([]string{"run"}, args...), " ")+" is refused, nothing changed", func(t *testing.T) {
			r := plugin(t, p.run(args...)...)
			want := "node-do-not-disrupt (NodeClaim/" + claim + ")"
			if args == nil {
				want = "do-not-disrupt (Deployment/" + name + "/web)"
			}
			if r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, want) {
				t.Fatalf("want exit %d naming %s: %s", nodeupgrade.ExitBlockers, want, r)
			}
			if args != nil && strings.Contains(r.stderr, "do-not-disrupt (Deployment/") {
				t.Errorf("--force left the pod's do-not-disrupt a blocker: %s", r.stderr)
			}
			p.assertNothingChanged(t, ctx, budgets)
		})
	}
	t.Run("plan through a kubeconfig whose server has a path", func(t *testing.T) {
		r := pluginAs(t, prefixedKubeconfig(t, "/k8s/clusters/c-m-e2e"), "plan", name)
		if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "node-do-not-disrupt") {
			t.Errorf("plan behind the path: %s", r)
		}
	})
}

// protect annotates a pod of web do-not-disrupt, and the NodeClaim of a
// node other than the pod's; it returns the pod, the NodeClaim and its node.
func (p *karpPool) protect(t *testing.T, ctx context.Context) (*corev1.Pod, string, string) {
	t.Helper()
	pods, err := client.CoreV1().Pods(p.name).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("no web pod: %v", err)
	}
	pod := &pods.Items[0]
	ann := `{"metadata":{"annotations":{"karpenter.sh/do-not-disrupt":"true"}}}`
	if _, err := client.CoreV1().Pods(p.name).Patch(ctx, pod.Name, types.MergePatchType, []byte(ann), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	claims, err := karpenter.PoolClaims(ctx, p.dc, p.name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		node, _, _ := unstructured.NestedString(claims[i].Object, "status", "nodeName")
		if node == "" || node == pod.Spec.NodeName {
			continue
		}
		if _, err := p.dc.Resource(karpenter.NodeClaims).Patch(ctx, claims[i].GetName(), types.MergePatchType, []byte(ann), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		return pod, claims[i].GetName(), node
	}
	t.Fatal("no NodeClaim on another node than the pod's")
	return nil, "", ""
}

// assertNothingChanged: the budgets are as before the run, no hold's
// annotation, no node tainted or cordoned, every NodeClaim in place.
func (p *karpPool) assertNothingChanged(t *testing.T, ctx context.Context, budgets string) {
	t.Helper()
	got, ann := p.poolBudgets(t)
	if got != budgets {
		t.Errorf("budgets %s, want %s", got, budgets)
	}
	if _, ok := ann["nodeupgrade.dev/budgets-before-run"]; ok {
		t.Error("the run held the drift off")
	}
	// the run's taint is keyed by the nodes' NodePool label
	assertUntouched(t, ctx, "karpenter.sh/nodepool", p.name)
	claims, err := karpenter.PoolClaims(ctx, p.dc, p.name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range claims {
		if claims[i].GetDeletionTimestamp() != nil {
			t.Errorf("NodeClaim %q is deleting", claims[i].GetName())
		}
	}
	if len(claims) != 9 {
		t.Errorf("%d NodeClaims, want 9", len(claims))
	}
}

// prefixedKubeconfig serves the cluster's API under prefix alone, as
// Rancher serves a downstream cluster's under /k8s/clusters/<id> (the
// proxy holds the credentials), and writes a kubeconfig for it.
func prefixedKubeconfig(t *testing.T, prefix string) string {
	t.Helper()
	rt, err := rest.TransportFor(sim.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(sim.RestConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, prefix)
			r.Out.URL.RawPath = ""
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix+"/") {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: rancher
  cluster:
    server: %s%s
users:
- name: rancher
  user: {}
contexts:
- name: rancher
  context: {cluster: rancher, user: rancher}
current-context: rancher
`, srv.URL, prefix)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
