package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The three command hooks run once per node, in order, with the node's
// environment and a kubeconfig that reaches this cluster; a failing hook
// stops the run with its own exit code, and the re-run finishes without
// repeating the hooks that succeeded.
func TestHooksRunInOrderAndRerun(t *testing.T) {
	t.Parallel()
	const name = "hooks"
	oldNodes, _ := setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 4, MinAvailable: num(2)})
	ctx := testContext(t, 3*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{}
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		zones[n.Name] = n.Labels[plan.ZoneLabel]
	}
	dir := t.TempDir()
	log, marker := filepath.Join(dir, "log"), filepath.Join(dir, "failed-once")
	// Each hook appends its environment as one line and keeps a copy of
	// the kubeconfig it was given.
	logHook := fmt.Sprintf(`echo "$HOOK $NODE group=$NODE_GROUP zone=$ZONE batch=$BATCH provider=$PROVIDER instance=$INSTANCE_ID" >> %q && cp "$KUBECONFIG" %q`, log, filepath.Join(dir, "kubeconfig"))
	// The pre-terminate hook fails the first time it runs.
	failOnce := fmt.Sprintf(`if [ ! -e %q ]; then touch %q; echo "deregistration refused" >&2; exit 7; fi; %s`, marker, marker, logHook)
	args := []string{"run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "1s", "--seed", "1", "--yes",
		"--pre-drain-hook", logHook, "--post-drain-hook", logHook, "--pre-terminate-hook", failOnce, "--hook-timeout", "30s"}

	first := plugin(t, args...)
	if first.code != nodeupgrade.ExitHookFailed {
		t.Fatalf("first run: want exit %d (hook failed): %s", nodeupgrade.ExitHookFailed, first)
	}
	errLine := strings.TrimPrefix(strings.TrimSpace(first.stderr), "error: ")
	if !oneLine(first.stderr) || !strings.Contains(errLine, "error when running the pre-terminate hook on node") ||
		!strings.Contains(errLine, "exit status 7 (last output: deregistration refused)") || !strings.Contains(errLine, `"kubectl nodeupgrade abort"`) {
		t.Errorf("first run's error is not one line naming the hook, its status and output, and the fix:\n%s", first.stderr)
	}
	if !strings.Contains(first.stdout, "pre-terminate hook: deregistration refused") {
		t.Errorf("the hook's output is not shown, prefixed with the hook and node:\n%s", first.stdout)
	}

	second := plugin(t, args...)
	if second.code != nodeupgrade.ExitOK {
		t.Fatalf("re-run: %s", second)
	}
	assertNoViolations(t, watcher.Stop())
	assertUpgraded(t, name, 1)

	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	// Per node, once each and in order; batch 1 is done before batch 2.
	var order []string
	batchOf := map[string]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 7 || !slices.Contains(oldNodes, f[1]) {
			t.Fatalf("hook log line %q: want HOOK NODE and the environment", l)
		}
		order = append(order, f[0]+" "+f[1])
		if f[2] != "group="+name || f[3] != "zone="+zones[f[1]] || f[5] != "provider=none" || f[6] != "instance=" {
			t.Errorf("hook log line %q: want group=%s, zone=%s, provider=none and no instance", l, name, zones[f[1]])
		}
		batchOf[f[1]] = f[4]
	}
	var want []string
	for _, n := range []string{firstOf(lines), secondOf(lines)} {
		want = append(want, plan.HookPreDrain+" "+n, plan.HookPostDrain+" "+n, plan.HookPreTerminate+" "+n)
	}
	if !slices.Equal(order, want) {
		t.Errorf("hooks ran\n  %s\nwant each once, in order\n  %s", strings.Join(order, "\n  "), strings.Join(want, "\n  "))
	}
	if b1, b2 := batchOf[firstOf(lines)], batchOf[secondOf(lines)]; b1 != "batch=1" || b2 != "batch=2" {
		t.Errorf("batches %s and %s, want batch=1 and batch=2", b1, b2)
	}
	if !strings.Contains(second.stdout, "pre-drain hook: recorded done, not run again") {
		t.Errorf("the re-run does not say it skipped the hooks done:\n%s", second.stdout)
	}

	// The kubeconfig the hooks got reaches this cluster.
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	hookClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hookClient.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("the hooks' kubeconfig does not reach the cluster: %v", err)
	}
}

func firstOf(lines []string) string { return strings.Fields(lines[0])[1] }

func secondOf(lines []string) string { return strings.Fields(lines[len(lines)-1])[1] }

// A pre-drain annotation hook holds the node's drain until its owner takes
// it off; plan lists it, and the run says what it waits for.
func TestAnnotationHookHoldsDrain(t *testing.T) {
	t.Parallel()
	const name = "hooks-annotated"
	oldNodes, _ := setupGroup(t, name, 1, 1, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
	ctx := testContext(t, 2*time.Minute)
	key := plan.PreDrainHookPrefix + "load-balancer"
	node := oldNodes[0]
	patch := func(value string) {
		t.Helper()
		body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, value)
		if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`"team-net"`)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}

	p := plugin(t, "plan", name, "--target-label", target)
	if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, node+": "+key) {
		t.Errorf("plan does not list the node's annotation hook: %s", p)
	}

	run := startBackground(t, pluginCmd("run", name, "--target-label", target, "--post-drain-wait", "1s", "--yes"))
	if !run.waitFor("waiting up to", "pre-drain annotation hooks", key, `(owner "team-net")`) {
		code, out := run.wait(t, time.Minute)
		t.Fatalf("the run did not wait for the annotation hook (exit %d):\n%s", code, out)
	}
	// Held: nothing has left the node.
	pods, err := client.CoreV1().Pods(name).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 || strings.Contains(run.output(), "draining") {
		t.Errorf("the node was drained while its annotation hook was on it:\n%s", run.output())
	}
	patch("null")
	code, out := run.wait(t, time.Minute)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "pre-drain annotation hooks taken off") {
		t.Errorf("the run does not say the hook was taken off:\n%s", out)
	}
	assertNoViolations(t, watcher.Stop())
	assertUpgraded(t, name, 1)
}
