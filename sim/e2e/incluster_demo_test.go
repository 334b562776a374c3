package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/podproc"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestInClusterDemo is hack/demo.sh in-cluster with its own pieces, on 3
// nodes: the AWS demo (awsfake.StartDemo), node system-0 of group
// "system" whose pods run as processes (podproc's Register and
// ServeNode, as simcluster kubelet), deploy/rbac.yaml and
// deploy/in-cluster.yaml, and the demo's run with its flags and
// --in-cluster. The Job's pod is deleted in a post-drain wait, as the
// demo deletes it: the pod's process gets SIGTERM, the run stops where it is, the
// Job's next pod resumes it, and the run finishes; report has the run's
// attempts, one per pod, and every node of the group.
func TestInClusterDemo(t *testing.T) {
	unshare, err := podproc.Namespaces()
	if err != nil {
		t.Skip(err)
	}
	const group, ns = awsfake.DemoGroup, state.DefaultNamespace
	ctx := testContext(t, 8*time.Minute)
	srv, err := awsfake.StartDemo(ctx, client, awsfake.DemoOptions{Size: 3, LaunchDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanInClusterDemo(t, srv, group, ns) })
	env := append(cleanAWSEnv(), "AWS_ENDPOINT_URL="+srv.URL,
		"AWS_ACCESS_KEY_ID=demo", "AWS_SECRET_ACCESS_KEY=demo", "AWS_REGION="+awsfake.DemoRegion)
	k := &podproc.Kubelet{Client: client, Host: sim.RestConfig.Host, Binary: binary, Env: env, Unshare: unshare}
	if err := k.Register(ctx, scenario.Node{Name: "system-0", Labels: map[string]string{groupKey: "system"}}); err != nil {
		t.Fatal(err)
	}
	serving, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); k.ServeNode(serving, "system-0", &testLog{t: t}) }()
	t.Cleanup(func() { stop(); <-done })
	inClusterEnv(t, ns, nil)
	var before []string
	for _, n := range groupNodes(t, ctx, groupKey, group) {
		before = append(before, n.Name)
	}

	run := startBackground(t, setupCmd(env, "run", group, "--ami", "ami-new", "--max-unavailable", "2", "--seed", "1", "--post-drain-wait", "5s",
		"--in-cluster", "--image-ref", "kubectl-nodeupgrade:demo", "--job-node-selector", groupKey+"=system", "--yes"))
	// In the post-drain wait, as the demo: a pod stopped while an
	// eviction is on its way may leave the PDB counting the pod as
	// disrupted for the disruption controller's 2 minutes.
	if !run.waitFor("phase Cordon, batch 1/") {
		t.Fatalf("the run never reached batch 1's post-drain wait:\n%s", run.output())
	}
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "job-name=" + session.JobName(group)}); err != nil {
		t.Fatal(err)
	}
	code, out := run.wait(t, 6*time.Minute)
	t.Logf("run --in-cluster:\n%s", out)
	if code != nodeupgrade.ExitOK || !strings.Contains(out, "the Job starts another, which resumes the run") {
		t.Fatalf("run --in-cluster exit %d, want %d, a pod stopped and the next resuming", code, nodeupgrade.ExitOK)
	}
	r := runCmd(t, setupCmd(env, "report", group))
	t.Logf("report: %s", r)
	if r.code != nodeupgrade.ExitOK || strings.Count(r.stdout, "in-cluster pod") < 2 {
		t.Errorf("report exit %d, want %d and two in-cluster attempts", r.code, nodeupgrade.ExitOK)
	}
	for _, n := range before {
		if !strings.Contains(r.stdout, n) {
			t.Errorf("the report does not list node %s", n)
		}
	}
}

// cleanInClusterDemo leaves the cluster as the AWS demo's other tests
// expect it: no demo group, workloads, Job, record or report, no node
// system-0.
func cleanInClusterDemo(t *testing.T, srv *awsfake.Server, group, ns string) {
	ctx := context.Background()
	srv.Close()
	clearLabelDemo(t, ctx)
	background := metav1.DeletePropagationBackground
	_ = client.BatchV1().Jobs(ns).Delete(ctx, session.JobName(group), metav1.DeleteOptions{PropagationPolicy: &background})
	_ = (&state.Store{Client: client, Namespace: ns}).Delete(ctx, group)
	_ = client.CoreV1().ConfigMaps(ns).Delete(ctx, state.ReportName(group), metav1.DeleteOptions{})
	_ = client.CoreV1().Nodes().Delete(ctx, "system-0", metav1.DeleteOptions{})
}

// testLog writes lines to the test's log.
type testLog struct{ t *testing.T }

func (l *testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
