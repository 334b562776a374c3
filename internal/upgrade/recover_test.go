package upgrade

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

func deployment(name string, available int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: new(int32(3))},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, AvailableReplicas: available},
	}
}

// replicaSet is a ReplicaSet of deploy ("" for none) with available of 3
// replicas.
func replicaSet(name, deploy string, available int32) *appsv1.ReplicaSet {
	r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:   appsv1.ReplicaSetSpec{Replicas: new(int32(3))},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, AvailableReplicas: available}}
	if deploy != "" {
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deploy, Controller: new(true)}}
	}
	return r
}

func statefulSet(name string, ready int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:   appsv1.StatefulSetSpec{Replicas: new(int32(3))},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: ready}}
}

func replicationController(name string, available int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:   corev1.ReplicationControllerSpec{Replicas: new(int32(3))},
		Status: corev1.ReplicationControllerStatus{ObservedGeneration: 1, AvailableReplicas: available}}
}

// newTestWorkloadView is a workload view over client, stopped with the test.
func newTestWorkloadView(t *testing.T, client *fake.Clientset) *workloadView {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return newWorkloadView(informers.NewSharedInformerFactory(client, 0), stop)
}

// TestWorkloadWaitEndsWhenTheLastIsBack: a batch waits for every kind of
// replica controller at once, on its status as the caches show it, and
// ends when the last one is back; what is gone has nothing to wait for.
func TestWorkloadWaitEndsWhenTheLastIsBack(t *testing.T) {
	web := Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "web-1"}
	bare := Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "bare"}
	db := Owner{Kind: "StatefulSet", Namespace: "ns", Name: "db"}
	old := Owner{Kind: "ReplicationController", Namespace: "ns", Name: "old"}
	gone := Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "gone-1"}
	tests := []struct {
		name string
		// back makes one owner of the batch back, in this order
		back []func(context.Context, *fake.Clientset) error
	}{
		{"back by their status", []func(context.Context, *fake.Clientset) error{
			func(ctx context.Context, c *fake.Clientset) error {
				_, err := c.AppsV1().Deployments("ns").UpdateStatus(ctx, deployment("web", 3), metav1.UpdateOptions{})
				return err
			},
			func(ctx context.Context, c *fake.Clientset) error {
				_, err := c.AppsV1().ReplicaSets("ns").UpdateStatus(ctx, replicaSet("bare", "", 3), metav1.UpdateOptions{})
				return err
			},
			func(ctx context.Context, c *fake.Clientset) error {
				_, err := c.AppsV1().StatefulSets("ns").UpdateStatus(ctx, statefulSet("db", 3), metav1.UpdateOptions{})
				return err
			},
			func(ctx context.Context, c *fake.Clientset) error {
				_, err := c.CoreV1().ReplicationControllers("ns").UpdateStatus(ctx, replicationController("old", 3), metav1.UpdateOptions{})
				return err
			},
		}},
		{"deleted", []func(context.Context, *fake.Clientset) error{
			func(ctx context.Context, c *fake.Clientset) error {
				return c.AppsV1().Deployments("ns").Delete(ctx, "web", metav1.DeleteOptions{})
			},
			func(ctx context.Context, c *fake.Clientset) error {
				return c.AppsV1().ReplicaSets("ns").Delete(ctx, "bare", metav1.DeleteOptions{})
			},
			func(ctx context.Context, c *fake.Clientset) error {
				return c.AppsV1().StatefulSets("ns").Delete(ctx, "db", metav1.DeleteOptions{})
			},
			func(ctx context.Context, c *fake.Clientset) error {
				return c.CoreV1().ReplicationControllers("ns").Delete(ctx, "old", metav1.DeleteOptions{})
			},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// web-1's own status says nothing: its Deployment counts
			client := fake.NewClientset(replicaSet("web-1", "web", 3), deployment("web", 2), replicaSet("bare", "", 1),
				statefulSet("db", 2), replicationController("old", 0))
			v := newTestWorkloadView(t, client)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var mu sync.Mutex
			var told [][]Owner
			done := make(chan error, 1)
			go func() {
				done <- v.waitReady(ctx, []Owner{web, bare, db, old, gone}, func(left []Owner) {
					mu.Lock()
					told = append(told, left)
					mu.Unlock()
				})
			}()
			waitTold := func(n int) {
				t.Helper()
				for {
					mu.Lock()
					got := len(told) > 0 && len(told[len(told)-1]) == n
					mu.Unlock()
					if got {
						return
					}
					select {
					case err := <-done:
						t.Fatalf("returned %v with %d owners to go", err, n)
					case <-ctx.Done():
						t.Fatalf("never told %d owners to go: %v", n, told)
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
			for i, back := range tc.back {
				waitTold(len(tc.back) - i)
				if err := back(ctx, client); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := [][]Owner{{web, bare, db, old}, {bare, db, old}, {db, old}, {old}, {}}
			if !slices.EqualFunc(told, want, slices.Equal) {
				t.Errorf("told %v, want %v", told, want)
			}
		})
	}
}

// TestWorkloadWaitListsAndWatchesEachKindOnce: the waits of a run's
// batches list and watch each kind they need once for the whole run,
// and ask for no single workload.
func TestWorkloadWaitListsAndWatchesEachKindOnce(t *testing.T) {
	client := fake.NewClientset(replicaSet("web-1", "web", 3), replicaSet("api-1", "api", 3), replicaSet("bare", "", 3),
		deployment("web", 3), deployment("api", 3), statefulSet("db", 3))
	v := newTestWorkloadView(t, client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owners := []Owner{{Kind: "ReplicaSet", Namespace: "ns", Name: "web-1"}, {Kind: "ReplicaSet", Namespace: "ns", Name: "api-1"}, {Kind: "ReplicaSet", Namespace: "ns", Name: "bare"}}
	for batch := range 3 {
		if err := v.waitReady(ctx, owners, nil); err != nil {
			t.Fatalf("batch %d: %v", batch+1, err)
		}
	}
	want := map[string]int{"list replicasets": 1, "watch replicasets": 1, "list deployments": 1, "watch deployments": 1}
	count := func() map[string]int {
		requests := map[string]int{}
		for _, a := range client.Actions() {
			requests[a.GetVerb()+" "+a.GetResource().Resource]++
		}
		return requests
	}
	// A reflector starts its watch after its list has filled the cache,
	// so the waits can end before the watches are made; give them time
	// to be made, then count (CI on 46f91d5 counted between the two).
	requests := count()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !maps.Equal(requests, want); requests = count() {
		time.Sleep(10 * time.Millisecond)
	}
	for k, n := range requests {
		if want[k] != n {
			t.Errorf("%d %s requests, want %d (all: %v)", n, k, want[k], requests)
		}
	}
	for k, n := range want {
		if requests[k] != n {
			t.Errorf("%d %s requests, want %d (all: %v)", requests[k], k, n, requests)
		}
	}
}

// TestWorkloadWaitSaysWhatIsMissing: a wait that ends before the
// workloads are back says how far each got, the Deployment for its
// ReplicaSet.
func TestWorkloadWaitSaysWhatIsMissing(t *testing.T) {
	client := fake.NewClientset(replicaSet("web-1", "web", 3), deployment("web", 1), statefulSet("db", 2), deployment("api", 3))
	v := newTestWorkloadView(t, client)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := v.waitReady(ctx, []Owner{{Kind: "ReplicaSet", Namespace: "ns", Name: "web-1"}, {Kind: "StatefulSet", Namespace: "ns", Name: "db"},
		{Kind: "Deployment", Namespace: "ns", Name: "api"}}, nil)
	if err == nil {
		t.Fatal("returned nil with two workloads not back")
	}
	for _, want := range []string{`Deployment "ns/web" has 1/3 available`, `StatefulSet "ns/db" has 2/3 ready`, "context deadline exceeded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "api") {
		t.Errorf("error %q names a Deployment that is back", err)
	}
}

// TestWorkloadWaitEndsWhenListingIsRefused: a kind the run may not list
// (RBAC) ends the wait at once, naming the kind and what grants it,
// where the informer would retry until --drain-timeout.
func TestWorkloadWaitEndsWhenListingIsRefused(t *testing.T) {
	client := fake.NewClientset(replicaSet("web-1", "web", 3), deployment("web", 1))
	client.PrependReactor("list", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "", errors.New("RBAC: access denied"))
	})
	v := newTestWorkloadView(t, client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := v.waitReady(ctx, []Owner{{Kind: "ReplicaSet", Namespace: "ns", Name: "web-1"}}, nil)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("got %v after %v, want a refusal at once", err, ctx.Err())
	}
	for _, want := range []string{"listing ReplicaSets", "forbidden", "deploy/rbac.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestSlimWorkloadDropsTheTemplate: the caches hold no pod templates,
// and keep what the waits read.
func TestSlimWorkloadDropsTheTemplate(t *testing.T) {
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	d := deployment("web", 2)
	d.Spec.Template, d.ManagedFields = template, managed
	rs := replicaSet("web-1", "web", 2)
	rs.Spec.Template, rs.ManagedFields = template, managed
	ss := statefulSet("db", 2)
	ss.Spec.Template, ss.ManagedFields = template, managed
	ss.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	rc := replicationController("old", 2)
	rc.Spec.Template, rc.ManagedFields = &template, managed
	tests := []struct {
		name   string
		obj    runtime.Object
		status string
		slim   func(any) bool
	}{
		{"Deployment", d, "2/3 available", func(o any) bool {
			d := o.(*appsv1.Deployment)
			return d.Spec.Template.Spec.Containers == nil && d.ManagedFields == nil
		}},
		{"ReplicaSet", rs, "2/3 available", func(o any) bool {
			r := o.(*appsv1.ReplicaSet)
			return r.Spec.Template.Spec.Containers == nil && r.ManagedFields == nil && metav1.GetControllerOf(r) != nil
		}},
		{"StatefulSet", ss, "2/3 ready", func(o any) bool {
			s := o.(*appsv1.StatefulSet)
			return s.Spec.Template.Spec.Containers == nil && s.Spec.VolumeClaimTemplates == nil && s.ManagedFields == nil
		}},
		{"ReplicationController", rc, "2/3 available", func(o any) bool {
			r := o.(*corev1.ReplicationController)
			return r.Spec.Template == nil && r.ManagedFields == nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := snapshot.Slim(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.slim(out) {
				t.Errorf("%s keeps its template or managed fields: %+v", tc.name, out)
			}
			if ready, status := ownerReady(out.(runtime.Object)); ready || status != tc.status {
				t.Errorf("slimmed %s reads ready=%t %q, want not ready %q", tc.name, ready, status, tc.status)
			}
		})
	}
}

// ownedPod is a pod of controller kind/name in namespace ns, Ready or
// not.
func ownedPod(name, kind, owner string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner, Controller: new(true)}}},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// terminating marks p as going away, held by a finalizer.
func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	p.Finalizers = []string{"test/keep"}
	return p
}

// newTestClusterView is the run's view of client (pods, nodes, and the
// workloads of kinds), stopped with the test.
func newTestClusterView(t *testing.T, client *fake.Clientset, kinds ...string) *clusterView {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := newClusterView(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := v.workloads.watch(wctx, kinds); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestWorkloadIsBackWhenItsPodsAre: a workload whose controller has not
// counted its replacements yet is back once the pod cache shows as many
// of its pods Ready as it asks for (across a Deployment's ReplicaSets);
// pods going away, not Ready, or another workload's do not count, and
// minReadySeconds is left to the controller.
func TestWorkloadIsBackWhenItsPodsAre(t *testing.T) {
	web := Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "web-2"}
	withMinReady := deployment("web", 1)
	withMinReady.Spec.MinReadySeconds = 10
	tests := []struct {
		name  string
		owner Owner
		objs  []runtime.Object
		back  bool
	}{
		{"Ready across the Deployment's ReplicaSets", web, []runtime.Object{deployment("web", 1), replicaSet("web-2", "web", 1), replicaSet("web-1", "web", 0),
			ownedPod("a", "ReplicaSet", "web-2", true), ownedPod("b", "ReplicaSet", "web-2", true), ownedPod("c", "ReplicaSet", "web-1", true)}, true},
		{"one not Ready", web, []runtime.Object{deployment("web", 1), replicaSet("web-2", "web", 1),
			ownedPod("a", "ReplicaSet", "web-2", true), ownedPod("b", "ReplicaSet", "web-2", true), ownedPod("c", "ReplicaSet", "web-2", false)}, false},
		{"one terminating", web, []runtime.Object{deployment("web", 1), replicaSet("web-2", "web", 1),
			ownedPod("a", "ReplicaSet", "web-2", true), ownedPod("b", "ReplicaSet", "web-2", true), terminating(ownedPod("c", "ReplicaSet", "web-2", true))}, false},
		{"one of another Deployment", web, []runtime.Object{deployment("web", 1), replicaSet("web-2", "web", 1), replicaSet("api-1", "api", 3),
			ownedPod("a", "ReplicaSet", "web-2", true), ownedPod("b", "ReplicaSet", "web-2", true), ownedPod("c", "ReplicaSet", "api-1", true)}, false},
		{"minReadySeconds: the Deployment's count", web, []runtime.Object{withMinReady, replicaSet("web-2", "web", 1),
			ownedPod("a", "ReplicaSet", "web-2", true), ownedPod("b", "ReplicaSet", "web-2", true), ownedPod("c", "ReplicaSet", "web-2", true)}, false},
		{"a ReplicaSet of its own", Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "bare"}, []runtime.Object{replicaSet("bare", "", 0),
			ownedPod("a", "ReplicaSet", "bare", true), ownedPod("b", "ReplicaSet", "bare", true), ownedPod("c", "ReplicaSet", "bare", true)}, true},
		{"a StatefulSet", Owner{Kind: "StatefulSet", Namespace: "ns", Name: "db"}, []runtime.Object{statefulSet("db", 2),
			ownedPod("db-0", "StatefulSet", "db", true), ownedPod("db-1", "StatefulSet", "db", true), ownedPod("db-2", "StatefulSet", "db", true)}, true},
		{"a ReplicationController short of one", Owner{Kind: "ReplicationController", Namespace: "ns", Name: "old"}, []runtime.Object{replicationController("old", 0),
			ownedPod("a", "ReplicationController", "old", true), ownedPod("b", "ReplicationController", "old", true)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newTestClusterView(t, fake.NewClientset(tc.objs...), kindsToWatch(tc.owner)...)
			back, status := v.workloads.status(tc.owner)
			if back != tc.back {
				t.Errorf("back %v (%q), want %v", back, status, tc.back)
			}
		})
	}
}

// TestWorkloadWaitEndsWhenAPodBecomesReady: a recovery wait looks again
// when a pod changes, not only when a controller's status does: the last
// replacement turning Ready ends it while the Deployment still counts
// 1 of 3.
func TestWorkloadWaitEndsWhenAPodBecomesReady(t *testing.T) {
	last := ownedPod("c", "ReplicaSet", "web-2", false)
	client := fake.NewClientset(deployment("web", 1), replicaSet("web-2", "web", 1),
		ownedPod("a", "ReplicaSet", "web-2", true), ownedPod("b", "ReplicaSet", "web-2", true), last)
	web := Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "web-2"}
	v := newTestClusterView(t, client, kindsToWatch(web)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waiting := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- v.workloads.waitReady(ctx, []Owner{web}, func(left []Owner) {
			if len(left) == 1 {
				close(waiting)
			}
		})
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("returned %v before the last pod was Ready", err)
	}
	ready := last.DeepCopy()
	ready.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the wait did not end when the last pod was Ready: %v", err)
	}
}
