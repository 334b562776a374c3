package gke

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
)

// TestClusterOf: the cluster is read from the metadata GKE sets on the
// nodes' instances; a node whose instance is gone (an upgrade deleted it,
// its Node object not yet) is passed over.
func TestClusterOf(t *testing.T) {
	alive := map[string]bool{"alive": true}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		if !alive[name] {
			http.Error(w, `{"error":{"code":404,"message":"not found"}}`, http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"name":%q,"metadata":{"items":[{"key":"cluster-name","value":"c1"},{"key":"cluster-location","value":"us-central1"}]}}`, name)
	}))
	defer srv.Close()
	svc, err := compute.NewService(context.Background(), option.WithEndpoint(srv.URL+"/compute/v1/"), option.WithoutAuthentication(), option.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	c := &clients{compute: svc}
	node := func(instance string) corev1.Node {
		return corev1.Node{Spec: corev1.NodeSpec{ProviderID: "gce://p1/us-central1-a/" + instance}}
	}
	for _, tc := range []struct {
		name    string
		nodes   []corev1.Node
		want    string
		wantErr string
	}{
		{name: "the first node's instance", nodes: []corev1.Node{node("alive"), node("gone")}, want: "p1/c1/us-central1"},
		{name: "the first node's instance is gone", nodes: []corev1.Node{node("gone"), node("alive")}, want: "p1/c1/us-central1"},
		{name: "every instance is gone", nodes: []corev1.Node{node("gone"), node("gone-too")}, wantErr: `instance "gone" not found in project "p1", zone "us-central1-a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			project, cluster, location, err := c.clusterOf(context.Background(), tc.nodes, "", "")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := project + "/" + cluster + "/" + location; got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
