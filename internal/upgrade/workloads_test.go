package upgrade

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestWorkloadViewWatch: watch starts a cache per kind it knows, once,
// and ends with an error naming the kinds when a cache cannot be set up
// or is not listed in time; a refusal of the API server ends it at once.
func TestWorkloadViewWatch(t *testing.T) {
	tests := []struct {
		name  string
		kinds []string
		// listErr, when not nil, answers every list of deployments
		listErr error
		// started starts the factory's Deployment informer before the watch
		started bool
		wantErr string // in the error; "" for none
		wantN   int    // caches kept
	}{
		{name: "deployments and replicasets", kinds: []string{"Deployment", "ReplicaSet"}, wantN: 2},
		{name: "a kind without a cache is passed over", kinds: []string{"Job", "StatefulSet"}, wantN: 1},
		{name: "a list that keeps failing", kinds: []string{"Deployment"}, listErr: apierrors.NewInternalError(errors.New("etcd is down")),
			wantErr: "error when listing Deployments: context deadline exceeded"},
		{name: "a list refused", kinds: []string{"Deployment"}, listErr: apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("no RBAC")),
			wantErr: "cannot wait for the evicted workloads to be Ready: listing Deployments: "},
		{name: "an informer started before", kinds: []string{"Deployment"}, started: true,
			wantErr: "error when watching Deployments: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.listErr != nil {
				client.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.listErr })
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			defer factory.Shutdown() // after stop is closed: it waits for the informers
			stop := make(chan struct{})
			defer close(stop)
			if tc.started {
				go factory.Apps().V1().Deployments().Informer().Run(stop)
				for !factory.Apps().V1().Deployments().Informer().HasSynced() {
					time.Sleep(time.Millisecond)
				}
			}
			v := newWorkloadView(factory, stop)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			for range 2 { // the second watch finds the caches there
				err := v.watch(ctx, tc.kinds)
				if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("watch: %v, want %q", err, tc.wantErr)
				}
			}
			if tc.wantErr == "" && len(v.kinds) != tc.wantN {
				t.Errorf("%d caches, want %d", len(v.kinds), tc.wantN)
			}
		})
	}
}
