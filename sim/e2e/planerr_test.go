package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

// TestAWSPlanFileOfADeletedNode: a plan saved before one of its nodes was
// deleted ("kubectl delete node"; its instance still runs in the group,
// where it looks like a machine yet to join) is refused at once, exit 2,
// naming the node, with nothing recorded or changed: not a wait of up to
// --node-ready-timeout for the instance to join (issue 50, item 5).
func TestAWSPlanFileOfADeletedNode(t *testing.T) {
	t.Parallel()
	const name = "aws-planfile-deleted"
	g := setupAWSGroup(t, name, 3)
	ctx := testContext(t, 3*time.Minute)
	saved := g.run(t, "plan", name, "--ami", "ami-new", "--max-unavailable", "1", "-o", "json")
	file := filepath.Join(t.TempDir(), "plan.json")
	if saved.code != nodeupgrade.ExitOK || os.WriteFile(file, []byte(saved.stdout), 0o600) != nil {
		t.Fatalf("saving the plan: %s", saved)
	}
	gone := groupNodes(t, ctx, groupKey, name)[0].Name
	if err := client.CoreV1().Nodes().Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := g.run(t, "run", "--plan-file", file, "--yes")
	took := time.Since(start)
	want := fmt.Sprintf("node %q is gone from the cluster", gone)
	if r.code != nodeupgrade.ExitUsage || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "to join") {
		t.Fatalf("run --plan-file after deleting node %q: want exit 2 with %q and no wait to join; got %s", gone, want, r)
	}
	// The refusal comes before any wait: a join wait lasts minutes.
	if took > time.Minute {
		t.Errorf("the refusal took %s", took)
	}
	if st := g.run(t, "status", name); st.code != nodeupgrade.ExitUsage || !strings.Contains(st.stderr, "no run recorded") {
		t.Errorf("status after the refusal: want no run recorded, got %s", st)
	}
	gr, _ := g.srv.Group(name)
	if gr.Desired != g.original.Desired || gr.Max != g.original.Max {
		t.Errorf("sizes desired/max %d/%d after the refusal, want the original %d/%d", gr.Desired, gr.Max, g.original.Desired, g.original.Max)
	}
	if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 1 {
		t.Errorf("launch template has %d versions after the refusal, want 1", len(lt.Versions))
	}
}

// TestAWSUnreachableIsNotTheAPIServer: with AWS_ENDPOINT_URL at a port
// nothing listens on, plan exits 11 naming the endpoint and the settings
// that lead there, not 9 and "the API server", which answered
// (issue 50, item 6).
func TestAWSUnreachableIsNotTheAPIServer(t *testing.T) {
	t.Parallel()
	const name = "aws-unreachable"
	g := setupAWSGroup(t, name, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	cmd := g.cmd(sim.Kubeconfig, "plan", name, "--ami", "ami-new")
	cmd.Env = append(cmd.Env, "AWS_ENDPOINT_URL=http://"+closed)
	r := runCmd(t, cmd)
	want := "cannot reach the AWS API at " + closed + ": "
	if r.code != nodeupgrade.ExitCloudUnreachable || !strings.Contains(r.stderr, want) ||
		!strings.Contains(r.stderr, "AWS_ENDPOINT_URL") || strings.Contains(r.stderr, "API server") {
		t.Fatalf("plan with AWS unreachable: want exit %d with %q naming AWS_ENDPOINT_URL, and no \"API server\"; got %s", nodeupgrade.ExitCloudUnreachable, want, r)
	}
}
