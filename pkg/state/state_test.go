package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestObjectName(t *testing.T) {
	tests := []struct{ group, want string }{
		{"workers", "nodeupgrade-workers"},
		{"-l pool=batch,zone in (a)", "nodeupgrade-"},
		{strings.Repeat("x", 80), "nodeupgrade-"},
	}
	for _, tc := range tests {
		t.Run(tc.group, func(t *testing.T) {
			got := ObjectName(tc.group)
			if !strings.HasPrefix(got, tc.want) || len(got) > 63 {
				t.Fatalf("ObjectName(%q) = %q", tc.group, got)
			}
			if tc.want == "nodeupgrade-" && got == ObjectName(tc.group+"x") {
				t.Fatalf("hashes collide for %q", tc.group)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := &Store{Client: fake.NewClientset(), Namespace: "kube-system"}
	if r, err := s.Load(ctx, "ng"); err != nil || r != nil {
		t.Fatalf("empty store: %v %v", r, err)
	}
	r := &Record{NodeGroup: "ng", Phase: "Drain", Batch: 2, Batches: 3, NodesTotal: 6, Done: []string{"a", "b"}}
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Done = append(r.Done, "c")
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "ng")
	if err != nil || got == nil || got.Phase != "Drain" || len(got.Done) != 3 || got.Left() != 3 {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	// An in-cluster run's saved plan carries the plugin's label too.
	plan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-ng-plan", Namespace: "kube-system",
		Labels: map[string]string{ManagedByLabel: managedBy}}, Data: map[string]string{"plan.json": "{}"}}
	if _, err := s.Client.CoreV1().ConfigMaps("kube-system").Create(ctx, plan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
}

func TestLock(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	lock := func(holder string) *Lock {
		return &Lock{Client: client, Namespace: "kube-system", Group: "ng", Holder: holder, Duration: 30 * time.Second}
	}
	if err := lock("other-host/1").Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if err := lock("other-host/2").Acquire(ctx); !errors.As(err, &held) || held.Holder != "other-host/1" {
		t.Fatalf("second run: got %v, want HeldError naming the holder", err)
	}
	if err := lock("other-host/1").Acquire(ctx); err != nil {
		t.Fatalf("the holder itself may take it again: %v", err)
	}
	// An expired lease is taken over.
	lease, _ := client.CoordinationV1().Leases("kube-system").Get(ctx, ObjectName("ng"), metav1.GetOptions{})
	old := metav1.NewMicroTime(time.Now().Add(-time.Minute))
	lease.Spec.RenewTime = &old
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := lock("other-host/2").Acquire(ctx); err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	if err := lock("other-host/2").Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock("other-host/3").Acquire(ctx); err != nil {
		t.Fatalf("released lease not free: %v", err)
	}
}

func TestDeadHolderOnThisHost(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	host := HolderIdentity()
	hostname, _, _ := strings.Cut(host, "/")
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(300)
	dead := hostname + "/999999999" // no such pid
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: ObjectName("ng")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &dead, RenewTime: &now, LeaseDurationSeconds: &seconds}}
	if _, err := client.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := (&Lock{Client: client, Namespace: "kube-system", Group: "ng", Holder: host, Duration: 30 * time.Second}).Acquire(ctx); err != nil {
		t.Fatalf("a killed run's lock on this host must not be waited out: %v", err)
	}
	alive := hostname + "/1" // init runs
	lease, _ = client.CoordinationV1().Leases("kube-system").Get(ctx, ObjectName("ng"), metav1.GetOptions{})
	lease.Spec.HolderIdentity = &alive
	lease.Spec.RenewTime = &now
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if err := (&Lock{Client: client, Namespace: "kube-system", Group: "ng", Holder: host, Duration: 30 * time.Second}).Acquire(ctx); !errors.As(err, &held) {
		t.Fatalf("a live process's lock must hold: %v", err)
	}
}

// configMapAPI makes the fake clientset's ConfigMaps keep resourceVersions
// as the API server does, which its tracker does not: every write gives
// the object a new one, and an update carrying another than the stored
// one is refused with a conflict. It counts the requests by verb.
type configMapAPI struct {
	mu        sync.Mutex
	verbs     map[string]int
	conflicts int  // updates refused for their resourceVersion
	paused    bool // not counting
}

func strictConfigMaps(client *fake.Clientset) *configMapAPI {
	api := &configMapAPI{verbs: map[string]int{}}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	tracker := client.Tracker()
	patch := k8stesting.ObjectReaction(tracker)
	version := 100
	stamp := func(cm *corev1.ConfigMap) {
		version++
		cm.ResourceVersion = strconv.Itoa(version)
	}
	// Reactors run under the fake's lock: version needs no other.
	client.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		api.mu.Lock()
		if !api.paused {
			api.verbs[a.GetVerb()]++
		}
		api.mu.Unlock()
		ns := a.GetNamespace()
		switch a.GetVerb() {
		case "create":
			cm := a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
			stamp(cm)
			if err := tracker.Create(gvr, cm, ns); err != nil {
				return true, nil, err
			}
			return true, cm, nil
		case "update":
			cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
			stored, err := tracker.Get(gvr, ns, cm.Name)
			if err != nil {
				return true, nil, err
			}
			if rv := stored.(*corev1.ConfigMap).ResourceVersion; cm.ResourceVersion != "" && cm.ResourceVersion != rv {
				api.mu.Lock()
				if !api.paused {
					api.conflicts++
				}
				api.mu.Unlock()
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), cm.Name, fmt.Errorf("resourceVersion %s is not the stored %s", cm.ResourceVersion, rv))
			}
			stamp(cm)
			if err := tracker.Update(gvr, cm, ns); err != nil {
				return true, nil, err
			}
			return true, cm, nil
		case "patch":
			_, obj, err := patch(a)
			if err != nil {
				return true, nil, err
			}
			cm := obj.(*corev1.ConfigMap)
			stamp(cm)
			if err := tracker.Update(gvr, cm, ns); err != nil {
				return true, nil, err
			}
			return true, cm, nil
		}
		return false, nil, nil
	})
	return api
}

// uncounted runs fn without counting its requests.
func (api *configMapAPI) uncounted(fn func()) {
	api.mu.Lock()
	api.paused = true
	api.mu.Unlock()
	defer func() {
		api.mu.Lock()
		api.paused = false
		api.mu.Unlock()
	}()
	fn()
}

// counts says the requests made, e.g. "create 1, update 2, get 0, conflicts 0".
func (api *configMapAPI) counts() string {
	api.mu.Lock()
	defer api.mu.Unlock()
	return fmt.Sprintf("create %d, update %d, get %d, conflicts %d", api.verbs["create"], api.verbs["update"], api.verbs["get"], api.conflicts)
}

// A Save updates the record from the ConfigMap its Store last wrote or
// read: no read before each write. Someone else's change in between (a
// request from another terminal) costs a conflict and a read, and is kept;
// a record deleted in between is created again.
func TestSaveWritesFromWhatItLastSaw(t *testing.T) {
	const ns, group = "kube-system", "ng"
	for _, tc := range []struct {
		name string
		// before runs before the first Save, between before each other one.
		before, between func(t *testing.T, ctx context.Context, s *Store)
		want            string // the requests of the Saves
		wantRequest     string // the request annotation left
	}{
		{
			name: "three saves in a row",
			want: "create 1, update 2, get 0, conflicts 0",
		},
		{
			name: "after a Load that found no record",
			before: func(t *testing.T, ctx context.Context, s *Store) {
				if r, err := s.Load(ctx, group); err != nil || r != nil {
					t.Fatalf("load: %v %v", r, err)
				}
			},
			want: "create 1, update 2, get 0, conflicts 0",
		},
		{
			name: "after a Load of a record another run wrote",
			before: func(t *testing.T, ctx context.Context, s *Store) {
				other := &Store{Client: s.Client, Namespace: ns}
				if err := other.Save(ctx, &Record{NodeGroup: group, Phase: "Earlier"}); err != nil {
					t.Fatal(err)
				}
				if r, err := s.Load(ctx, group); err != nil || r == nil {
					t.Fatalf("load: %v %v", r, err)
				}
			},
			want: "create 0, update 3, get 0, conflicts 0",
		},
		{
			// Nothing remembered, and the create finds the record there.
			name: "a record another run wrote, not loaded",
			before: func(t *testing.T, ctx context.Context, s *Store) {
				other := &Store{Client: s.Client, Namespace: ns}
				if err := other.Save(ctx, &Record{NodeGroup: group, Phase: "Earlier"}); err != nil {
					t.Fatal(err)
				}
			},
			want: "create 1, update 3, get 1, conflicts 0",
		},
		{
			name: "a request from another terminal in between",
			between: func(t *testing.T, ctx context.Context, s *Store) {
				other := &Requests{Store: &Store{Client: s.Client, Namespace: ns}, Group: group}
				if err := other.Send(ctx, RequestCancel); err != nil {
					t.Fatal(err)
				}
			},
			want:        "create 1, update 4, get 2, conflicts 2",
			wantRequest: RequestCancel,
		},
		{
			// The patch's answer is remembered: no conflict.
			name: "a request through the same Store in between",
			between: func(t *testing.T, ctx context.Context, s *Store) {
				if err := (&Requests{Store: s, Group: group}).Send(ctx, RequestComplete); err != nil {
					t.Fatal(err)
				}
			},
			want:        "create 1, update 2, get 0, conflicts 0",
			wantRequest: RequestComplete,
		},
		{
			name: "the record deleted in between",
			between: func(t *testing.T, ctx context.Context, s *Store) {
				if err := s.Client.CoreV1().ConfigMaps(ns).Delete(ctx, ObjectName(group), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want: "create 3, update 2, get 0, conflicts 0",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset()
			api := strictConfigMaps(client)
			s := &Store{Client: client, Namespace: ns}
			if tc.before != nil {
				api.uncounted(func() { tc.before(t, ctx, s) })
			}
			r := &Record{NodeGroup: group, Batches: 3}
			for batch := 1; batch <= 3; batch++ {
				if batch > 1 && tc.between != nil {
					api.uncounted(func() { tc.between(t, ctx, s) })
				}
				r.Phase, r.Batch = "Drain", batch
				if err := s.Save(ctx, r); err != nil {
					t.Fatalf("save %d: %v", batch, err)
				}
			}
			if got := api.counts(); got != tc.want {
				t.Errorf("saves made %s, want %s", got, tc.want)
			}
			cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, ObjectName(group), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := decode(cm); err != nil || got.Batch != 3 || got.Phase != "Drain" {
				t.Errorf("record saved %+v, %v; want the last save's, batch 3", got, err)
			}
			if got := cm.Annotations[RequestAnnotation]; got != tc.wantRequest {
				t.Errorf("request annotation %q, want %q", got, tc.wantRequest)
			}
			if cm.Annotations[GroupAnnotation] != group || cm.Labels[ManagedByLabel] != managedBy {
				t.Errorf("metadata lost: labels %v, annotations %v", cm.Labels, cm.Annotations)
			}
		})
	}
}

// TestCountedAfterARollback: once a run is rolled back in place, Done
// holds the upgrade's nodes and the rollback's; the counts are the
// rollback's, so a 9-node group never shows 10 done.
func TestCountedAfterARollback(t *testing.T) {
	three := 3
	for _, tc := range []struct {
		name            string
		rec             Record
		counted, wanted int
	}{
		{name: "upgrade", rec: Record{NodesTotal: 9, Done: []string{"a", "b"}}, counted: 2, wanted: 7},
		{name: "rollback of 3 upgraded, 2 rolled back", rec: Record{NodesTotal: 3, Done: []string{"a", "b", "c", "d", "e"}, RollbackFrom: &three}, counted: 2, wanted: 1},
		{name: "rollback just started", rec: Record{NodesTotal: 3, Done: []string{"a", "b", "c"}, RollbackFrom: &three}, counted: 0, wanted: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(tc.rec.Counted()); got != tc.counted || tc.rec.Left() != tc.wanted {
				t.Errorf("counted %d, left %d; want %d, %d", got, tc.rec.Left(), tc.counted, tc.wanted)
			}
		})
	}
}

// TestKilledHolderNotYetReapedIsDead: a run killed on this machine whose
// parent has not reaped it yet (a zombie) still answers signal 0; its lock
// is not waited out.
func TestKilledHolderNotYetReapedIsDead(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d", host, cmd.Process.Pid)
	if deadOnThisHost(holder) {
		t.Fatalf("a running holder %s is taken for dead", holder)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for !deadOnThisHost(holder) {
		if time.Now().After(deadline) {
			t.Fatalf("killed, unreaped holder %s is taken for alive", holder)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
