package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

const ns = "smoke"

// TestSmoke proves the pieces a node upgrade relies on: the scheduler places
// pods, kwok runs them, the disruption controller keeps PDB status so the
// Eviction API refuses a second disruption, deleted pods honour their grace
// period, and RBAC applies to non-admin users.
func TestSmoke(t *testing.T) {
	testStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir(), PodReadyDelay: 2 * time.Second})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Logf("Start took %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		stopStart := time.Now()
		if err := c.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("second stop: %v", err)
		}
		t.Logf("Stop took %s; smoke test wall time %s", time.Since(stopStart).Round(time.Millisecond), time.Since(testStart).Round(time.Millisecond))
	})
	cs := c.Client

	outdated, current, err := scenario.CreateNodeGroup(ctx, cs, scenario.NodeGroup{
		LabelKey: "eks.amazonaws.com/nodegroup", Name: "ng1",
		Zones:    []string{"sim-a", "sim-b", "sim-c"},
		Outdated: 3,
	})
	if err != nil {
		t.Fatalf("node group: %v", err)
	}
	if len(outdated) != 3 || len(current) != 0 {
		t.Fatalf("node group: got %v / %v", outdated, current)
	}
	if err := scenario.CreateApp(ctx, cs, scenario.App{
		Namespace: ns, Name: "web", Replicas: 3,
		MinAvailable: new(intstr.FromInt32(2)),
		NodeSelector: map[string]string{"eks.amazonaws.com/nodegroup": "ng1"},
	}); err != nil {
		t.Fatalf("app: %v", err)
	}
	if err := scenario.WaitAppsReady(ctx, cs, ns); err != nil {
		t.Fatalf("apps ready: %v", err)
	}
	waitPDBAllows(ctx, t, cs, "web", 1)
	// the ready delay exceeds the Eviction API's 500ms retry after a conflict,
	// so the replacement of the first evicted pod cannot make room for the
	// second eviction while it retries
	watcher, err := scenario.WatchPDBs(ctx, cs, ns)
	if err != nil {
		t.Fatalf("watch pdbs: %v", err)
	}

	t.Run("nodes spread over zones", func(t *testing.T) {
		zones := map[string]bool{}
		for _, n := range outdated {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			zones[node.Labels[scenario.ZoneLabel]] = true
			if node.Annotations[scenario.KwokAnnotation] != "fake" {
				t.Errorf("node %s lacks the kwok annotation", n)
			}
		}
		if len(zones) != 3 {
			t.Errorf("zones = %v, want 3", zones)
		}
	})

	var evicted string
	t.Run("second concurrent eviction is refused by the pdb", func(t *testing.T) {
		pods := runningPods(ctx, t, cs)
		if len(pods) != 3 {
			t.Fatalf("got %d pods, want 3", len(pods))
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = evict(ctx, cs, pods[i].Name) })
		}
		wg.Wait()
		var ok, refused int
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
				evicted = pods[i].Name
			case apierrors.IsTooManyRequests(err):
				refused++
			default:
				t.Errorf("evict %s: unexpected error %v", pods[i].Name, err)
			}
		}
		if ok != 1 || refused != 1 {
			t.Fatalf("evictions: %d succeeded, %d refused with 429; want 1 and 1 (%v)", ok, refused, errs)
		}
	})

	t.Run("evicted pod goes away and its replacement becomes ready", func(t *testing.T) {
		if evicted == "" {
			t.Fatal("no pod was evicted by the previous step")
		}
		if err := waitPodGone(ctx, cs, evicted); err != nil {
			t.Fatal(err)
		}
		if err := scenario.WaitAppsReady(ctx, cs, ns); err != nil {
			t.Fatal(err)
		}
		pods := runningPods(ctx, t, cs)
		if len(pods) != 3 {
			t.Fatalf("got %d ready pods after replacement, want 3", len(pods))
		}
		for _, p := range pods {
			if p.Name == evicted {
				t.Fatalf("evicted pod %s is still there", evicted)
			}
		}
	})

	t.Run("deleted pods honour their grace period", func(t *testing.T) {
		waitPDBAllows(ctx, t, cs, "web", 1)
		pods := runningPods(ctx, t, cs)
		if len(pods) != 3 {
			t.Fatalf("got %d ready pods, want 3", len(pods))
		}
		// deleting two pods bypasses the budget: the watcher must notice
		victims := []string{pods[0].Name, pods[1].Name}
		const grace = 3
		deleted := time.Now()
		for _, v := range victims {
			if err := cs.CoreV1().Pods(ns).Delete(ctx, v, metav1.DeleteOptions{GracePeriodSeconds: new(int64(grace))}); err != nil {
				t.Fatal(err)
			}
		}
		for _, v := range victims {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, v, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("pod %s vanished at once, the grace period was ignored: %v", v, err)
			}
			if p.DeletionTimestamp == nil {
				t.Fatalf("pod %s has no deletionTimestamp", v)
			}
		}
		for _, v := range victims {
			if err := waitPodGone(ctx, cs, v); err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(deleted); took < grace*time.Second {
			t.Errorf("pods went away after %s, before their %ds grace period", took, grace)
		} else {
			t.Logf("pods went away %s after the delete", took.Round(time.Millisecond))
		}
		if err := scenario.WaitAppsReady(ctx, cs, ns); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("pdb watcher saw only the deletions that broke the budget", func(t *testing.T) {
		vs := watcher.Stop()
		// the eviction left 2 ready pods (allowed); deleting two left 1
		if len(vs) != 1 || vs[0].PDB != "web" || vs[0].Ready != 1 || vs[0].Required != 2 {
			t.Fatalf("violations = %v, want one for web with 1 ready < 2", vs)
		}
	})

	t.Run("rbac applies to other users", func(t *testing.T) {
		tests := []struct {
			user      string
			groups    []string
			forbidden bool
		}{
			{user: "alice", forbidden: true},
			{user: "root", groups: []string{"system:masters"}, forbidden: false},
		}
		for _, tc := range tests {
			t.Run(tc.user, func(t *testing.T) {
				path, err := c.KubeconfigForUser(tc.user, tc.groups...)
				if err != nil {
					t.Fatal(err)
				}
				rc, err := clientcmd.BuildConfigFromFlags("", path)
				if err != nil {
					t.Fatal(err)
				}
				uc, err := kubernetes.NewForConfig(rc)
				if err != nil {
					t.Fatal(err)
				}
				_, err = uc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if got := apierrors.IsForbidden(err); got != tc.forbidden {
					t.Fatalf("list pods as %s: err = %v, want forbidden=%v", tc.user, err, tc.forbidden)
				}
			})
		}
	})
}

func evict(ctx context.Context, cs kubernetes.Interface, pod string) error {
	return cs.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})
}

// runningPods lists the Ready, non-terminating pods of the namespace.
func runningPods(ctx context.Context, t *testing.T, cs kubernetes.Interface) []corev1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	return out
}

// waitPDBAllows waits for the disruption controller to publish the budget,
// since the Eviction API reads status.disruptionsAllowed.
func waitPDBAllows(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, allowed int32) {
	t.Helper()
	w, err := cs.PolicyV1().PodDisruptionBudgets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("pdb watch closed")
			}
			if pdb, ok := ev.Object.(*policyv1.PodDisruptionBudget); ok && pdb.Status.DisruptionsAllowed == allowed && pdb.Status.ObservedGeneration == pdb.Generation {
				return
			}
		case <-ctx.Done():
			t.Fatalf("pdb %s never allowed %d disruptions: %v", name, allowed, ctx.Err())
		}
	}
}

// waitPodGone waits for the pod's deletion event.
func waitPodGone(ctx context.Context, cs kubernetes.Interface, name string) error {
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return err
	}
	defer w.Stop()
	// a pod deleted before the watch started sends nothing: check it exists
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("pod watch closed")
			}
			if ev.Type == watch.Deleted {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("pod %s still exists: %w", name, ctx.Err())
		}
	}
}
