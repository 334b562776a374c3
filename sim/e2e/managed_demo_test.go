package e2e

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
)

// TestManagedDemoEstimateHolds is hack/demo.sh eks-managed with its own
// pieces (awsfake.StartDemo with the managed group, the demo's run and
// flags; the self-managed group at 3 nodes): EKS updates group
// demo-managed from 1.30 to 1.31, draining 2 nodes at a time, Deployment
// ledger's PDB (maxUnavailable 1, pods Ready 20 s after they are
// scheduled) refusing an eviction until a replacement is Ready. The run
// finishes within ±50% of the plan's estimate, and the nodes report the
// 1.31 release's kubelet.
// The run names a held ledger pod while EKS drains (the demo's
// frontend pod on every node shows each drain begin).
//
// A measurement of the estimate against the clock, not a test of
// behaviour (the in-place update is TestManagedNodeGroupInPlaceUpdate's),
// and 4 minutes on its own before the parallel tests: it runs with
// NODEUPGRADE_ESTIMATE_CHECK=1.
func TestManagedDemoEstimateHolds(t *testing.T) {
	if os.Getenv("NODEUPGRADE_ESTIMATE_CHECK") == "" {
		t.Skip("measures the estimate against the clock: NODEUPGRADE_ESTIMATE_CHECK=1")
	}
	ctx := testContext(t, 8*time.Minute)
	srv, err := awsfake.StartDemo(ctx, client, awsfake.DemoOptions{Size: 3, LaunchDelay: 500 * time.Millisecond, Managed: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanManagedDemo(t, srv) })
	env := append(cleanAWSEnv(), "AWS_ENDPOINT_URL="+srv.URL,
		"AWS_ACCESS_KEY_ID=demo", "AWS_SECRET_ACCESS_KEY=demo", "AWS_REGION="+awsfake.DemoRegion)
	start := time.Now()
	r := runCmd(t, setupCmd(env, "run", awsfake.DemoManagedGroup, "--kubernetes-version", "1.31", "--max-unavailable", "2", "--post-drain-wait", "5s", "--yes"))
	took := time.Since(start)
	t.Logf("run (%s): %s", took.Round(time.Second), r)
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run exit %d, want %d", r.code, nodeupgrade.ExitOK)
	}
	if !strings.Contains(r.stdout, `PodDisruptionBudget "demo/ledger"`) {
		t.Errorf("the run named no ledger pod held by PodDisruptionBudget \"demo/ledger\" while EKS drained")
	}
	assertEstimateWithin(t, r.stdout, took, 50)
	for _, n := range groupNodes(t, ctx, awsfake.NodeGroupLabel, awsfake.DemoManagedGroup) {
		if v := n.Status.NodeInfo.KubeletVersion; v != "v1.31.2-eks" {
			t.Errorf("node %q reports kubelet %q, want the 1.31 release's v1.31.2-eks", n.Name, v)
		}
	}
}

// cleanManagedDemo leaves the cluster as the AWS demo's other tests
// expect it: no demo groups, workloads or records.
func cleanManagedDemo(t *testing.T, srv *awsfake.Server) {
	ctx := context.Background()
	srv.Close()
	clearLabelDemo(t, ctx)
	for _, n := range groupNodes(t, ctx, awsfake.NodeGroupLabel, awsfake.DemoManagedGroup) {
		_ = client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	}
	for _, d := range []string{"ledger", "frontend"} {
		_ = client.AppsV1().Deployments("demo").Delete(ctx, d, metav1.DeleteOptions{})
	}
	_ = client.PolicyV1().PodDisruptionBudgets("demo").Delete(ctx, "ledger", metav1.DeleteOptions{})
	store := &state.Store{Client: client, Namespace: state.DefaultNamespace}
	_ = store.Delete(ctx, awsfake.DemoManagedGroup)
	_ = client.CoreV1().ConfigMaps(state.DefaultNamespace).Delete(ctx, state.ReportName(awsfake.DemoManagedGroup), metav1.DeleteOptions{})
}

// estimated is the "Phases (estimated D; ..." of a printed plan.
var estimated = regexp.MustCompile(`Phases \(estimated ([0-9hms]+);`)

// assertEstimateWithin wants took, the run's time, within ±percent of
// the estimate the plan out printed, and says whether it was.
func assertEstimateWithin(t *testing.T, out string, took time.Duration, percent int64) bool {
	t.Helper()
	m := estimated.FindStringSubmatch(out)
	if m == nil {
		t.Errorf("no estimate printed")
		return false
	}
	est, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimated %s, the run took %s", est, took.Round(time.Second))
	if off := (took - est).Abs(); off*100 > est*time.Duration(percent) {
		t.Errorf("estimated %s, the run took %s: %s off, not within ±%d%% of the estimate", est, took.Round(time.Second), off.Round(time.Second), percent)
		return false
	}
	return true
}
