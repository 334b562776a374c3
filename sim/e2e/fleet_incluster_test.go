package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/podproc"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

const inClusterFleetFile = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: e2e-incl}
stages:
- name: only
  targets:
  - {context: sim, nodeGroup: fleet-incl, run: {provider: none, target-label: "eks.amazonaws.com/nodegroup-image=ami-new", max-unavailable: 1, post-drain-wait: 10s}}
`

// podOutput keeps what the coordinator's pods print and says when a
// line holding a part is written.
type podOutput struct {
	mu    sync.Mutex
	b     strings.Builder
	lines chan string
}

func (p *podOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b.Write(b)
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		select {
		case p.lines <- l:
		default:
		}
	}
	return len(b), nil
}

func (p *podOutput) String() string { p.mu.Lock(); defer p.mu.Unlock(); return p.b.String() }

// waitFor reads lines until one holds part, or d is over.
func (p *podOutput) waitFor(part string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, part) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// TestFleetInClusterCoordinator: "fleet run --in-cluster" runs the
// fleet's coordinator as a Job (its pods run as processes by podproc,
// with the fleet file's ConfigMap and the kubeconfig's Secret mounted).
// While it runs, a coordinator started from a terminal is refused naming
// the pod that holds the fleet's lease (exit 6, nothing changed). The
// coordinator's pod is deleted in its target's post-drain wait: the Job's
// next pod goes on from the fleet's record and finishes the target's run
// (one run in its history), and the terminal that submitted it, which
// followed both pods, exits 0. No PDB is violated.
func TestFleetInClusterCoordinator(t *testing.T) {
	t.Parallel()
	const name, ns, job = "fleet-incl", "nodeupgrade-fleet-incl", "nodeupgrade-fleet-e2e-incl"
	unshare, err := podproc.Namespaces()
	if err != nil {
		t.Skip(err)
	}
	setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	inClusterEnv(t, ns, nil)
	ctx := testContext(t, 8*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	out := serveCoordinator(t, ctx, ns, job, systemGroup(name), &podproc.Kubelet{Client: client, Host: sim.RestConfig.Host, Binary: binary, Env: cleanAWSEnv(), Unshare: unshare})
	file := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(file, []byte(inClusterFleetFile), 0o600); err != nil {
		t.Fatal(err)
	}
	run := startBackground(t, pluginCmd("fleet", "run", "-f", file, "--yes", "--state-namespace", ns, "--in-cluster",
		"--image-ref", "example.com/kubectl-nodeupgrade:e2e", "--job-node-selector", groupKey+"="+systemGroup(name)))
	if !out.waitFor("for load balancers to deregister", 4*time.Minute) {
		t.Fatalf("the coordinator's target never reached its post-drain wait:\n%s\nfollowed:\n%s", out.String(), run.output())
	}
	second := runCmd(t, pluginCmd("fleet", "run", "-f", file, "--yes", "--state-namespace", ns))
	if second.code != nodeupgrade.ExitLocked || !strings.Contains(second.stderr, `is run by another coordinator, "`+job+"-") {
		t.Errorf("a second coordinator while the Job's runs: %s; want exit %d naming the Job's pod", second, nodeupgrade.ExitLocked)
	}
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "job-name=" + job}); err != nil {
		t.Fatal(err)
	}
	code, followed := run.wait(t, 6*time.Minute)
	t.Logf("fleet run --in-cluster:\n%s\ncoordinator pods:\n%s", followed, out.String())
	if code != nodeupgrade.ExitOK || strings.Count(followed, "running on node") < 2 {
		t.Fatalf("fleet run --in-cluster: exit %d, want %d having followed two pods", code, nodeupgrade.ExitOK)
	}
	if !strings.Contains(out.String(), `fleet "e2e-incl" finished: 1 done, 0 skipped`) {
		t.Errorf("the Job's second pod did not finish the fleet")
	}
	assertUpgraded(t, name, 1)
	h, err := (&state.Store{Client: client, Namespace: state.DefaultNamespace}).LoadReports(ctx, name)
	if err != nil || len(h.Runs) != 1 {
		t.Errorf("the target's history: %v, %d runs, want one (resumed, not run twice)", err, len(h.Runs))
	}
	assertNoViolations(t, watcher.Stop())
}

// serveCoordinator runs the pods of the coordinator's Job in ns as
// processes on a node of their own (group system, which the Job's
// --job-node-selector names), stopped as a kubelet stops them when
// deleted, and returns what they print.
func serveCoordinator(t *testing.T, ctx context.Context, ns, job, system string, k *podproc.Kubelet) *podOutput {
	t.Helper()
	if _, _, err := scenario.CreateNodeGroup(ctx, client, scenario.NodeGroup{LabelKey: groupKey, Name: system, Zones: []string{"sim-a"}, Current: 1}); err != nil {
		t.Fatal(err)
	}
	out := &podOutput{lines: make(chan string, 10000)}
	serving, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		k.Serve(serving, ns, metav1.ListOptions{LabelSelector: "job-name=" + job}, func(p *corev1.Pod) {
			wg.Go(func() {
				code, err := k.Run(serving, p, out)
				t.Logf("coordinator pod %s exited %d (%v)", p.Name, code, err)
			})
		})
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	return out
}
