package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestAKSCordonQuarantineIsNoCancel: a pool with maxSurge 0,
// maxUnavailable 1 and undrainableNodeBehavior Cordon (API 2025-05-01)
// is planned with no surge node, one node at a time; AKS quarantines the
// node a PDB holds and ends its upgrade Canceled: the run says so as
// AKS's quarantine naming the node (exit 8, the run's own quarantine's),
// never as a cancel.
func TestAKSCordonQuarantineIsNoCancel(t *testing.T) {
	t.Parallel()
	start := time.Now()
	const name = "aks-quar"
	a := setupAKSPool(t, name, aksPoolSpec{maxSurge: "0", maxUnavailable: "1", undrainable: "Cordon"},
		scenario.App{Name: "db", Replicas: 1, MaxUnavailable: num(0)})
	plan := a.run(t, "plan", name, "--node-image", "latest", "--ignore-check", "pdb-zero-disruptions")
	for _, want := range []string{"AKS adds 0 surge node(s)", "drains 1 node(s) at a time", "undrainableNodeBehavior Cordon"} {
		if plan.code != nodeupgrade.ExitOK || !strings.Contains(plan.stdout, want) {
			t.Errorf("the plan must say %q: %s", want, plan)
		}
	}
	r := a.run(t, "run", name, "--yes", "--node-image", "latest", "--aks-drain-timeout", "1m",
		"--ignore-check", "pdb-zero-disruptions", "--ignore-check", "single-replica", "--ignore-check", "no-room")
	if r.code != nodeupgrade.ExitPaused || !strings.Contains(r.stderr, "quarantined") || strings.Contains(r.stderr, "cancel") || strings.Contains(r.stderr, "paused") {
		t.Fatalf("the run must end quarantined (exit %d), not cancelled: %s", nodeupgrade.ExitPaused, r)
	}
	if st := a.state(t); st != "Canceled" {
		t.Errorf("the pool is %s, want AKS's Canceled", st)
	}
	nodes, err := client.CoreV1().Nodes().List(testContext(t, time.Minute), metav1.ListOptions{LabelSelector: azurefake.AgentPoolLabel + "=" + name + "," + azurefake.QuarantineLabel + "=" + azurefake.QuarantineValue})
	if err != nil || len(nodes.Items) != 1 || !strings.Contains(r.stderr+r.stdout, nodes.Items[0].Name) {
		t.Errorf("one node quarantined, named by the run: %v %d, %s", err, len(nodes.Items), r)
	}
	if st := a.run(t, "status", name); !strings.Contains(st.stdout, "quarantined") {
		t.Errorf("status must say the run stopped with nodes quarantined: %s", st)
	}
	t.Logf("%s", time.Since(start).Round(time.Millisecond))
}
