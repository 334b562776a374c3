package karpenter

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestDynamicForPath: behind Rancher (/k8s/clusters/<id>) or an API
// gateway the kubeconfig's server has a path; the API server behind it
// answers only under that path, so a client that keeps scheme and host
// alone finds no NodePool.
func TestDynamicForPath(t *testing.T) {
	for _, prefix := range []string{"", "/k8s/clusters/c-m-abc12", "/gateway/eu/"} {
		t.Run("server path "+prefix, func(t *testing.T) {
			base := strings.TrimSuffix(prefix, "/")
			var mu sync.Mutex
			var unserved []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// What the gateway forwards: only paths under its prefix.
				if r.URL.Path != base+"/apis/karpenter.sh/v1/nodepools/np" {
					mu.Lock()
					unserved = append(unserved, r.URL.Path)
					mu.Unlock()
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(pool(t, userBudgets, nil).Object)
			}))
			defer srv.Close()
			client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL + prefix})
			if err != nil {
				t.Fatal(err)
			}
			dc, err := dynamicFor(client)
			if err != nil {
				t.Fatal(err)
			}
			np, err := readPool(context.Background(), dc, "np")
			if err != nil {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%v (requested %v)", err, unserved)
			}
			if np.NodeClass != "EC2NodeClass/al2023" {
				t.Errorf("NodeClass %q, want EC2NodeClass/al2023", np.NodeClass)
			}
		})
	}
}
