package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestManagedNodeGroupAutoscaledBlueGreen: green, a managed node group
// made at 0 nodes, is grown by the cluster autoscaler for blue's pods;
// during the wait period the autoscaler takes blue's empty nodes away and
// keeps the one whose pod is safe-to-evict=false, which the run drains
// once the wait is over; blue is deleted with nothing left for EKS's
// delete to force out, 0 PDB violations.
func TestManagedNodeGroupAutoscaledBlueGreen(t *testing.T) {
	t.Parallel()
	const name = "mng-abg"
	m := setupManagedGroup(t, name, 3, time.Minute, scenario.App{Name: "keep", Replicas: 1,
		PodAnnotations: map[string]string{awsfake.SafeToEvictAnnotation: "false"}})
	ctx := testContext(t, 10*time.Minute)
	watch, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	keeper := onlyPodNode(t, ctx, name)
	blueASG, _ := m.srv.NodegroupASG(m.cluster, name)
	run := startBackground(t, m.cmd(sim.Kubeconfig, "run", name, "--strategy", "autoscaled-blue-green", "--kubernetes-version", "1.31",
		"--wait-period", "20s", "--post-drain-wait", "0s", "--ignore-check", "single-replica", "--yes"))
	if !run.waitFor("wait period: ") {
		t.Fatalf("the run never reached the wait period:\n%s", run.output())
	}
	greenASG, ok := m.srv.NodegroupASG(m.cluster, managedGreen(name))
	if !ok {
		t.Fatalf("no green node group %q:\n%s", managedGreen(name), run.output())
	}
	go func() {
		_ = m.srv.RunAutoscaler(ctx, client, awsfake.AutoscalerOptions{
			ScaleUpGroups: []string{greenASG}, ScaleDownGroups: []string{blueASG}, ScaleDownDelay: 2 * time.Second, Namespaces: []string{name},
		})
	}()
	followAutoscaledWait(t, ctx, run, keeper, func(ctx context.Context) string {
		if m.srv.WaitFor(ctx, blueASG, func(g awsfake.Group) bool { return g.Desired == 1 }) == nil {
			return ""
		}
		g, _ := m.srv.Group(blueASG)
		return fmt.Sprintf("desired %d", g.Desired)
	})
	if got := m.srv.Nodegroups(m.cluster); !slices.Equal(got, []string{managedGreen(name)}) {
		t.Errorf("node groups %v, want only green %q", got, managedGreen(name))
	}
	if forced, deleted := m.srv.DeleteForced(m.cluster, name); !deleted || len(forced) > 0 {
		t.Errorf("blue deleted %v, pods EKS's delete had to move: %v; want deleted with none", deleted, forced)
	}
	if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
		t.Errorf("the keeper is not Ready on green: %v", err)
	}
	assertNoViolations(t, watch.Stop())
}
