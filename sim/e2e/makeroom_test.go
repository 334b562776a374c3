package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// makeRoomApps are issue 52's workloads: a Deployment of one replica
// behind a Service, one of three with minAvailable 3, one an HPA scales at
// minReplicas 2 (maxReplicas 3, so that the surge raises it too), and a
// StatefulSet, which --make-room names and leaves.
var makeRoomApps = []scenario.App{
	{Name: "solo", Replicas: 1},
	{Name: "quorum", Replicas: 3, MinAvailable: num(3)},
	{Name: "scaled", Replicas: 2},
}

// setupMakeRoom makes a group of two outdated nodes and two current ones,
// the workloads all on the outdated ones (the current ones cordoned
// meanwhile), so that the one batch takes every pod of each.
func setupMakeRoom(t *testing.T, name string, podAnnotations map[string]string) {
	t.Helper()
	setupMakeRoomApps(t, name, makeRoomApps, podAnnotations)
}

func setupMakeRoomApps(t *testing.T, name string, makeRoomApps []scenario.App, podAnnotations map[string]string) {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	_, current := setupGroup(t, name, 2, 2)
	setCordon(t, ctx, current, true)
	apps := make([]scenario.App, len(makeRoomApps))
	for i, a := range makeRoomApps {
		a.PodAnnotations = podAnnotations
		apps[i] = a
	}
	createPinnedApps(t, ctx, name, apps)
	must(t, createStatefulSet(ctx, name))
	_, err := client.CoreV1().Services(name).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "solo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{scenario.AppLabel: "solo"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	must(t, err)
	_, err = client.AutoscalingV2().HorizontalPodAutoscalers(name).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "scaled"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "scaled"},
			MinReplicas: new(int32(2)), MaxReplicas: 3}}, metav1.CreateOptions{})
	must(t, err)
	setCordon(t, ctx, current, false)
}

func createStatefulSet(ctx context.Context, name string) error {
	lbl := map[string]string{scenario.AppLabel: "db"}
	_, err := client.AppsV1().StatefulSets(name).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: lbl}, ServiceName: "db",
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{
				NodeSelector: map[string]string{groupKey: name}, TerminationGracePeriodSeconds: new(int64(1)),
				Containers: []corev1.Container{{Name: "db", Image: scenario.Image}}}}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return waitPodsReady(ctx, name, "db", 1)
}

func waitPodsReady(ctx context.Context, ns, app string, want int) error {
	for {
		if n, err := readyPods(ctx, ns, app); err == nil && n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s: fewer than %d Ready pods: %w", ns, app, want, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func setCordon(t *testing.T, ctx context.Context, nodes []string, on bool) {
	t.Helper()
	for _, n := range nodes {
		_, err := client.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"unschedulable":%v}}`, on), metav1.PatchOptions{})
		must(t, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// readyPods counts app's Ready pods that are not terminating.
func readyPods(ctx context.Context, ns, app string) (int, error) {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{scenario.AppLabel: app}.String()})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && podutils.IsPodReady(p) {
			n++
		}
	}
	return n, nil
}

// workloadSpecs are the specs of the namespace's Deployments, HPAs and
// PDBs, as JSON by kind/name: what --make-room must leave as it found.
func workloadSpecs(t *testing.T, ns string) map[string]string {
	t.Helper()
	ctx := testContext(t, time.Minute)
	out := map[string]string{}
	add := func(key string, spec any) {
		b, err := json.Marshal(spec)
		must(t, err)
		out[key] = string(b)
	}
	deps, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, d := range deps.Items {
		add("Deployment/"+d.Name, d.Spec)
	}
	hpas, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, h := range hpas.Items {
		add("HorizontalPodAutoscaler/"+h.Name, h.Spec)
	}
	pdbs, err := client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, p := range pdbs.Items {
		add("PodDisruptionBudget/"+p.Name, p.Spec)
	}
	sts, err := client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	must(t, err)
	for _, s := range sts.Items {
		add("StatefulSet/"+s.Name, s.Spec)
	}
	return out
}

func assertSpecsAsBefore(t *testing.T, ns string, before map[string]string) {
	t.Helper()
	after := workloadSpecs(t, ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed:\nbefore %s\nafter  %s", k, v, after[k])
		}
	}
}

// readySampler samples every 200 ms the Ready pods of each app and keeps
// the fewest seen.
type readySampler struct {
	mu     sync.Mutex
	fewest map[string]int
	stop   context.CancelFunc
	done   chan struct{}
}

func sampleReady(ctx context.Context, ns string, apps []scenario.App) *readySampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &readySampler{fewest: map[string]int{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			for _, a := range apps {
				if n, err := readyPods(ctx, ns, a.Name); err == nil {
					s.mu.Lock()
					if m, ok := s.fewest[a.Name]; !ok || n < m {
						s.fewest[a.Name] = n
					}
					s.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *readySampler) Stop() map[string]int {
	s.stop()
	<-s.done
	return s.fewest
}

// TestMakeRoom: plan --make-room surges the three Deployments and names
// the StatefulSet; run --make-room finishes with no PDB violation while
// a 200 ms sampler never sees a Deployment's Ready pods below their count
// before the run, and leaves every Deployment, HPA and PDB as it found it
// (issue 52).
func TestMakeRoom(t *testing.T) {
	t.Parallel()
	const name = "makeroom"
	start := time.Now()
	setupMakeRoom(t, name, nil)
	before := workloadSpecs(t, name)
	args := []string{name, "--target-label", target, "--max-unavailable", "2", "--post-drain-wait", "0s", "--make-room"}
	pr := plugin(t, append([]string{"plan"}, append(args, "-o", "json")...)...)
	var p plan.Plan
	if err := json.Unmarshal([]byte(pr.stdout), &p); err != nil || len(p.MakeRoom) != 1 {
		t.Fatalf("plan --make-room -o json: %v %s", err, pr)
	}
	var surged []string
	for _, s := range p.MakeRoom[0].Surges {
		surged = append(surged, fmt.Sprintf("%s+%d", s.Name, s.Extra))
	}
	if got := strings.Join(surged, ","); got != "quorum+3,scaled+2,solo+1" {
		t.Errorf("plan surges %s, want quorum+3,scaled+2,solo+1", got)
	}
	if u := p.MakeRoom[0].Untouched; len(u) != 1 || u[0].Kind != "StatefulSet" || u[0].Name != "db" {
		t.Errorf("plan leaves %+v untouched, want StatefulSet db", u)
	}
	ctx := testContext(t, 5*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	must(t, err)
	sampler := sampleReady(ctx, name, makeRoomApps)
	runStart := time.Now()
	r := plugin(t, append(append([]string{"run"}, args...), "--ignore-check", "single-replica", "--yes")...)
	fewest := sampler.Stop()
	t.Logf("run --make-room took %s:\n%s", time.Since(runStart).Round(time.Millisecond), r.stdout)
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run --make-room: %s", r)
	}
	assertNoViolations(t, watcher.Stop())
	for _, a := range makeRoomApps {
		if fewest[a.Name] < int(a.Replicas) {
			t.Errorf("Deployment %s had %d Ready pods at the least, fewer than its %d before the run", a.Name, fewest[a.Name], a.Replicas)
		}
	}
	assertUpgraded(t, name, 2)
	assertSpecsAsBefore(t, name, before)
	t.Logf("TestMakeRoom took %s", time.Since(start).Round(time.Millisecond))
}

// TestMakeRoomKilled: a run killed while its surges are up (the extra
// pods slow to be Ready), then abort, or the same run again: either way
// every Deployment, HPA and PDB is back as before the run; the run again
// also finishes the upgrade.
func TestMakeRoomKilled(t *testing.T) {
	t.Parallel()
	for _, then := range []string{"abort", "run"} {
		t.Run("then "+then, func(t *testing.T) {
			t.Parallel()
			name := "makeroom-kill-" + then
			start := time.Now()
			setupMakeRoom(t, name, map[string]string{scenario.ReadyDelayAnnotation: "5s"})
			before := workloadSpecs(t, name)
			args := []string{"run", name, "--target-label", target, "--max-unavailable", "2", "--post-drain-wait", "0s", "--make-room", "--ignore-check", "single-replica", "--yes"}
			killed, out := runAndKill(t, pluginCmd(args...), killPoint{marker: "waiting for 2 Ready replicas outside the batch"})
			if !killed {
				t.Fatalf("the run ended before its surges were up:\n%s", out)
			}
			ctx := testContext(t, 3*time.Minute)
			d, err := client.AppsV1().Deployments(name).Get(ctx, "scaled", metav1.GetOptions{})
			must(t, err)
			if *d.Spec.Replicas != 4 {
				t.Errorf("killed with the surges up: Deployment scaled has %d replicas, want 4", *d.Spec.Replicas)
			}
			next := []string{"abort", name}
			if then == "run" {
				next = args
			}
			r := plugin(t, next...)
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("%s: %s", then, r)
			}
			assertSpecsAsBefore(t, name, before)
			if then == "run" {
				assertUpgraded(t, name, 2)
			} else {
				assertUntouched(t, ctx, groupKey, name)
			}
			t.Logf("killed, then %s: %s", then, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestMakeRoomRefusesASurgeThatDoesNotFit: the one node that stays has
// CPU for the batch's pod but not for it and the extra replica: plan
// --make-room exits 5 naming the workload and the CPU.
func TestMakeRoomRefusesASurgeThatDoesNotFit(t *testing.T) {
	t.Parallel()
	const name = "makeroom-unfit"
	setupGroup(t, name, 1, 0, scenario.App{Name: "big", Replicas: 1, CPU: "1"})
	ctx := testContext(t, time.Minute)
	must(t, scenario.CreateNode(ctx, client, scenario.Node{Name: name + "-small", Zone: "sim-a", CPU: "1500m",
		Labels: map[string]string{groupKey: name, imageKey: "ami-new"}}))
	must(t, waitNodeReady(ctx, name+"-small"))
	r := plugin(t, "plan", name, "--target-label", target, "--make-room", "--detailed-exitcode")
	if r.code != nodeupgrade.ExitBlockers {
		t.Fatalf("plan --make-room with no room for the surge: want exit %d, got %s", nodeupgrade.ExitBlockers, r)
	}
	out := r.stdout + r.stderr
	for _, want := range []string{name + "/big", "--make-room", "(cpu)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not say %q:\n%s", want, out)
		}
	}
}

func waitNodeReady(ctx context.Context, name string) error {
	for {
		if n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %q not Ready: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestMakeRoomBench (MAKEROOM_BENCH=1, hack/bench.sh --make-room) times
// a plain run and a run --make-room on two identical groups whose
// workloads a plain run can drain (the budget minAvailable 2 of 3): the
// cost of the surges, as a "bench:" line.
func TestMakeRoomBench(t *testing.T) {
	if os.Getenv("MAKEROOM_BENCH") == "" {
		t.Skip("a benchmark: MAKEROOM_BENCH=1 (hack/bench.sh --make-room)")
	}
	apps := slices.Clone(makeRoomApps)
	apps[1].MinAvailable = num(2)
	took := map[string]time.Duration{}
	for _, mode := range []string{"plain", "make-room"} {
		name := "makeroom-bench-" + mode
		setupMakeRoomApps(t, name, apps, nil)
		args := []string{"run", name, "--target-label", target, "--max-unavailable", "2", "--post-drain-wait", "0s", "--ignore-check", "single-replica", "--ignore-check", "same-batch", "--yes"}
		if mode == "make-room" {
			args = append(args, "--make-room")
		}
		start := time.Now()
		if code, out := startBackground(t, pluginCmd(args...)).wait(t, 5*time.Minute); code != nodeupgrade.ExitOK {
			t.Fatalf("%s run: exit %d\n%s", mode, code, out)
		}
		took[mode] = time.Since(start)
	}
	t.Logf("bench: same group, 2 outdated nodes, 7 pods: plain run %s, run --make-room %s (+%s)",
		took["plain"].Round(time.Millisecond), took["make-room"].Round(time.Millisecond), (took["make-room"] - took["plain"]).Round(time.Millisecond))
}
