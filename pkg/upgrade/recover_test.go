package upgrade

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func deployment(name string, available int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: new(int32(3))},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, AvailableReplicas: available},
	}
}

// TestWaitOwnersReadyWaitsForAllAtOnce: every workload is watched before any
// is ready, so a batch waits as long as its slowest workload, not the sum.
func TestWaitOwnersReadyWaitsForAllAtOnce(t *testing.T) {
	tests := []struct {
		name   string
		owners []string
	}{
		{"two", []string{"a", "b"}},
		{"more than the watches at once", func() []string {
			var names []string
			for i := range ownerWaits + 3 {
				names = append(names, string(rune('a'+i%26))+string(rune('a'+i/26)))
			}
			return names
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			var owners []Owner
			for _, n := range tc.owners {
				objs = append(objs, deployment(n, 2))
				owners = append(owners, Owner{Kind: "Deployment", Namespace: "ns", Name: n})
			}
			client := fake.NewClientset(objs...)
			var mu sync.Mutex
			watchers := map[string]*watch.FakeWatcher{}
			opened := make(chan struct{}, len(owners))
			client.PrependWatchReactor("deployments", func(a k8stesting.Action) (bool, watch.Interface, error) {
				w := watch.NewFake()
				mu.Lock()
				watchers[a.(k8stesting.WatchActionImpl).WatchRestrictions.Fields.String()] = w
				mu.Unlock()
				opened <- struct{}{}
				return true, w, nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- WaitOwnersReady(ctx, client, owners, nil, nil) }()
			// The first ownerWaits watches open with none of them ready.
			for range min(len(owners), ownerWaits) {
				select {
				case <-opened:
				case err := <-done:
					t.Fatalf("returned %v before the workloads were ready", err)
				case <-ctx.Done():
					t.Fatal("the workloads were not all watched at once")
				}
			}
			ready := map[string]bool{}
			for len(ready) < len(owners) {
				mu.Lock()
				for sel, w := range watchers {
					if !ready[sel] {
						ready[sel] = true
						w.Modify(deployment(sel[len("metadata.name="):], 3))
					}
				}
				mu.Unlock()
				select {
				case <-opened:
				case err := <-done:
					if len(ready) < len(owners) {
						t.Fatalf("returned %v with %d of %d workloads ready", err, len(ready), len(owners))
					}
					done <- err
				case <-ctx.Done():
					t.Fatal("timed out")
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestControllerCacheLooksUpEachReplicaSetOnce: the recovery waits of a
// run's batches ask for a ReplicaSet's Deployment once, not once per batch.
func TestControllerCacheLooksUpEachReplicaSetOnce(t *testing.T) {
	rs := func(name, deploy string) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if deploy != "" {
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deploy, Controller: new(true)}}
		}
		return r
	}
	bare := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare", Generation: 1}, Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(1))},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, AvailableReplicas: 1}}
	tests := []struct {
		name     string
		cache    *ControllerCache
		wantGets int
	}{
		{"with a cache", &ControllerCache{}, 3},
		{"without", nil, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(rs("web-1", "web"), rs("api-1", "api"), bare, deployment("web", 3), deployment("api", 3))
			gets := 0
			client.PrependReactor("get", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
				gets++
				return false, nil, nil
			})
			owners := []Owner{{Kind: "ReplicaSet", Namespace: "ns", Name: "web-1"}, {Kind: "ReplicaSet", Namespace: "ns", Name: "api-1"}, {Kind: "ReplicaSet", Namespace: "ns", Name: "bare"}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for batch := range 3 {
				if err := WaitOwnersReady(ctx, client, owners, tc.cache, nil); err != nil {
					t.Fatalf("batch %d: %v", batch+1, err)
				}
			}
			if gets != tc.wantGets {
				t.Errorf("%d GETs of ReplicaSets over 3 batches, want %d", gets, tc.wantGets)
			}
		})
	}
}
