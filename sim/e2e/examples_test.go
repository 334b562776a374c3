package e2e

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// helpExamples runs the examples of the commands' --help, of the README
// and of docs/ as a user copies them: the line (or the docs' script) as
// written, through a shell and kubectl's plugin dispatch, connected by
// KUBECONFIG (and, on the AWS path, the AWS environment).
type helpExamples struct {
	root *cobra.Command
	all  map[string]docExample // example line, or a docs script's name → where it is shown
	dir  string                // working directory: plan.json lands here
	path string                // PATH with kubectl and kubectl-nodeupgrade

	mu  sync.Mutex
	ran map[string]bool
}

func newHelpExamples(t *testing.T) *helpExamples {
	t.Helper()
	docs, err := docExamples(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	e := &helpExamples{all: docs, ran: map[string]bool{}, dir: t.TempDir()}
	e.root = nodeupgrade.NewCmdNodeUpgrade(genericiooptions.NewTestIOStreamsDiscard())
	help := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for line := range strings.SplitSeq(c.Example, "\n") {
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "kubectl nodeupgrade ") {
				e.all[line] = docExample{where: c.CommandPath() + " --help"}
				help++
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(e.root)
	if help == 0 || len(docs) == 0 {
		t.Fatalf("%d --help and %d docs examples: the test would cover nothing", help, len(docs))
	}

	// kubectl finds the plugin on PATH as it would after a krew install.
	// Without kubectl on the machine a stand-in dispatches the same way,
	// so the examples still run as written.
	bin := t.TempDir()
	if err := os.Symlink(binary, filepath.Join(bin, "kubectl-nodeupgrade")); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Logf("kubectl is not installed (%v): a stand-in dispatches to the plugin", err)
		shim := "#!/bin/sh\n[ \"$1\" = nodeupgrade ] || { echo \"kubectl stand-in: only plugin nodeupgrade\" >&2; exit 1; }\nshift\nexec kubectl-nodeupgrade \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.path = bin + string(os.PathListSeparator) + os.Getenv("PATH")
	return e
}

// postDrainWait replaces the default 60 s wait after each drain in the
// examples that take --post-drain-wait: an eks run on the 3-node demo
// drains 9 nodes (3 outdated, then the 6 the scale-up added), so the default
// would make this test sleep for most of an hour. It changes how long a run
// sleeps, not whether it finishes; a cancel sent at the first drain still
// lands with 8 drains to go.
const postDrainWait = "2s"

// cmd is example line, which must be one of the --help or docs examples
// (for a docs script, its name), run in env after docExampleEnv.
func (e *helpExamples) cmd(t *testing.T, env []string, line string) *exec.Cmd {
	t.Helper()
	ex, ok := e.all[line]
	if !ok {
		t.Fatalf("%q is not an example of any --help or docs page (was one changed?)", line)
	}
	e.mu.Lock()
	e.ran[line] = true
	e.mu.Unlock()
	text := line
	if ex.script != "" {
		text = ex.script
	}
	cmd := exec.Command("bash", "-c", e.withPostDrainWait(text))
	cmd.Dir = e.dir
	cmd.Env = append(slices.Concat(docExampleEnv, env), "PATH="+e.path, "KUBECONFIG="+sim.Kubeconfig, "NO_COLOR=1")
	return cmd
}

// withPostDrainWait gives --post-drain-wait postDrainWait, right after the
// subcommand, to each `kubectl nodeupgrade` line of text whose command
// takes it. A saved plan carries the wait of the plan that wrote it.
func (e *helpExamples) withPostDrainWait(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(strings.TrimLeft(l, " "), "kubectl nodeupgrade ")
		sub, _, _ := strings.Cut(rest, " ")
		if !ok || strings.Contains(l, "--plan-file") {
			continue
		}
		if c, _, err := e.root.Find([]string{sub}); err != nil || c == e.root || c.Flags().Lookup("post-drain-wait") == nil {
			continue
		}
		at := strings.Index(l, "kubectl nodeupgrade "+sub) + len("kubectl nodeupgrade "+sub)
		lines[i] = l[:at] + " --post-drain-wait " + postDrainWait + l[at:]
	}
	return strings.Join(lines, "\n")
}

// run runs an example to its end and wants exit code want.
func (e *helpExamples) run(t *testing.T, env []string, want int, line string) result {
	t.Helper()
	start := time.Now()
	cmd := e.cmd(t, env, line)
	r := runCmd(t, cmd)
	t.Logf("%s: exit %d in %s", cmd.Args[2], r.code, time.Since(start).Round(100*time.Millisecond))
	if r.code != want {
		t.Fatalf("%s: want exit %d, got %s", cmd.Args[2], want, r)
	}
	return r
}

// notRun lists the examples no step ran.
func (e *helpExamples) notRun() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for line, ex := range e.all {
		if !e.ran[line] {
			out = append(out, ex.where+": "+line)
		}
	}
	slices.Sort(out)
	return out
}

// TestHelpExamplesRunOnTheDemo runs every example of every --help and every
// `kubectl nodeupgrade` example of the README and docs/ (see docExamples),
// as written (but for a shorter --post-drain-wait, see postDrainWait), on
// the demos of hack/demo.sh: the label path (provider none) on the node
// group of `simcluster up --none-demo` (scenario.Demo, nodes no cloud
// owns), then the AWS path on the one `--aws-demo` serves (with
// `--aws-demo-managed`'s group for the EKS managed node group page), then
// the GKE path on `--gke-demo`'s and the GCE path on `--gce-demo`'s, each
// with fewer nodes. Examples that
// act on a run (cancel, resume, rollback, complete, abort) act on one in
// the state they are for; runs the test makes only to reach that state use
// --post-drain-wait 0s. Each example must end with the exit code its
// purpose gives (0, or "paused" for a run an example cancels), leave no
// node tainted or cordoned, and break no PodDisruptionBudget; an example
// that no step runs fails the test.
func TestHelpExamplesRunOnTheDemo(t *testing.T) {
	t.Parallel()
	ex := newHelpExamples(t)
	const demo = "demo"
	ctx := testContext(t, 30*time.Minute)

	t.Run("label path", func(t *testing.T) {
		if err := scenario.DemoOfSize(ctx, client, 2, 2); err != nil {
			t.Fatal(err)
		}
		watcher, err := scenario.WatchPDBs(ctx, client, demo)
		if err != nil {
			t.Fatal(err)
		}
		env := cleanAWSEnv()
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade check demo --target-label eks.amazonaws.com/nodegroup-image=ami-new")
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade check demo --target-label eks.amazonaws.com/nodegroup-image=ami-new -n demo -o json")
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan -l eks.amazonaws.com/nodegroup=demo --provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new --max-unavailable 25%")
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade run demo --provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new --yes")
		assertDemoImages(t, ctx, map[string]int{"ami-new": 2})
		assertUntouched(t, ctx, groupKey, demo)
		if err := scenario.WaitAppsReady(ctx, client, demo); err != nil {
			t.Fatal(err)
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade version")
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade version -o json")

		// The hooks page's run, on two more outdated nodes: each hook ran
		// for each node, with its environment.
		if _, _, err := scenario.CreateNodeGroup(ctx, client, scenario.NodeGroup{
			LabelKey: groupKey, Name: demo, NamePrefix: "demo-hooks", Zones: []string{"sim-a", "sim-b"},
			Outdated: 2, OldLabels: map[string]string{imageKey: "ami-old"},
		}); err != nil {
			t.Fatal(err)
		}
		r := ex.run(t, env, nodeupgrade.ExitOK, hooksExample)
		for _, want := range []string{"demo-hooks-old-0 (sim-a) leaves in batch ", "demo-hooks-old-1 (sim-b) leaves in batch ", "demo-hooks-old-0 drained", "demo-hooks-old-1 drained"} {
			if !strings.Contains(r.stdout+r.stderr, want) {
				t.Errorf("the hooks' output lacks %q:\n%s", want, r)
			}
		}
		assertDemoImages(t, ctx, map[string]int{"ami-new": 2})
		assertUntouched(t, ctx, groupKey, demo)
		assertNoViolations(t, watcher.Stop())
	})
	if t.Failed() {
		return
	}
	clearLabelDemo(t, ctx)

	t.Run("fleet path", func(t *testing.T) { runFleetExamples(t, ctx, ex) })
	if t.Failed() {
		return
	}
	clearLabelDemo(t, ctx)

	t.Run("AWS path", func(t *testing.T) {
		srv, err := awsfake.StartDemo(ctx, client, awsfake.DemoOptions{Size: 3, LaunchDelay: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		spec, _ := srv.Group(demo)
		original := spec.GroupSpec
		watcher, err := scenario.WatchPDBs(ctx, client, demo)
		if err != nil {
			t.Fatal(err)
		}
		env := append(cleanAWSEnv(), "AWS_ENDPOINT_URL="+srv.URL,
			"AWS_ACCESS_KEY_ID=demo", "AWS_SECRET_ACCESS_KEY=demo", "AWS_REGION="+awsfake.DemoRegion)
		tool := func(t *testing.T, args ...string) result {
			t.Helper()
			return runCmd(t, setupCmd(env, args...))
		}
		// inService checks the group after a run or an abort ended: sizes
		// of before, no taint or cordon, every Deployment Ready.
		inService := func(t *testing.T, images map[string]int) {
			t.Helper()
			if err := srv.WaitStable(ctx, demo); err != nil {
				t.Fatal(err)
			}
			if g, _ := srv.Group(demo); g.Min != original.Min || g.Desired != original.Desired || g.Max != original.Max {
				t.Errorf("sizes min/desired/max %d/%d/%d, want %d/%d/%d", g.Min, g.Desired, g.Max, original.Min, original.Desired, original.Max)
			}
			assertBackInService(t, demo, tool, false)
			if images != nil {
				assertDemoImages(t, ctx, images)
			}
		}

		// Reading: the audits, the plans, a dry run, every group's status.
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade check demo --ami ami-new")
		ex.run(t, env, nodeupgrade.ExitOK, `kubectl nodeupgrade check "$ng" --ami "$ami"`)
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan demo --ami ami-new --strategy surge --max-surge 2")
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan demo --ami ami-new --strategy blue-green --batch-node-count 2 --node-pool-soak 30m")
		ex.run(t, env, nodeupgrade.ExitOK, `kubectl nodeupgrade plan "$ng" --ami "$ami" --max-unavailable 2 -o json > plan.json`)
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan demo --ami ami-new --max-unavailable 2")
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade run demo --ami ami-new --dry-run")
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade status -A")
		ex.run(t, env, nodeupgrade.ExitOK, `kubectl nodeupgrade plan demo --ami ami-new --window "Sat-Sun 22:00-06:00 Europe/Berlin" --window "Mon-Fri 01:00-04:00 Europe/Berlin"`)
		ex.run(t, env, nodeupgrade.ExitOK, `kubectl nodeupgrade plan demo --ami ami-new --window "daily 22:00-02:00 UTC" --not-after 2099-12-31`)
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan demo --ami ami-new --seed 7 -o json > plan.json")

		// The reviewed plan runs; cancel pauses it after its first batch,
		// resume finishes it, followed by status -w.
		run := startBackground(t, ex.cmd(t, env, "kubectl nodeupgrade run --plan-file plan.json --yes"))
		if !run.waitFor("cordoned") {
			t.Fatalf("the run from plan.json never drained:\n%s", run.output())
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade cancel demo")
		if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitPaused {
			t.Fatalf("cancelled run: want exit %d, got %d:\n%s", nodeupgrade.ExitPaused, code, out)
		}
		resume := startBackground(t, ex.cmd(t, env, "kubectl nodeupgrade resume demo --yes"))
		if !resume.waitFor("cordoned") { // live again: -w follows it
			t.Fatalf("resume never drained:\n%s", resume.output())
		}
		// The resumed run is running, not still noted as paused.
		if r := tool(t, "status", demo); r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "running") || strings.Contains(r.stdout, "paused") {
			t.Errorf("status of the resumed run: %s", r)
		}
		follow := startBackground(t, ex.cmd(t, env, "kubectl nodeupgrade status demo -w"))
		if code, out := resume.wait(t, 10*time.Minute); code != nodeupgrade.ExitOK {
			t.Fatalf("resume: want exit 0, got %d:\n%s", code, out)
		}
		// -w exits as the run did.
		if code, out := follow.wait(t, time.Minute); code != nodeupgrade.ExitOK || !strings.Contains(out, "finished") {
			t.Errorf("status -w: want exit 0 once the run finished, got %d:\n%s", code, out)
		}
		inService(t, map[string]int{"ami-new": 3})
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade status demo")
		ex.run(t, env, nodeupgrade.ExitOK, `kubectl nodeupgrade status "$ng"`)
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade status demo -o yaml")
		if r := ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade report demo"); !strings.Contains(r.stdout, "finished") {
			t.Errorf("report of the finished run does not say it finished: %s", r)
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade report demo --runs 0 -o json")
		ex.run(t, env, nodeupgrade.ExitOK, `kubectl nodeupgrade status -o jsonpath='{range .items[?(@.status!="finished")]}{.nodeGroup}{"\n"}{end}'`)

		// abort after the run was killed mid-batch.
		killed, out := runAndKill(t, setupCmd(env, "run", demo, "--ami", "ami-old", "--post-drain-wait", "0s", "--yes"), killPoint{marker: "draining"})
		if !killed {
			t.Fatalf("the run ended before it was killed:\n%s", out)
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade abort demo")
		// abort removes the run's new nodes first: the group is as before.
		inService(t, map[string]int{"ami-new": 3})

		// abort --wait stops a live run first.
		live := startBackground(t, setupCmd(env, "run", demo, "--ami", "ami-old", "--post-drain-wait", postDrainWait, "--yes"))
		if !live.waitFor("cordoned") {
			t.Fatalf("the run never drained:\n%s", live.output())
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade abort demo --wait")
		if code, out := live.wait(t, 2*time.Minute); code != nodeupgrade.ExitPaused {
			t.Errorf("the run abort --wait stopped: want exit %d, got %d:\n%s", nodeupgrade.ExitPaused, code, out)
		}
		inService(t, map[string]int{"ami-new": 3})

		// The first run example, back from ami-old: cancelled after its
		// first batch, then rolled back. abort put the group back on
		// ami-new: one batch of all 3 nodes takes every worker pod.
		if r := tool(t, "run", demo, "--ami", "ami-old", "--max-unavailable", "3", "--ignore-check", "same-batch", "--post-drain-wait", "0s", "--yes"); r.code != nodeupgrade.ExitOK {
			t.Fatalf("the run back to ami-old after abort: %s", r)
		}
		inService(t, map[string]int{"ami-old": 3})
		run = startBackground(t, ex.cmd(t, env, "kubectl nodeupgrade run demo --ami ami-new --max-unavailable 2 --yes"))
		if !run.waitFor("cordoned") {
			t.Fatalf("the run never drained:\n%s", run.output())
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade cancel demo")
		if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitPaused {
			t.Fatalf("cancelled run: want exit %d, got %d:\n%s", nodeupgrade.ExitPaused, code, out)
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade rollback demo --yes")
		inService(t, map[string]int{"ami-old": 3})

		// The scripting page's script upgrades the group.
		r := ex.run(t, env, nodeupgrade.ExitOK, scriptingExample)
		if !strings.Contains(r.stdout, "demo upgraded") {
			t.Errorf("the script did not say it upgraded demo: %s", r)
		}
		inService(t, map[string]int{"ami-new": 3})

		// complete ends a blue/green soak (back to ami-old).
		bg := startBackground(t, setupCmd(env, "run", demo, "--strategy", "blue-green", "--ami", "ami-old", "--node-pool-soak", "1h", "--post-drain-wait", "0s", "--yes"))
		if !bg.waitFor("node pool soak: ") {
			t.Fatalf("the blue/green run never soaked:\n%s", bg.output())
		}
		ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade complete demo")
		if code, out := bg.wait(t, 5*time.Minute); code != nodeupgrade.ExitOK {
			t.Fatalf("the blue/green run after complete: want exit 0, got %d:\n%s", code, out)
		}
		assertUntouched(t, ctx, groupKey, demo)
		assertDemoImages(t, ctx, map[string]int{"ami-old": 3})
		if err := scenario.WaitAppsReady(ctx, client, demo); err != nil {
			t.Fatal(err)
		}
		assertNoViolations(t, watcher.Stop())

		// The managed node group page's plan, on the demo's managed group.
		if err := srv.StartManagedDemo(ctx); err != nil {
			t.Fatal(err)
		}
		r = ex.run(t, env, nodeupgrade.ExitOK, "kubectl nodeupgrade plan demo-managed --kubernetes-version 1.31 --max-unavailable 2")
		if !strings.Contains(r.stdout, "EKS managed node group") {
			t.Errorf("the managed group's plan does not say EKS runs the update: %s", r)
		}
	})
	if t.Failed() {
		return
	}
	t.Run("GKE path", func(t *testing.T) { gkeDemoExamples(t, ctx, ex) })
	if t.Failed() {
		return
	}
	clearLabelDemo(t, ctx) // the AWS demo's nodes and workloads
	t.Run("GCE path", func(t *testing.T) { runGCEExamples(t, ctx, ex) })
	if t.Failed() {
		return
	}
	if missed := ex.notRun(); len(missed) > 0 {
		t.Errorf("%d --help examples were never run:\n%s", len(missed), strings.Join(missed, "\n"))
	}
}

// The docs' examples that take more than their line to name: the run of
// docs/hooks.md, and the script of docs/scripting.md (by its first line).
const (
	hooksExample     = `kubectl nodeupgrade run demo --provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new --yes --pre-drain-hook 'echo "$NODE ($ZONE) leaves in batch $BATCH"' --post-drain-hook 'test -s "$KUBECONFIG" && echo "$NODE drained"'`
	scriptingExample = "# Upgrade node group $ng to image $ami: audit, plan, run exactly that plan"
)

// setupCmd runs the plugin itself to bring the demo into the state an
// example is for.
func setupCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(args, "--kubeconfig", sim.Kubeconfig)...)
	cmd.Env = env
	return cmd
}

// assertDemoImages wants the demo's nodes to run these images, by count.
func assertDemoImages(t *testing.T, ctx context.Context, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, n := range groupNodes(t, ctx, groupKey, "demo") {
		got[n.Labels[imageKey]]++
	}
	if !maps.Equal(got, want) {
		t.Errorf("demo nodes by image %v, want %v", got, want)
	}
}

// clearLabelDemo removes the label demo's nodes and workloads, so the AWS
// demo's group of the same name starts as `simcluster up --aws-demo` does.
func clearLabelDemo(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, n := range groupNodes(t, ctx, groupKey, "demo") {
		if err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	apps := client.AppsV1().Deployments("demo")
	pdbs := client.PolicyV1().PodDisruptionBudgets("demo")
	for _, name := range []string{"web", "api", "worker"} {
		if err := apps.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_ = pdbs.Delete(ctx, name, metav1.DeleteOptions{}) // worker has none
	}
	// The pods of deleted nodes would wait for the pod garbage collector.
	if err := client.CoreV1().Pods("demo").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}
