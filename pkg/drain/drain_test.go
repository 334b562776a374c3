package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

type podOpt func(*corev1.Pod)

func newPod(ns, name, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name),
			Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-123", UID: "rs-uid", Controller: ptr(true),
			}},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func bare(p *corev1.Pod) { p.OwnerReferences = nil }

func withEmptyDir(p *corev1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

func daemonSetPod(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr(true),
	}}
}

func mirror(p *corev1.Pod) {
	p.OwnerReferences = nil
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
}

func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	p.Finalizers = []string{"test/keep"} // a real apiserver needs one to show a terminating pod
}

func succeeded(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }

func labelled(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels = map[string]string{k: v} } }

func withGrace(s int64) podOpt {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}

func newPDB(ns, name string, sel *metav1.LabelSelector, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: ptr(intstr.FromInt32(2))},
		Status: policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2,
		},
	}
}

func webSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
}

func daemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ds"}}
}

// pdbRefusal is what the apiserver returns when a PDB allows no disruption.
func pdbRefusal(pdb string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget " + pdb + " needs 2 healthy pods and has 2 currently",
	})
	return err
}

// throttledByServer is what client-go returns for a 429 of API Priority and
// Fairness (a plain-text body, Retry-After: 1) once it has retried it as
// often as it does.
func throttledByServer(pod string) error {
	return apierrors.NewGenericServerResponse(http.StatusTooManyRequests, "POST", schema.GroupResource{Resource: "pods"}, pod,
		"Too many requests, please try again later.", 1, true)
}

// pdbStaleRefusal is the eviction's refusal while the disruption controller
// has not yet seen the PDB's latest spec: a 429 with Retry-After.
func pdbStaleRefusal(pdb string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget " + pdb + " is still being processed by the server.",
	})
	return err
}

func multiplePDBs() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    500,
		Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
	}}
}

// cluster is a fake clientset whose eviction subresource answers with
// evict(name, attempt) and deletes the pod when that returns nil.
//
// Pods are deleted only once the drain's watch of their node is registered:
// the fake's watch cannot replay a delete made between its list and its
// watch, which a real apiserver does.
type cluster struct {
	*fake.Clientset
	mu       sync.Mutex
	attempts map[string]int
	evict    func(name string, attempt int) error
	watched  map[string]chan struct{}
}

func newCluster(t *testing.T, evict func(name string, attempt int) error, objs ...runtime.Object) *cluster {
	t.Helper()
	c := &cluster{Clientset: fake.NewClientset(objs...), attempts: map[string]int{}, evict: evict, watched: map[string]chan struct{}{}}
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		opts := a.(k8stesting.WatchActionImpl).ListOptions
		w, err := c.Tracker().Watch(podsGVR, a.GetNamespace(), opts)
		if err == nil {
			ch := c.watchedCh(strings.TrimPrefix(opts.FieldSelector, "spec.nodeName="))
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		return true, w, err
	})
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, c.removePod(a.GetNamespace(), a.(k8stesting.DeleteAction).GetName())
	})
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		c.mu.Lock()
		c.attempts[ev.Name]++
		n := c.attempts[ev.Name]
		fn := c.evict
		c.mu.Unlock()
		if _, err := c.Tracker().Get(podsGVR, ev.Namespace, ev.Name); err != nil {
			return true, nil, err
		}
		var err error
		if fn != nil {
			err = fn(ev.Name, n)
		}
		if err == nil {
			err = c.removePod(ev.Namespace, ev.Name)
		}
		return true, nil, err
	})
	return c
}

func (c *cluster) watchedCh(node string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.watched[node]
	if ch == nil {
		ch = make(chan struct{})
		c.watched[node] = ch
	}
	return ch
}

// removePod deletes a pod as the apiserver would, once its node is watched;
// it runs under the Fake's lock, so it uses the tracker, not the client.
func (c *cluster) removePod(ns, name string) error {
	obj, err := c.Tracker().Get(podsGVR, ns, name)
	if err != nil {
		return err
	}
	ch := c.watchedCh(obj.(*corev1.Pod).Spec.NodeName)
	go func() {
		<-ch
		_ = c.Tracker().Delete(podsGVR, ns, name)
	}()
	return nil
}

func (c *cluster) attemptsOf(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts[name]
}

func (c *cluster) verbs(verb, sub string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == "pods" && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

type recorder struct {
	mu     sync.Mutex
	events []Event
	hook   func(Event)
}

func (r *recorder) on(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(ev)
	}
}

func (r *recorder) of(typ EventType, pod string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Type == typ && (pod == "" || e.Pod == pod) {
			out = append(out, e)
		}
	}
	return out
}

// fast makes a drainer whose retries run in milliseconds.
func fast(c *cluster, opts Options, rec *recorder) *Drainer {
	if rec != nil {
		opts.OnEvent = rec.on
	}
	d := New(c, opts)
	d.retryInterval = time.Millisecond
	d.errorRetryInterval = time.Millisecond
	d.deleteMargin = 5 * time.Second
	return d
}

// testCtx guards against hangs only; no test asserts how long anything takes.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestPodsToEvict(t *testing.T) {
	tests := []struct {
		name        string
		opts        Options
		objs        []runtime.Object
		wantEvict   []string
		wantRefused map[string]string // pod -> substring of the reason
	}{
		{
			name: "daemonset and mirror pods are left alone",
			objs: []runtime.Object{daemonSet(),
				newPod("default", "ds-pod", "n1", daemonSetPod), newPod("kube-system", "static", "n1", mirror),
				newPod("default", "web", "n1")},
			wantEvict: []string{"default/web"},
		},
		{
			name:        "bare pod refused without force",
			objs:        []runtime.Object{newPod("default", "bare", "n1", bare), newPod("default", "web", "n1")},
			wantEvict:   []string{"default/web"},
			wantRefused: map[string]string{"default/bare": ReasonBare},
		},
		{
			name:      "bare pod accepted with force",
			opts:      Options{Force: true},
			objs:      []runtime.Object{newPod("default", "bare", "n1", bare)},
			wantEvict: []string{"default/bare"},
		},
		{
			name:        "emptyDir refused without DeleteEmptyDirData",
			objs:        []runtime.Object{newPod("default", "cache", "n1", withEmptyDir)},
			wantRefused: map[string]string{"default/cache": ReasonEmptyDir},
		},
		{
			name:      "emptyDir accepted with DeleteEmptyDirData",
			opts:      Options{DeleteEmptyDirData: true},
			objs:      []runtime.Object{newPod("default", "cache", "n1", withEmptyDir)},
			wantEvict: []string{"default/cache"},
		},
		{
			name:        "bare pod with emptyDir names both reasons",
			objs:        []runtime.Object{newPod("default", "x", "n1", bare, withEmptyDir)},
			wantRefused: map[string]string{"default/x": ReasonEmptyDir + " and " + ReasonBare},
		},
		{
			name:        "orphaned daemonset pod refused without force",
			objs:        []runtime.Object{newPod("default", "orphan", "n1", daemonSetPod)},
			wantRefused: map[string]string{"default/orphan": "DaemonSet \"ds\" which no longer exists"},
		},
		{
			name:      "finished and terminating bare pods are not refused",
			objs:      []runtime.Object{newPod("default", "done", "n1", bare, succeeded), newPod("default", "going", "n1", bare, terminating)},
			wantEvict: []string{"default/done", "default/going"},
		},
		{
			name:      "pods of other nodes are ignored",
			objs:      []runtime.Object{newPod("default", "here", "n1"), newPod("default", "there", "n2", bare)},
			wantEvict: []string{"default/here"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, nil, tt.objs...)
			evict, refused, err := fast(c, tt.opts, nil).PodsToEvict(testCtx(t), "n1")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(podNames(evict), ","), strings.Join(tt.wantEvict, ","); got != want {
				t.Errorf("evict = %q, want %q", got, want)
			}
			if len(refused) != len(tt.wantRefused) {
				t.Fatalf("refused = %+v, want %v", refused, tt.wantRefused)
			}
			for _, r := range refused {
				want, ok := tt.wantRefused[r.Namespace+"/"+r.Name]
				if !ok || !strings.Contains(r.Reason, want) {
					t.Errorf("refused %s/%s: %q, want %q", r.Namespace, r.Name, r.Reason, want)
				}
			}
			if n := c.verbs("create", "eviction") + c.verbs("delete", ""); n != 0 {
				t.Errorf("PodsToEvict changed %d pods", n)
			}
		})
	}
}

func TestDrainNode(t *testing.T) {
	pdb := newPDB("default", "web", webSelector(), 0)
	tests := []struct {
		name  string
		opts  Options
		objs  []runtime.Object
		evict func(name string, attempt int) error
		// during runs alongside the drain with the cluster and the events
		during func(t *testing.T, c *cluster, rec *recorder)
		check  func(t *testing.T, c *cluster, rec *recorder, res Result, err error)
	}{
		{
			name: "evicts managed pods and leaves daemonset and mirror pods",
			objs: []runtime.Object{daemonSet(), newPod("default", "a", "n1"), newPod("default", "b", "n1"),
				newPod("default", "ds-pod", "n1", daemonSetPod), newPod("kube-system", "static", "n1", mirror),
				newPod("default", "other", "n2")},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Evicted) != 2 || res.Node != "n1" {
					t.Errorf("result = %s %v", res.Node, podNames(res.Evicted))
				}
				if c.attemptsOf("ds-pod")+c.attemptsOf("static")+c.attemptsOf("other") != 0 {
					t.Error("evicted a daemonset, mirror or other node's pod")
				}
				for _, name := range []string{"ds-pod", "static", "other"} {
					ns := "default"
					if name == "static" {
						ns = "kube-system"
					}
					if _, err := c.Tracker().Get(podsGVR, ns, name); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
				if len(rec.of(EventEvicted, "")) != 2 || len(rec.of(EventGone, "")) != 2 || len(rec.of(EventDrained, "")) != 1 {
					t.Errorf("events = %+v", rec.events)
				}
				// per pod Evicting, Evicted, Gone in that order; Drained last
				seen := map[string]string{}
				next := map[EventType]EventType{EventEvicting: "", EventEvicted: EventEvicting, EventGone: EventEvicted}
				for i, e := range rec.events {
					if e.Type == EventDrained {
						if i != len(rec.events)-1 {
							t.Errorf("Drained is not the last event: %+v", rec.events)
						}
						continue
					}
					if string(next[e.Type]) != seen[e.Pod] {
						t.Errorf("%s of %s after %q", e.Type, e.Pod, seen[e.Pod])
					}
					seen[e.Pod] = string(e.Type)
				}
			},
		},
		{
			name: "bare pod refused without force",
			objs: []runtime.Object{newPod("default", "bare", "n1", bare), newPod("default", "web", "n1")},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) {
					t.Fatalf("err = %v, want PodEvictionFailure", err)
				}
				msg := err.Error()
				for _, want := range []string{`PodEvictionFailure: node "n1"`, `pod "default/bare" not managed by a controller`, "use --force to delete them"} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q lacks %q", msg, want)
					}
				}
				if c.verbs("create", "eviction") != 0 {
					t.Error("evicted pods although the drain was refused")
				}
			},
		},
		{
			name: "bare pod evicted with force",
			opts: Options{Force: true},
			objs: []runtime.Object{newPod("default", "bare", "n1", bare)},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil || len(res.Evicted) != 1 {
					t.Fatalf("err = %v, evicted %v", err, podNames(res.Evicted))
				}
			},
		},
		{
			name: "emptyDir refused without DeleteEmptyDirData",
			objs: []runtime.Object{newPod("default", "cache", "n1", withEmptyDir)},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) || len(f.Pods) != 1 || f.Pods[0].Reason != ReasonEmptyDir {
					t.Fatalf("err = %#v", err)
				}
				if msg := err.Error(); !strings.Contains(msg, "--delete-emptydir-data") || strings.Contains(msg, "--force") {
					t.Errorf("error %q", msg)
				}
			},
		},
		{
			name: "blocked pod is reported once across retries, then evicted",
			objs: []runtime.Object{newPod("default", "web", "n1"), pdb},
			evict: func(name string, attempt int) error {
				if attempt <= 5 {
					return pdbRefusal("web")
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if n := c.attemptsOf("web"); n < 6 {
					t.Errorf("attempts = %d, want 6", n)
				}
				blocked := rec.of(EventBlocked, "web")
				if len(blocked) != 1 {
					t.Fatalf("blocked events = %d, want 1", len(blocked))
				}
				want := PDBStatus{Namespace: "default", Name: "web", DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2, ExpectedPods: 2}
				if len(blocked[0].PDBs) != 1 || blocked[0].PDBs[0] != want {
					t.Errorf("blocked PDBs = %+v", blocked[0].PDBs)
				}
				if !strings.Contains(blocked[0].Message, "needs 2 healthy pods") {
					t.Errorf("blocked message = %q", blocked[0].Message)
				}
				if len(res.Evicted) != 1 {
					t.Errorf("evicted = %v", podNames(res.Evicted))
				}
			},
		},
		{
			name: "timeout without force fails naming the pod and its PDB",
			opts: Options{Timeout: 250 * time.Millisecond},
			objs: []runtime.Object{newPod("default", "web", "n1"), newPod("default", "ok", "n1", labelled("app", "other")), pdb},
			evict: func(name string, attempt int) error {
				if name == "web" {
					return pdbRefusal("web")
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) {
					t.Fatalf("err = %v", err)
				}
				want := `PodEvictionFailure: node "n1": 1 pod still running after 250ms: pod "default/web" blocked by PodDisruptionBudget "default/web" (disruptionsAllowed 0, currentHealthy 2, desiredHealthy 2); use --force to delete them`
				if err.Error() != want {
					t.Errorf("error\n got %s\nwant %s", err, want)
				}
				if len(rec.of(EventBlocked, "web")) != 1 {
					t.Errorf("blocked events = %d", len(rec.of(EventBlocked, "web")))
				}
				if c.verbs("delete", "") != 0 {
					t.Error("deleted a pod without force")
				}
				if len(res.Evicted) != 1 || res.Evicted[0].Name != "ok" {
					t.Errorf("evicted = %v", podNames(res.Evicted))
				}
			},
		},
		{
			name:  "timeout with force deletes the remaining pods",
			opts:  Options{Timeout: 50 * time.Millisecond, Force: true},
			objs:  []runtime.Object{newPod("default", "web", "n1"), pdb},
			evict: func(string, int) error { return pdbRefusal("web") },
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if len(rec.of(EventDeleted, "web")) != 1 || len(rec.of(EventGone, "web")) != 1 {
					t.Errorf("events = %+v", rec.events)
				}
				if _, err := c.Tracker().Get(podsGVR, "default", "web"); !apierrors.IsNotFound(err) {
					t.Errorf("pod still there: %v", err)
				}
				if len(res.Evicted) != 1 {
					t.Errorf("evicted = %v", podNames(res.Evicted))
				}
			},
		},
		{
			name: "several PDBs: the 500 is retried and reported with every PDB",
			objs: []runtime.Object{newPod("default", "web", "n1"), newPDB("default", "a", webSelector(), 1),
				newPDB("default", "b", &metav1.LabelSelector{}, 1), newPDB("other", "c", &metav1.LabelSelector{}, 0)},
			evict: func(_ string, attempt int) error {
				if attempt <= 3 {
					return multiplePDBs()
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if c.attemptsOf("web") != 4 {
					t.Errorf("attempts = %d, want 4", c.attemptsOf("web"))
				}
				blocked := rec.of(EventBlocked, "web")
				if len(blocked) != 1 || len(blocked[0].PDBs) != 2 {
					t.Errorf("blocked events = %+v", blocked)
				}
			},
		},
		{
			name: "several PDBs at the timeout: the failure names the reason",
			opts: Options{Timeout: 50 * time.Millisecond},
			objs: []runtime.Object{newPod("default", "web", "n1"), newPDB("default", "a", webSelector(), 1),
				newPDB("default", "b", &metav1.LabelSelector{}, 1)},
			evict: func(string, int) error { return multiplePDBs() },
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) || len(f.Pods) != 1 {
					t.Fatalf("err = %v", err)
				}
				if f.Pods[0].Reason != ReasonMultiplePDBs || len(f.Pods[0].PDBs) != 2 {
					t.Errorf("blocked = %+v", f.Pods[0])
				}
				if !strings.Contains(err.Error(), `PodDisruptionBudget "default/a"`) || !strings.Contains(err.Error(), "use --force") {
					t.Errorf("error %q", err)
				}
			},
		},
		{
			name: "terminating pods are waited for, not evicted",
			objs: []runtime.Object{newPod("default", "going", "n1", terminating)},
			during: func(t *testing.T, c *cluster, rec *recorder) {
				_ = c.removePod("default", "going")
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if c.verbs("create", "eviction")+c.verbs("delete", "") != 0 || len(res.Evicted) != 0 {
					t.Error("touched a terminating pod")
				}
			},
		},
		{
			name: "finished pods are deleted",
			objs: []runtime.Object{newPod("default", "done", "n1", bare, succeeded)},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if c.verbs("delete", "") != 1 || c.verbs("create", "eviction") != 0 || len(rec.of(EventDeleted, "done")) != 1 {
					t.Errorf("actions = %v", c.Actions())
				}
			},
		},
		{
			name:  "404 on evict means gone",
			objs:  []runtime.Object{newPod("default", "web", "n1")},
			evict: func(name string, _ int) error { return apierrors.NewNotFound(podsGVR.GroupResource(), name) },
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if len(rec.of(EventGone, "web")) != 1 || len(res.Evicted) != 0 {
					t.Errorf("events = %+v", rec.events)
				}
			},
		},
		{
			name: "an eviction that can never succeed fails without waiting for the timeout",
			objs: []runtime.Object{newPod("default", "web", "n1")},
			evict: func(name string, _ int) error {
				return apierrors.NewForbidden(podsGVR.GroupResource(), name, errors.New("rbac says no"))
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) || !strings.HasPrefix(f.Pods[0].Reason, "eviction failed: ") || !strings.Contains(f.Pods[0].Reason, "rbac says no") {
					t.Fatalf("err = %v", err)
				}
				if !strings.Contains(err.Error(), "1 pod could not be evicted") {
					t.Errorf("error %q", err)
				}
			},
		},
		{
			name: "transient errors are retried",
			objs: []runtime.Object{newPod("default", "web", "n1")},
			evict: func(name string, attempt int) error {
				if attempt <= 2 {
					return apierrors.NewServiceUnavailable("try later")
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil || c.attemptsOf("web") != 3 {
					t.Fatalf("err = %v, attempts %d", err, c.attemptsOf("web"))
				}
			},
		},
		{
			name: "an eviction whose connection was closed under it is retried, not a failure",
			objs: []runtime.Object{newPod("default", "web", "n1")},
			evict: func(name string, attempt int) error {
				if attempt == 1 {
					return &url.Error{Op: "Post", URL: "https://api/api/v1/namespaces/default/pods/web/eviction",
						Err: errors.New("http2: client connection force closed via ClientConn.Close")}
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil || c.attemptsOf("web") != 2 {
					t.Fatalf("err = %v, attempts %d; want drained after a second attempt", err, c.attemptsOf("web"))
				}
			},
		},
		{
			name: "a 429 of the API server's own limits is retried, not reported as a PDB block",
			objs: []runtime.Object{newPod("default", "web", "n1"), pdb},
			evict: func(name string, attempt int) error {
				if attempt == 1 {
					return throttledByServer(name)
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil || c.attemptsOf("web") != 2 {
					t.Fatalf("err = %v, attempts %d", err, c.attemptsOf("web"))
				}
				if blocked := rec.of(EventBlocked, "web"); len(blocked) != 0 {
					t.Errorf("reported as blocked by a PDB: %+v", blocked)
				}
			},
		},
		{
			name:  "throttled until the timeout: the failure gives the server's answer, not a PDB",
			opts:  Options{Timeout: 250 * time.Millisecond},
			objs:  []runtime.Object{newPod("default", "web", "n1"), pdb},
			evict: func(name string, attempt int) error { return throttledByServer(name) },
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) || len(f.Pods) != 1 {
					t.Fatalf("err = %v, want PodEvictionFailure of one pod", err)
				}
				if b := f.Pods[0]; b.Name != "web" || b.Reason == ReasonPDB || len(b.PDBs) != 0 ||
					!strings.HasPrefix(b.Reason, "not evicted: ") || !strings.Contains(b.Reason, "too many requests") {
					t.Errorf("blocked pod = %+v, want the server's 429 and no PDB", b)
				}
			},
		},
		{
			name:  "a PDB the disruption controller has not seen yet blocks like any refusal",
			opts:  Options{Timeout: 250 * time.Millisecond},
			objs:  []runtime.Object{newPod("default", "web", "n1"), pdb},
			evict: func(name string, attempt int) error { return pdbStaleRefusal("web") },
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) || len(f.Pods) != 1 {
					t.Fatalf("err = %v, want PodEvictionFailure of one pod", err)
				}
				if b := f.Pods[0]; b.Reason != ReasonPDB || len(b.PDBs) != 1 {
					t.Errorf("blocked pod = %+v, want blocked by PDB web", b)
				}
				if blocked := rec.of(EventBlocked, "web"); len(blocked) != 1 || !strings.Contains(blocked[0].Message, "still being processed") {
					t.Errorf("blocked events = %+v", blocked)
				}
			},
		},
		{
			name: "DeleteInsteadOfEvict deletes with the grace period capped",
			opts: Options{DeleteInsteadOfEvict: true, GracePeriodSeconds: -1, MaxGracePeriod: time.Minute},
			objs: []runtime.Object{newPod("default", "slow", "n1", withGrace(3600)), newPod("default", "quick", "n1", withGrace(10)), pdb},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if c.verbs("create", "eviction") != 0 {
					t.Error("evicted instead of deleting")
				}
				grace := map[string]*int64{}
				for _, a := range c.Actions() {
					if da, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
						grace[da.GetName()] = da.GetDeleteOptions().GracePeriodSeconds
					}
				}
				if g := grace["slow"]; g == nil || *g != 60 {
					t.Errorf("slow grace = %v, want 60", g)
				}
				if g := grace["quick"]; g != nil {
					t.Errorf("quick grace = %v, want the pod's own", *g)
				}
				if len(rec.of(EventDeleted, "")) != 2 || len(res.Evicted) != 2 {
					t.Errorf("events = %+v", rec.events)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.evict, tt.objs...)
			rec := &recorder{}
			d := fast(c, tt.opts, rec)
			var wg sync.WaitGroup
			if tt.during != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tt.during(t, c, rec)
				}()
			}
			res, err := d.DrainNode(testCtx(t), "n1")
			wg.Wait()
			tt.check(t, c, rec, res, err)
		})
	}
}

// TestRetryOnPDBChange checks that a refused eviction is retried when the
// PDB allows a disruption, not only by the slow fallback.
func TestRetryOnPDBChange(t *testing.T) {
	pdb := newPDB("default", "web", webSelector(), 0)
	var mu sync.Mutex
	allowed := false
	c := newCluster(t, func(string, int) error {
		mu.Lock()
		defer mu.Unlock()
		if !allowed {
			return pdbRefusal("web")
		}
		return nil
	}, newPod("default", "web", "n1"), pdb)
	rec := &recorder{}
	d := fast(c, Options{}, rec)
	d.retryInterval = time.Hour // only the PDB watch can wake the retry
	rec.hook = func(ev Event) {
		if ev.Type != EventBlocked {
			return
		}
		mu.Lock()
		allowed = true
		mu.Unlock()
		p := pdb.DeepCopy()
		p.Status.DisruptionsAllowed = 1
		p.ResourceVersion = ""
		if err := c.Tracker().Update(schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, p, "default"); err != nil {
			t.Error(err)
		}
	}
	res, err := d.DrainNode(testCtx(t), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Evicted) != 1 || len(rec.of(EventBlocked, "web")) != 1 {
		t.Errorf("evicted %v, events %+v", podNames(res.Evicted), rec.events)
	}
	if len(d.pdbs.m) != 0 {
		t.Errorf("PDB watches left running: %d", len(d.pdbs.m))
	}
}

// TestThrottledEvictionWaitsForRetryAfter checks that an eviction the API
// server throttled is sent again after the Retry-After it asked for, even
// while its PDB changes (every eviction in the namespace changes one), and
// not at the first change that allows a disruption.
func TestThrottledEvictionWaitsForRetryAfter(t *testing.T) {
	pdbGVR := schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	pdb := newPDB("default", "web", webSelector(), 1)
	var (
		mu       sync.Mutex
		attempts []time.Time
	)
	throttled := make(chan struct{})
	c := newCluster(t, func(name string, attempt int) error {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, time.Now())
		switch attempt {
		case 1:
			// a refusal first, so the drain follows the pod's PDB from
			// here on whatever the order it started things in
			return pdbRefusal("web")
		case 2:
			close(throttled)
			return throttledByServer(name) // Retry-After: 1
		}
		return nil
	}, newPod("default", "web", "n1"), pdb)
	d := fast(c, Options{}, nil)
	ctx := testCtx(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-throttled
		// the budget changes, allowing one more every other time (a change
		// the drain's PDB watch wakes its waits for), until the retry
		for i := int32(3); c.attemptsOf("web") < 3 && ctx.Err() == nil; i++ {
			p := pdb.DeepCopy()
			p.Status.CurrentHealthy, p.Status.ExpectedPods = i, i
			p.Status.DisruptionsAllowed = 1 + i%2
			p.ResourceVersion = ""
			if err := c.Tracker().Update(pdbGVR, p, "default"); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if _, err := d.DrainNode(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 3 {
		t.Fatalf("%d attempts, want 3", len(attempts))
	}
	// a timer never fires early: this holds however slow the machine is
	if gap := attempts[2].Sub(attempts[1]); gap < time.Second {
		t.Errorf("retried %s after the 429, before its Retry-After of 1s", gap)
	}
}

// TestPodLandingBack checks that pods arriving on the node during the drain
// (a workload tolerating the taint) are evicted too before Drained.
func TestPodLandingBack(t *testing.T) {
	var c *cluster
	c = newCluster(t, func(name string, _ int) error {
		if name == "web" {
			// the replacement is scheduled back onto the same node
			if err := c.Tracker().Add(newPod("default", "web-again", "n1")); err != nil {
				t.Error(err)
			}
		}
		return nil
	}, newPod("default", "web", "n1"))
	rec := &recorder{}
	res, err := fast(c, Options{}, rec).DrainNode(testCtx(t), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(podNames(res.Evicted), ","); got != "default/web,default/web-again" {
		t.Errorf("evicted = %s", got)
	}
	if len(rec.of(EventDrained, "")) != 1 {
		t.Errorf("events = %+v", rec.events)
	}
}

func TestDrainNodeCancel(t *testing.T) {
	c := newCluster(t, func(string, int) error { return pdbRefusal("web") },
		newPod("default", "web", "n1"), newPDB("default", "web", webSelector(), 0))
	rec := &recorder{}
	ctx, cancel := context.WithCancel(testCtx(t))
	rec.hook = func(ev Event) {
		if ev.Type == EventBlocked {
			cancel()
		}
	}
	d := fast(c, Options{}, rec)
	d.retryInterval = time.Hour
	_, err := d.DrainNode(ctx, "n1")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestDrainNodes(t *testing.T) {
	c := newCluster(t, func(name string, _ int) error {
		if name == "stuck" {
			return pdbRefusal("web")
		}
		return nil
	}, newPod("default", "a", "n1", labelled("app", "a")), newPod("default", "stuck", "n2"),
		newPod("default", "bare", "n3", bare), newPDB("default", "web", webSelector(), 0))
	// n2's timeout must leave n1 time to drain on a loaded machine
	d := fast(c, Options{Timeout: time.Second}, &recorder{})
	results, err := d.DrainNodes(testCtx(t), []string{"n1", "n2", "n3"})
	if len(results) != 3 || results[0].Node != "n1" || results[1].Node != "n2" || results[2].Node != "n3" {
		t.Fatalf("results = %+v", results)
	}
	if len(results[0].Evicted) != 1 {
		t.Errorf("n1 evicted %v", podNames(results[0].Evicted))
	}
	var f *PodEvictionFailure
	if !errors.As(err, &f) {
		t.Fatalf("err = %v, want a PodEvictionFailure", err)
	}
	// one line: the first node's failure in full, the other's node
	msg := err.Error()
	for _, want := range []string{`node "n2"`, `pod "default/stuck" blocked by PodDisruptionBudget "default/web"`, `; and 1 more (node "n3")`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, `"n1"`) || strings.Contains(msg, "\n") {
		t.Errorf("error names the drained node, or takes more than a line: %q", msg)
	}
	// each node's failure is still there for errors.As
	var both *NodeErrors
	if !errors.As(err, &both) || len(both.Errs) != 2 || !errors.As(both.Errs[1], &f) || f.Node != "n3" || !strings.Contains(f.Error(), `pod "default/bare"`) {
		t.Errorf("err = %#v, want both nodes' PodEvictionFailures", err)
	}
}

// TestNodeErrorsOnOneLine: the errors of several nodes' drains print on
// one line, the first whole and the others by node; one error is itself.
func TestNodeErrorsOnOneLine(t *testing.T) {
	a, b, c := errors.New("error on a"), errors.New("error on b"), errors.New("error on c")
	for _, tc := range []struct {
		name  string
		nodes []string
		errs  []error
		want  string
	}{
		{"none", []string{"a", "b"}, []error{nil, nil}, "<nil>"},
		{"one", []string{"a", "b"}, []error{nil, b}, "error on b"},
		{"three", []string{"a", "b", "c"}, []error{a, b, c}, `error on a; and 2 more (nodes "b", "c")`},
		{"one joined on two lines", []string{"a"}, []error{errors.Join(a, b)}, "error on a; error on b"},
		{"an interruption first", []string{"", "a", "b"}, []error{context.Canceled, nil, b}, `context canceled; and 1 more (node "b")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := joinNodeErrors(tc.nodes, tc.errs)
			if got := fmt.Sprint(err); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			for _, e := range tc.errs {
				if e != nil && !errors.Is(err, e) {
					t.Errorf("errors.Is(%v, %v) = false", err, e)
				}
			}
		})
	}
}

func TestPDBsForPod(t *testing.T) {
	pod := newPod("default", "web", "n1")
	tests := []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		want bool
	}{
		{"matching selector", newPDB("default", "p", webSelector(), 0), true},
		{"other labels", newPDB("default", "p", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, 0), false},
		{"empty selector matches the whole namespace", newPDB("default", "p", &metav1.LabelSelector{}, 0), true},
		{"nil selector matches nothing", newPDB("default", "p", nil, 0), false},
		{"other namespace never", newPDB("other", "p", &metav1.LabelSelector{}, 0), false},
		{"expression selector", newPDB("default", "p", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}, 0), true},
		{"invalid selector matches nothing", newPDB("default", "p", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: "Bogus"}}}, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PDBsForPod(pod, []policyv1.PodDisruptionBudget{*tt.pdb})
			if (len(got) == 1) != tt.want {
				t.Errorf("PDBsForPod = %d PDBs, want match %v", len(got), tt.want)
			}
		})
	}
}

func TestPodEvictionFailureError(t *testing.T) {
	web := PDBStatus{Namespace: "ns", Name: "web", CurrentHealthy: 2, DesiredHealthy: 2}
	tests := []struct {
		name string
		err  *PodEvictionFailure
		want string
	}{
		{
			name: "timeout",
			err: &PodEvictionFailure{Node: "n1", Timeout: 15 * time.Minute, Pods: []BlockedPod{
				{Namespace: "ns", Name: "a", Reason: ReasonPDB, PDBs: []PDBStatus{web}},
				{Namespace: "ns", Name: "b", Reason: ReasonTerminating},
			}},
			want: `PodEvictionFailure: node "n1": 2 pods still running after 15m0s: pod "ns/a" blocked by PodDisruptionBudget "ns/web" (disruptionsAllowed 0, currentHealthy 2, desiredHealthy 2); pod "ns/b" still terminating; use --force to delete them`,
		},
		{
			name: "refused",
			err: &PodEvictionFailure{Node: "n1", Pods: []BlockedPod{
				{Namespace: "ns", Name: "a", Reason: ReasonBare},
				{Namespace: "ns", Name: "b", Reason: ReasonEmptyDir},
			}},
			want: `PodEvictionFailure: node "n1": 2 pods cannot be evicted: pod "ns/a" not managed by a controller; pod "ns/b" uses emptyDir; use --force to delete them; use --delete-emptydir-data`,
		},
		{
			name: "still terminating after force",
			err: &PodEvictionFailure{Node: "n1", Timeout: time.Minute, Pods: []BlockedPod{
				{Namespace: "ns", Name: "a", Reason: ReasonTerminating},
			}},
			want: `PodEvictionFailure: node "n1": 1 pod still running after 1m0s: pod "ns/a" still terminating`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// informerSource is a PodSource over an informer of all pods, as the
// engine keeps one.
type informerSource struct{ inf cache.SharedIndexInformer }

func (s informerSource) Informer() cache.SharedIndexInformer { return s.inf }

func (s informerSource) PodsOn(node string) []*corev1.Pod {
	objs, _ := s.inf.GetIndexer().ByIndex("node", node)
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Pod))
	}
	return out
}

func TestDrainWithPodSource(t *testing.T) {
	tests := []struct {
		name        string
		landBack    bool
		wantEvicted string
		wantLists   int // of pods, after the source synced
	}{
		{name: "nothing lands back: the node is listed once", wantEvicted: "default/web", wantLists: 1},
		{name: "a pod lands back: the cache shows it and the node is listed again", landBack: true,
			wantEvicted: "default/web,default/web-again", wantLists: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c *cluster
			c = newCluster(t, func(name string, _ int) error {
				if tc.landBack && name == "web" {
					if err := c.Tracker().Add(newPod("default", "web-again", "n1")); err != nil {
						t.Error(err)
					}
				}
				return nil
			}, newPod("default", "web", "n1"), newPod("default", "other", "n2"))
			ctx := testCtx(t)
			inf := coreinformers.NewPodInformer(c, metav1.NamespaceAll, 0, cache.Indexers{"node": func(obj any) ([]string, error) {
				return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
			}})
			go inf.RunWithContext(ctx)
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("pod informer did not sync")
			}
			// the source's watch has no node selector: let the fake delete n1's pods
			close(c.watchedCh("n1"))
			c.ClearActions()
			rec := &recorder{}
			res, err := fast(c, Options{Pods: informerSource{inf}}, rec).DrainNode(ctx, "n1")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(podNames(res.Evicted), ","); got != tc.wantEvicted {
				t.Errorf("evicted = %s, want %s", got, tc.wantEvicted)
			}
			if got := c.verbs("watch", ""); got != 0 {
				t.Errorf("%d pod watches, want none besides the source's", got)
			}
			if got := c.verbs("list", ""); got != tc.wantLists {
				t.Errorf("%d pod lists, want %d", got, tc.wantLists)
			}
			if len(rec.of(EventDrained, "")) != 1 {
				t.Errorf("events = %+v", rec.events)
			}
		})
	}
}

// TestHold: Options.Hold decides when each pod's eviction may go out. A
// held pod is evicted only after its hold returns true, while the pods not
// held go at once; a hold that ends with the drain evicts nothing; a pod
// that leaves on its own while held ends its hold; deletes are not held.
func TestHold(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		// hold is Options.Hold for the pod "held"; c is the cluster, rec
		// the drain's events so far, cancel ends the drain
		hold        func(ctx context.Context, c *cluster, rec *recorder, cancel context.CancelFunc) bool
		wantErr     error
		wantEvicted string // pods evicted or deleted, in the order they went where ordered
		ordered     bool
		wantHolds   int
	}{
		{
			name: "released once the other pod is evicted: the held pod goes after it",
			hold: func(ctx context.Context, c *cluster, rec *recorder, _ context.CancelFunc) bool {
				for len(rec.of(EventEvicted, "free")) == 0 {
					select {
					case <-ctx.Done():
						return false
					case <-time.After(time.Millisecond):
					}
				}
				return true
			},
			wantEvicted: "default/free,default/held",
			ordered:     true,
			wantHolds:   1,
		},
		{
			name: "the drain ends while the pod is held: no eviction",
			hold: func(ctx context.Context, _ *cluster, rec *recorder, cancel context.CancelFunc) bool {
				for len(rec.of(EventEvicted, "free")) == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel()
				<-ctx.Done()
				return false
			},
			wantErr:     context.Canceled,
			wantEvicted: "default/free",
			wantHolds:   1,
		},
		{
			name: "the pod leaves on its own while held: its hold ends, nothing is evicted for it",
			hold: func(ctx context.Context, c *cluster, _ *recorder, _ context.CancelFunc) bool {
				if err := c.removePod("default", "held"); err != nil {
					t.Error(err)
				}
				<-ctx.Done()
				return true // a hold that ignores its context still evicts nothing
			},
			wantEvicted: "default/free",
			wantHolds:   1,
		},
		{
			name:        "deletes are not held",
			opts:        Options{DeleteInsteadOfEvict: true},
			hold:        func(context.Context, *cluster, *recorder, context.CancelFunc) bool { return false },
			wantEvicted: "default/free,default/held",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, nil, newPod("default", "held", "n1"), newPod("default", "free", "n1", labelled("app", "free")))
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			rec := &recorder{}
			var mu sync.Mutex
			holds := 0
			var order []string
			rec.hook = func(ev Event) {
				if ev.Type == EventEvicted || ev.Type == EventDeleted {
					mu.Lock()
					order = append(order, ev.Namespace+"/"+ev.Pod)
					mu.Unlock()
				}
			}
			opts := tt.opts
			opts.Hold = func(hctx context.Context, pod *corev1.Pod) bool {
				if pod.Name != "held" {
					return true
				}
				mu.Lock()
				holds++
				mu.Unlock()
				return tt.hold(hctx, c, rec, cancel)
			}
			_, err := fast(c, opts, rec).DrainNode(ctx, "n1")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if !tt.ordered {
				slices.Sort(order)
			}
			if got := strings.Join(order, ","); got != tt.wantEvicted {
				t.Errorf("evicted or deleted %q, want %q", got, tt.wantEvicted)
			}
			if holds != tt.wantHolds {
				t.Errorf("Hold asked %d times for the held pod, want %d", holds, tt.wantHolds)
			}
			if n := c.attemptsOf("held"); !tt.opts.DeleteInsteadOfEvict && n != strings.Count(tt.wantEvicted, "held") {
				t.Errorf("%d evictions of the held pod sent", n)
			}
		})
	}
}

// TestEvictLeavesRetriesToTheDrain checks that an eviction is one request:
// client-go would sleep through each 429's Retry-After and send it again,
// ten times, while the pod holds its PDB's turn, where the drain's PDB
// watch retries as soon as the budget allows.
func TestEvictLeavesRetriesToTheDrain(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []string
		body  policyv1.Eviction
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,`+
			`"message":"Cannot evict pod as it would violate the pod's disruption budget.",`+
			`"details":{"retryAfterSeconds":1,"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web is still being processed by the server."}]}}`)
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	d := New(client, Options{})
	err = d.evict(testCtx(t), *newPod("default", "web", "n1"), 30)
	if classify(err) != errBlocked {
		t.Errorf("error %v: classified %v, want a PDB refusal", err, classify(err))
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"POST /api/v1/namespaces/default/pods/web/eviction"}; !slices.Equal(calls, want) {
		t.Errorf("requests %q, want %q", calls, want)
	}
	if body.Name != "web" || body.DeleteOptions == nil || body.DeleteOptions.GracePeriodSeconds == nil || *body.DeleteOptions.GracePeriodSeconds != 30 {
		t.Errorf("eviction sent: %+v", body)
	}
}

// TestLostConnectionIsTransient: an eviction whose connection was lost,
// its HTTP/2 stream reset or its connection closed under it among them, is
// retried, not a failure of the drain.
func TestLostConnectionIsTransient(t *testing.T) {
	for _, err := range []error{
		&url.Error{Op: "Post", URL: "https://api/eviction", Err: errors.New("stream error: stream ID 173; INTERNAL_ERROR; received from peer")},
		&url.Error{Op: "Post", URL: "https://api/eviction", Err: io.ErrUnexpectedEOF},
		&url.Error{Op: "Post", URL: "https://api/eviction", Err: syscall.ECONNRESET},
		&url.Error{Op: "Post", URL: "https://api/eviction", Err: errors.New("http2: client connection force closed via ClientConn.Close")},
		&url.Error{Op: "Post", URL: "https://api/eviction", Err: errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=9, ErrCode=NO_ERROR, debug=\"\"")},
		&url.Error{Op: "Post", URL: "https://api/eviction", Err: io.EOF},
	} {
		if got := classify(err); got != errTransient {
			t.Errorf("%v: classified %v, want transient", err, got)
		}
	}
}

// TestDrainRounds covers what a drain meets after its first list: pods that
// land back on the node, and a terminating pod gone before the watch began.
func TestDrainRounds(t *testing.T) {
	landsBack := func(pod *corev1.Pod) func(c *cluster) func(string, int) error {
		return func(c *cluster) func(string, int) error {
			return func(name string, attempt int) error {
				switch {
				case name == "web":
					if err := c.Tracker().Add(pod); err != nil {
						t.Error(err)
					}
				case name == pod.Name && attempt == 1:
					return pdbRefusal("api")
				}
				return nil
			}
		}
	}
	tests := []struct {
		name  string
		objs  []runtime.Object
		evict func(c *cluster) func(name string, attempt int) error
		// setup runs on the cluster before the drain starts
		setup func(t *testing.T, c *cluster)
		check func(t *testing.T, c *cluster, rec *recorder, res Result, err error)
	}{
		{
			name:  "a bare pod landing back is refused without force",
			objs:  []runtime.Object{newPod("default", "web", "n1")},
			evict: landsBack(newPod("default", "late", "n1", bare)),
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				var f *PodEvictionFailure
				if !errors.As(err, &f) || len(f.Pods) != 1 || f.Pods[0].Name != "late" {
					t.Fatalf("err = %v, want PodEvictionFailure naming pod late", err)
				}
				if c.attemptsOf("late") != 0 || len(rec.of(EventDrained, "")) != 0 {
					t.Errorf("late evicted %d times, events %+v", c.attemptsOf("late"), rec.events)
				}
			},
		},
		{
			// the namespace had no budget watch: the first refusal starts one,
			// and its first list showing the budget allowing retries at once
			// (retryInterval is an hour, and the budget never changes)
			name: "a pod landing back in another namespace retries at once when its budget allows",
			objs: []runtime.Object{newPod("default", "web", "n1"),
				newPDB("other", "api", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}, 1)},
			evict: landsBack(newPod("other", "api", "n1", labelled("app", "api"))),
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(podNames(res.Evicted), ","); got != "default/web,other/api" || c.attemptsOf("api") != 2 {
					t.Errorf("evicted %s, api attempts %d", got, c.attemptsOf("api"))
				}
				if b := rec.of(EventBlocked, "api"); len(b) != 1 || len(b[0].PDBs) != 1 || b[0].PDBs[0].Name != "api" {
					t.Errorf("blocked events = %+v, want one naming PDB api", b)
				}
			},
		},
		{
			name:  "a failed list after the first round ends the drain with its error",
			objs:  []runtime.Object{newPod("default", "web", "n1")},
			evict: landsBack(newPod("default", "late", "n1")),
			setup: func(t *testing.T, c *cluster) {
				lists := 0
				c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					c.mu.Lock()
					defer c.mu.Unlock()
					// the drain's first list, then the watch's
					if lists++; lists <= 2 {
						return false, nil, nil
					}
					return true, nil, apierrors.NewServiceUnavailable("etcd is down")
				})
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err == nil || !strings.Contains(err.Error(), "etcd is down") {
					t.Fatalf("err = %v, want the list's error", err)
				}
				if c.attemptsOf("late") != 0 || len(rec.of(EventDrained, "")) != 0 {
					t.Errorf("late evicted %d times, events %+v", c.attemptsOf("late"), rec.events)
				}
			},
		},
		{
			name: "a terminating pod gone before the watch started",
			objs: []runtime.Object{newPod("default", "going", "n1", terminating)},
			setup: func(t *testing.T, c *cluster) {
				// the drain's first list still shows the pod; it leaves
				// before the watch lists the node
				var once sync.Once
				c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					var list runtime.Object
					var err error
					once.Do(func() {
						list, err = c.Tracker().List(podsGVR, corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
						if err == nil {
							err = c.Tracker().Delete(podsGVR, "default", "going")
						}
					})
					return list != nil || err != nil, list, err
				})
			},
			check: func(t *testing.T, c *cluster, rec *recorder, res Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if c.verbs("create", "eviction")+c.verbs("delete", "") != 0 || c.verbs("get", "") != 1 {
					t.Errorf("want one get and no eviction or delete, got actions %v", c.Actions())
				}
				if len(rec.of(EventGone, "going")) != 1 || len(rec.of(EventDrained, "")) != 1 {
					t.Errorf("events = %+v", rec.events)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, nil, tt.objs...)
			if tt.evict != nil {
				c.evict = tt.evict(c)
			}
			if tt.setup != nil {
				tt.setup(t, c)
			}
			rec := &recorder{}
			d := fast(c, Options{}, rec)
			d.retryInterval = time.Hour
			res, err := d.DrainNode(testCtx(t), "n1")
			tt.check(t, c, rec, res, err)
		})
	}
}

// cut is an eviction whose connection was lost before the API server
// answered, as client-go returns it.
func cut(err error) error {
	return &url.Error{Op: "Post", URL: "https://api:6443/api/v1/namespaces/default/pods/web/eviction", Err: err}
}

// TestEvictionsCutUntilTheTimeout: a pod whose evictions meet only lost
// connections until the drain timeout is no PodEvictionFailure (no PDB
// answered): the drain ends with an error that says the API server could
// not be reached while evicting it and that the same command continues.
// A PDB's refusal until the timeout stays a PodEvictionFailure.
func TestEvictionsCutUntilTheTimeout(t *testing.T) {
	for _, tt := range cutCases() {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, tt.evict, tt.objs...)
			if tt.force {
				c.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, lostConnections[0]
				})
			}
			d := fast(c, Options{Timeout: 250 * time.Millisecond, Force: tt.force}, &recorder{})
			_, err := d.DrainNode(testCtx(t), "n1")
			if err == nil {
				t.Fatal("drained although no eviction went through")
			}
			checkCutUntilTheTimeout(t, err, tt.unreachable)
			if deletes := c.verbs("delete", ""); (deletes != 0) != tt.force {
				t.Errorf("%d deletes with force %v", deletes, tt.force)
			}
		})
	}
}

// lostConnections are evictions cut before the API server answered, as
// client-go returns them.
var lostConnections = []error{cut(errors.New("http2: client connection force closed via ClientConn.Close")),
	cut(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), cut(io.EOF),
	cut(errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=9, ErrCode=NO_ERROR, debug=""`))}

// everyEvictionCut answers each eviction with a lost connection.
func everyEvictionCut(_ string, attempt int) error {
	return lostConnections[attempt%len(lostConnections)]
}

type cutCase struct {
	name  string
	objs  []runtime.Object
	evict func(name string, attempt int) error
	force bool // Options.Force, with every delete cut too
	// unreachable: the pods the error names as not reached; none wants
	// a PodEvictionFailure
	unreachable []string
}

func cutCases() []cutCase {
	pdb := newPDB("default", "web", webSelector(), 0)
	web, api := newPod("default", "web", "n1"), newPod("default", "api", "n1", labelled("app", "api"))
	return []cutCase{
		{name: "every eviction cut", objs: []runtime.Object{web, pdb}, evict: everyEvictionCut, unreachable: []string{"default/web"}},
		{
			name: "refused by its PDB, then every eviction cut",
			objs: []runtime.Object{web, pdb},
			evict: func(name string, attempt int) error {
				if attempt == 1 {
					return pdbRefusal("web")
				}
				return everyEvictionCut(name, attempt)
			},
			unreachable: []string{"default/web"},
		},
		{name: "two pods cut", objs: []runtime.Object{web, api}, evict: everyEvictionCut, unreachable: []string{"default/api", "default/web"}},
		{
			name: "with force, the deletes at the timeout cut too",
			objs: []runtime.Object{web, pdb}, evict: everyEvictionCut, force: true, unreachable: []string{"default/web"},
		},
		{
			name: "one pod refused by its PDB, another cut: PodEvictionFailure",
			objs: []runtime.Object{web, api, pdb},
			evict: func(name string, attempt int) error {
				if name == "web" {
					return pdbRefusal("web")
				}
				return everyEvictionCut(name, attempt)
			},
		},
	}
}

// checkCutUntilTheTimeout checks a drain's error: a PodEvictionFailure
// when unreachable is empty, else the one-line error naming those pods.
func checkCutUntilTheTimeout(t *testing.T, err error, unreachable []string) {
	t.Helper()
	var f *PodEvictionFailure
	if len(unreachable) == 0 {
		if !errors.As(err, &f) || !strings.Contains(err.Error(), `PodDisruptionBudget "default/web"`) {
			t.Errorf("err = %v, want a PodEvictionFailure naming the PDB", err)
		}
		return
	}
	var u *EvictionUnreachable
	if errors.As(err, &f) || !errors.As(err, &u) {
		t.Fatalf("err = %v, want EvictionUnreachable, no PodEvictionFailure: no PDB answered", err)
	}
	if !slices.Equal(u.Pods, unreachable) || u.Timeout != 250*time.Millisecond {
		t.Errorf("pods %q after %v, want %q after 250ms", u.Pods, u.Timeout, unreachable)
	}
	msg := err.Error()
	for _, want := range append([]string{`node "n1"`, "cannot reach the API server while evicting", "run the same command again to continue"}, unreachable...) {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	for _, not := range []string{"PodDisruptionBudget", "--force", "\n", "https://"} {
		if strings.Contains(msg, not) {
			t.Errorf("error %q has %q", msg, not)
		}
	}
}

func TestEvictionUnreachableError(t *testing.T) {
	reset := cut(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	tests := []struct {
		name string
		err  *EvictionUnreachable
		want string
	}{
		{
			name: "one pod",
			err:  &EvictionUnreachable{Node: "n1", Timeout: 15 * time.Minute, Pods: []string{"ns/a"}, Err: reset},
			want: `cannot reach the API server while evicting pod "ns/a" of node "n1" until the drain timeout (15m0s): read tcp: read: connection reset by peer; run the same command again to continue`,
		},
		{
			name: "more pods than are named",
			err: &EvictionUnreachable{Node: "n1", Timeout: time.Minute, Pods: []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e"},
				Err: cut(errors.New("http2: client connection force closed via ClientConn.Close"))},
			want: `cannot reach the API server while evicting pods "ns/a", "ns/b", "ns/c" and 2 more of node "n1" until the drain timeout (1m0s): http2: client connection force closed via ClientConn.Close; run the same command again to continue`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
