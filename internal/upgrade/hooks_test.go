package upgrade

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// logHook is a hook command that appends its name and environment to the
// file log as one line.
func logHook(log string) string {
	return fmt.Sprintf(`echo "$HOOK node=$NODE group=$NODE_GROUP zone=$ZONE batch=$BATCH provider=$PROVIDER instance=$INSTANCE_ID pid=$PROVIDER_ID kubeconfig=$KUBECONFIG" >> %q`, log)
}

// hookLog is the lines the hooks appended to log.
func hookLog(t *testing.T, log string) []string {
	t.Helper()
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// hookCluster is node group "ng" on provider none: two outdated nodes, each
// running a pod, and a current one with room for them.
func hookCluster(mutate ...func(*corev1.Node)) *testClient {
	return newTestClient(
		imageNode("old-1", "z1", "old", mutate...), imageNode("old-2", "z2", "old"), imageNode("new-1", "z1", "new"),
		appPod("pod-old-1", "old-1", "500m"), appPod("pod-old-2", "old-2", "500m"))
}

func hookRun(t *testing.T, client *testClient, hooks plan.Hooks, rec *state.Record) (Config, *plan.Plan) {
	t.Helper()
	p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}, Hooks: hooks})
	if rec == nil {
		rec = &state.Record{}
	}
	return Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: true}, Drain: drainOpts(), Events: NewRecorder(client, nil), Record: rec, Kubeconfig: "/hooks/kubeconfig"}, p
}

func TestCommandHooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		hooks func(dir string) plan.Hooks
		// wantErr is what the failure's error says; "" for a run that
		// finishes.
		wantErr  []string
		wantHook string // the failed hook
		// wantLog are the lines of the log, with <first> and <second> for
		// the nodes of batch 1 and 2.
		wantLog []string
		// wantLeft are the nodes whose pod is still there.
		wantPodsLeft int
		// settle is how long what a killed hook started would take to
		// write to the log.
		settle time.Duration
	}{
		{name: "each node's hooks in order, batch by batch, with its environment",
			hooks: func(dir string) plan.Hooks {
				log := filepath.Join(dir, "log")
				return plan.Hooks{PreDrain: logHook(log), PostDrain: logHook(log), PreTerminate: logHook(log)}
			},
			wantLog: []string{
				"pre-drain node=<first> group=ng zone=<zone1> batch=1 provider=none instance= pid= kubeconfig=/hooks/kubeconfig",
				"post-drain node=<first> group=ng zone=<zone1> batch=1 provider=none instance= pid= kubeconfig=/hooks/kubeconfig",
				"pre-terminate node=<first> group=ng zone=<zone1> batch=1 provider=none instance= pid= kubeconfig=/hooks/kubeconfig",
				"pre-drain node=<second> group=ng zone=<zone2> batch=2 provider=none instance= pid= kubeconfig=/hooks/kubeconfig",
				"post-drain node=<second> group=ng zone=<zone2> batch=2 provider=none instance= pid= kubeconfig=/hooks/kubeconfig",
				"pre-terminate node=<second> group=ng zone=<zone2> batch=2 provider=none instance= pid= kubeconfig=/hooks/kubeconfig",
			}},
		{name: "a failing pre-drain hook stops the run before the drain, with its last output",
			hooks: func(dir string) plan.Hooks {
				return plan.Hooks{PreDrain: "echo one; echo two; echo three >&2; echo four; exit 3", PostDrain: logHook(filepath.Join(dir, "log"))}
			},
			wantHook: plan.HookPreDrain, wantPodsLeft: 2,
			wantErr: []string{`error when running the pre-drain hook on node "<first>": exit status 3 (last output: two | three | four)`, `"kubectl nodeupgrade abort"`}},
		{name: "a failing post-drain hook stops the run before the removal",
			hooks: func(dir string) plan.Hooks {
				return plan.Hooks{PostDrain: "exit 1", PreTerminate: logHook(filepath.Join(dir, "log"))}
			},
			wantHook: plan.HookPostDrain, wantPodsLeft: 1,
			wantErr: []string{`post-drain hook on node "<first>": exit status 1 (no output)`}},
		{name: "a hook past --hook-timeout is killed with what it started",
			hooks: func(dir string) plan.Hooks {
				late := filepath.Join(dir, "log")
				return plan.Hooks{PreTerminate: fmt.Sprintf("(sleep 3; echo late >> %q) & echo started; sleep 30", late), Timeout: plan.Duration(1500 * time.Millisecond)}
			},
			wantHook: plan.HookPreTerminate, wantPodsLeft: 1, settle: 3500 * time.Millisecond,
			// 1.5s, not less: a loaded machine took over 500ms to echo
			wantErr: []string{`pre-terminate hook on node "<first>": timed out after 1.5s, killed (last output: started)`, "raise --hook-timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			client := hookCluster()
			cfg, p := hookRun(t, client, tc.hooks(dir), nil)
			got := runEngine(t, cfg, nil)
			first, second := p.Batches[0].Nodes[0], p.Batches[1].Nodes[0]
			names := strings.NewReplacer("<first>", first.Name, "<second>", second.Name, "<zone1>", first.Zone, "<zone2>", second.Zone)
			var failure *HookFailure
			switch {
			case tc.wantErr == nil && got.err != nil:
				t.Fatalf("run: %v\n%s", got.err, got.out)
			case tc.wantErr != nil && !errors.As(got.err, &failure):
				t.Fatalf("run ended with %v, want a HookFailure\n%s", got.err, got.out)
			case tc.wantErr != nil:
				if failure.Hook != tc.wantHook || failure.Node != first.Name {
					t.Errorf("failure of hook %q on %q, want %q on %q", failure.Hook, failure.Node, tc.wantHook, first.Name)
				}
				for _, want := range tc.wantErr {
					if want = names.Replace(want); !strings.Contains(got.err.Error(), want) {
						t.Errorf("error %q lacks %q", got.err, want)
					}
				}
				if strings.Contains(got.err.Error(), "\n") {
					t.Errorf("error is not one line: %q", got.err)
				}
				// The run's record says which hooks succeeded, nothing else.
				if done := cfg.Record.HooksDone[first.Name]; slices.Contains(done, tc.wantHook) {
					t.Errorf("the failed hook is recorded done: %v", cfg.Record.HooksDone)
				}
			}
			time.Sleep(tc.settle)
			var want []string
			for _, l := range tc.wantLog {
				want = append(want, names.Replace(l))
			}
			if log := hookLog(t, filepath.Join(dir, "log")); !slices.Equal(log, want) {
				t.Errorf("hooks logged\n  %s\nwant\n  %s", strings.Join(log, "\n  "), strings.Join(want, "\n  "))
			}
			if left := len(client.podNames(t)); left != tc.wantPodsLeft {
				t.Errorf("%d pods left, want %d", left, tc.wantPodsLeft)
			}
			if tc.wantErr == nil {
				if !strings.Contains(got.out, fmt.Sprintf("node %q: pre-drain hook succeeded", first.Name)) {
					t.Errorf("output lacks the hook's success:\n%s", got.out)
				}
				for _, n := range []string{first.Name, second.Name} {
					if done := cfg.Record.HooksDone[n]; !slices.Equal(done, []string{plan.HookPreDrain, plan.HookPostDrain, plan.HookPreTerminate}) {
						t.Errorf("record of node %q: hooks done %v", n, done)
					}
				}
			}
		})
	}
}

// A run stopped by a failing hook is finished by a re-run that repeats
// only the hooks not recorded done.
func TestHooksRerunSkipsDone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, marker := filepath.Join(dir, "log"), filepath.Join(dir, "failed-once")
	// The pre-terminate hook fails the first time it runs.
	hooks := plan.Hooks{
		PreDrain:     logHook(log),
		PostDrain:    logHook(log),
		PreTerminate: fmt.Sprintf(`if [ ! -e %q ]; then touch %q; echo "failing once"; exit 1; fi; %s`, marker, marker, logHook(log)),
	}
	client := hookCluster()
	rec := &state.Record{}
	var saved []string
	cfg, p := hookRun(t, client, hooks, rec)
	cfg.Save = func(context.Context) error { saved = append(saved, fmt.Sprint(rec.HooksDone)); return nil }
	first := p.Batches[0].Nodes[0].Name
	got := runEngine(t, cfg, nil)
	var failure *HookFailure
	if !errors.As(got.err, &failure) || failure.Hook != plan.HookPreTerminate {
		t.Fatalf("first run ended with %v, want the pre-terminate hook's failure\n%s", got.err, got.out)
	}
	if want := fmt.Sprint(map[string][]string{first: {plan.HookPreDrain, plan.HookPostDrain}}); len(saved) == 0 || saved[len(saved)-1] != want {
		t.Errorf("record saved %v, last want %s", saved, want)
	}

	// The re-run plans again: both nodes still outdated.
	cfg, _ = hookRun(t, client, hooks, rec)
	cfg.Save = func(context.Context) error { return nil }
	got = runEngine(t, cfg, nil)
	if got.err != nil {
		t.Fatalf("re-run: %v\n%s", got.err, got.out)
	}
	if !strings.Contains(got.out, fmt.Sprintf("node %q: pre-drain hook: recorded done, not run again", first)) {
		t.Errorf("re-run output does not say the done hook was skipped:\n%s", got.out)
	}
	count := map[string]int{}
	for _, l := range hookLog(t, log) {
		f := strings.Fields(l)
		count[f[0]+" "+f[1]]++
	}
	for _, n := range []string{"old-1", "old-2"} {
		for _, h := range []string{plan.HookPreDrain, plan.HookPostDrain, plan.HookPreTerminate} {
			if c := count[h+" node="+n]; c != 1 {
				t.Errorf("%s hook of %q ran %d times, want once", h, n, c)
			}
		}
	}
	if left := client.podNames(t); len(left) != 0 {
		t.Errorf("pods left: %v", left)
	}
}

// An annotation hook holds a node's drain (removal) until its owner takes
// it off; with no owner, the run stops at --hook-timeout naming it.
func TestAnnotationHooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		key     string
		release bool
		wantErr string
	}{
		{name: "pre-drain annotation released by its owner", key: plan.PreDrainHookPrefix + "lb", release: true},
		{name: "pre-terminate annotation released by its owner", key: plan.PreTerminateHookPrefix + "backup", release: true},
		{name: "pre-drain annotation left on stops the run", key: plan.PreDrainHookPrefix + "lb",
			wantErr: `cannot drain node "old-1": pre-drain annotation hooks still on it after 1s (--hook-timeout): "pre-drain.hook.nodeupgrade.dev/lb" (owner "team-net")`},
		{name: "pre-terminate annotation left on stops the run", key: plan.PreTerminateHookPrefix + "backup",
			wantErr: `cannot remove node "old-1": pre-terminate annotation hooks still on it after 1s (--hook-timeout): "pre-terminate.hook.nodeupgrade.dev/backup" (owner "team-net")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := hookCluster(func(n *corev1.Node) { n.Annotations = map[string]string{tc.key: "team-net"} })
			timeout := time.Second
			if tc.release {
				timeout = 30 * time.Second
			}
			cfg, p := hookRun(t, client, plan.Hooks{Timeout: plan.Duration(timeout)}, nil)
			if !slices.ContainsFunc(p.HookedNodes, func(h plan.HookedNode) bool { return h.Node == "old-1" }) {
				t.Errorf("plan lists hooked nodes %v, want old-1", p.HookedNodes)
			}
			out := &lockedBuffer{}
			cfg.Out = out
			// What the node had gone through when its owner released it.
			released := make(chan string, 1)
			if tc.release {
				go func() {
					for !strings.Contains(out.String(), "annotation hooks to be taken off") {
						if strings.Contains(out.String(), "upgrade of 2 nodes finished") {
							return
						}
						time.Sleep(20 * time.Millisecond)
					}
					_, err := client.CoreV1().Nodes().Get(context.Background(), "old-1", metav1.GetOptions{})
					pods := fmt.Sprintf("pod evicted %t, node exists %t", slices.Contains(client.evictedPods(), "pod-old-1"), err == nil)
					patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, tc.key)
					if _, err := client.CoreV1().Nodes().Patch(context.Background(), "old-1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
						t.Error(err)
					}
					released <- pods
				}()
			}
			got := runEngine(t, cfg, nil)
			if tc.wantErr != "" {
				var failure *HookFailure
				if !errors.As(got.err, &failure) || !strings.Contains(got.err.Error(), tc.wantErr) {
					t.Fatalf("run ended with %v, want %q\n%s", got.err, tc.wantErr, got.out)
				}
				return
			}
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			var seen string
			select {
			case seen = <-released:
			case <-time.After(5 * time.Second):
				t.Fatalf("the run finished without waiting for the annotation hook\n%s", got.out)
			}
			wantSeen := "pod evicted false, node exists true"
			if strings.HasPrefix(tc.key, plan.PreTerminateHookPrefix) {
				wantSeen = "pod evicted true, node exists true"
			}
			if seen != wantSeen {
				t.Errorf("when the annotation was taken off: %s, want %s", seen, wantSeen)
			}
			if want := fmt.Sprintf(`"%s" (owner "team-net")`, tc.key); !strings.Contains(got.out, want) {
				t.Errorf("output does not name the hook waited for (%s):\n%s", want, got.out)
			}
		})
	}
}

// On a cloud group the scale-down's nodes get their hooks too, outside
// any batch and with their instance, and every replaced node gets each
// hook once.
func TestHooksOnACloudGroup(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "log")
	client, group := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
	p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup(),
		Hooks: plan.Hooks{PreDrain: logHook(log), PostDrain: logHook(log), PreTerminate: logHook(log)}})
	cfg := cloudRun(p, client, group)
	cfg.Drain = drainOpts()
	got := runEngine(t, cfg, nil, group)
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	runs := map[string][]string{} // node -> hooks in order
	for _, l := range hookLog(t, log) {
		f := strings.Fields(l)
		node := strings.TrimPrefix(f[1], "node=")
		runs[node] = append(runs[node], f[0])
		batch, instance := f[4], f[6]
		switch outdated := slices.Contains(p.OutdatedNames(), node); {
		case outdated && (batch == "batch=" || instance != "instance=i-"+node):
			t.Errorf("hook of outdated node %q: %s, want its batch and instance", node, l)
		case !outdated && (batch != "batch=" || instance != "instance=i-"+node || f[5] != "provider=fake"):
			t.Errorf("hook of the scale-down's node %q: %s, want no batch and its instance", node, l)
		}
	}
	shrunk := group.callsLike("Shrink")
	if len(runs) != len(p.OutdatedNames())+len(shrunk) {
		t.Errorf("hooks ran for %d nodes, want the %d outdated and the %d the scale-down removed", len(runs), len(p.OutdatedNames()), len(shrunk))
	}
	for node, hooks := range runs {
		if !slices.Equal(hooks, []string{plan.HookPreDrain, plan.HookPostDrain, plan.HookPreTerminate}) {
			t.Errorf("hooks of node %q ran %v, want each once, in order", node, hooks)
		}
	}
}

// Blue/green: each blue node gets each hook once, whether a batch drained
// it or the deletion of blue did, and its pre-terminate hook before blue is
// deleted.
func TestHooksOnBlueGreen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		batchNodes int
		// drainedBeforeSoak: the batches drained blue, so its post-drain
		// hooks ran before the soak.
		drainedBeforeSoak bool
	}{
		{name: "blue drained in batches", batchNodes: 2, drainedBeforeSoak: true},
		{name: "batch size 0: blue drained when deleted", batchNodes: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, got, runs := runBlueGreenWithHooks(t, tc.batchNodes, state.RequestComplete)
			for _, n := range []string{"old-a1", "old-a2", "old-b1"} {
				if !slices.Equal(runs[n], []string{plan.HookPreDrain, plan.HookPostDrain, plan.HookPreTerminate}) {
					t.Errorf("hooks of blue node %q ran %v, want each once, in order", n, runs[n])
				}
			}
			if len(runs) != 3 {
				t.Errorf("hooks ran for %v, want the 3 blue nodes", runs)
			}
			soak := strings.Index(got.out, "node pool soak: ")
			if post := strings.LastIndex(got.out, "post-drain hook succeeded"); soak < 0 || (post < soak) != tc.drainedBeforeSoak {
				t.Errorf("last post-drain hook before the soak: %t, want %t\n%s", post < soak, tc.drainedBeforeSoak, got.out)
			}
			// Blue's deletion came after every pre-terminate hook.
			calls := r.blue.callsNow()
			if !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "DeleteGroup asg") }) {
				t.Errorf("blue not deleted: %v", calls)
			}
			if i := strings.LastIndex(got.out, "pre-terminate hook succeeded"); i < 0 || i > strings.Index(got.out, "node group now runs in") {
				t.Errorf("blue was deleted before its pre-terminate hooks:\n%s", got.out)
			}
		})
	}
}

// TestHooksOnBlueGreenRollback: a rollback in the soak drains green, which
// the run made, and deletes it; green's nodes get each hook once, in order,
// and blue's keep only the drain hooks of their batches.
func TestHooksOnBlueGreenRollback(t *testing.T) {
	t.Parallel()
	_, got, runs := runBlueGreenWithHooks(t, 2, state.RequestRollback)
	blue := []string{"old-a1", "old-a2", "old-b1"}
	for _, n := range blue {
		if !slices.Equal(runs[n], []string{plan.HookPreDrain, plan.HookPostDrain}) {
			t.Errorf("hooks of blue node %q ran %v, want its batch's drain hooks only", n, runs[n])
		}
	}
	green := 0
	for n, hooks := range runs {
		if slices.Contains(blue, n) {
			continue
		}
		green++
		if !slices.Equal(hooks, []string{plan.HookPreDrain, plan.HookPostDrain, plan.HookPreTerminate}) {
			t.Errorf("hooks of green node %q ran %v, want each once, in order", n, hooks)
		}
	}
	if green == 0 {
		t.Errorf("no hook ran for green's nodes: %v\n%s", runs, got.out)
	}
}

// runBlueGreenWithHooks runs blue/green with every command hook logging,
// batches of batchNodes, and the request sent in the node pool soak; it
// returns the hooks that ran, by node, in order.
func runBlueGreenWithHooks(t *testing.T, batchNodes int, inSoak string) (*bgRun, outcome, map[string][]string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "log")
	r := newBGRun(t)
	r.in.BatchNodes = batchNodes
	r.plan = buildPlan(t, r.client, plan.Input{Strategy: "blue-green", BlueGreen: r.in, Cloud: r.blue.cloudGroup(),
		Hooks: plan.Hooks{PreDrain: logHook(log), PostDrain: logHook(log), PreTerminate: logHook(log)}})
	r.cfg = cloudRun(r.plan, r.client, r.blue)
	r.cfg.Drain, r.cfg.Control = drainOpts(), r.control
	got := r.run(func(s plan.State) {
		if s.Phase == plan.PhaseSoak {
			r.control.sendWhenWatched(inSoak)
		}
	})
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	runs := map[string][]string{}
	for _, l := range hookLog(t, log) {
		f := strings.Fields(l)
		node := strings.TrimPrefix(f[1], "node=")
		runs[node] = append(runs[node], f[0])
	}
	return r, got, runs
}
