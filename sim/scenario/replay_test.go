package scenario

import (
	"context"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestReplayListsAsTheAPIServer lists the replay of a small plan-scale
// through client-go, in both encodings: every page arrives and chains to
// the next, unfiltered pages count what is left and filtered ones do not,
// big pages come gzipped, and what the replay does not hold is NotFound.
func TestReplayListsAsTheAPIServer(t *testing.T) {
	p := PlanScale{Name: "replay", Nodes: 30, PodsPerNode: 10, Replicas: 10, Namespaces: 3}
	replay, err := StartPlanScaleReplay(p, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	const pods, page = 300, 40

	for _, enc := range []struct {
		name        string
		contentType string
	}{
		{"protobuf", kruntime.ContentTypeProtobuf},
		{"json", kruntime.ContentTypeJSON},
	} {
		t.Run(enc.name, func(t *testing.T) {
			c, err := kubernetes.NewForConfig(&rest.Config{Host: replay.URL, QPS: -1,
				ContentConfig: rest.ContentConfig{ContentType: enc.contentType, AcceptContentTypes: enc.contentType}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, tc := range []struct {
				name          string
				fieldSelector string
			}{
				{"unfiltered", ""},
				{"running", "status.phase!=Succeeded,status.phase!=Failed"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					opts := metav1.ListOptions{Limit: page, FieldSelector: tc.fieldSelector}
					seen := map[string]bool{}
					for n := 1; ; n++ {
						list, err := c.CoreV1().Pods("").List(ctx, opts)
						if err != nil {
							t.Fatalf("page %d: %v", n, err)
						}
						for _, p := range list.Items {
							seen[p.Namespace+"/"+p.Name] = true
						}
						if list.ResourceVersion == "" {
							t.Errorf("page %d has no resourceVersion", n)
						}
						left := pods - len(seen)
						switch rem := list.RemainingItemCount; {
						case tc.fieldSelector != "" && rem != nil:
							t.Errorf("page %d of a filtered list has remainingItemCount %d", n, *rem)
						case tc.fieldSelector == "" && left > 0 && (rem == nil || *rem != int64(left)):
							t.Errorf("page %d: remainingItemCount %v, want %d", n, rem, left)
						}
						if list.Continue == "" {
							if left != 0 || n != pods/page+1 {
								t.Errorf("the list ended on page %d with %d of %d pods", n, len(seen), pods)
							}
							break
						}
						if n > pods/page {
							t.Fatalf("page %d still has a continue token", n)
						}
						opts.Continue = list.Continue
					}
				})
			}
			for _, count := range []struct {
				kind string
				list func() (kruntime.Object, error)
				want int
			}{
				{"nodes", func() (kruntime.Object, error) { return c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}) }, p.Nodes},
				{"pods of a namespace", func() (kruntime.Object, error) {
					return c.CoreV1().Pods("replay-1").List(ctx, metav1.ListOptions{Limit: 7})
				}, 7},
				{"namespaces (the plan's and the system's)", func() (kruntime.Object, error) {
					return c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
				}, p.Namespaces + 4},
				{"deployments", func() (kruntime.Object, error) { return c.AppsV1().Deployments("").List(ctx, metav1.ListOptions{}) }, 30},
				{"replicasets", func() (kruntime.Object, error) { return c.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{}) }, 30},
				{"pdbs", func() (kruntime.Object, error) {
					return c.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
				}, 30},
				{"statefulsets", func() (kruntime.Object, error) { return c.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{}) }, 0},
			} {
				obj, err := count.list()
				if err != nil {
					t.Errorf("list %s: %v", count.kind, err)
					continue
				}
				if n := len(itemsOf(t, obj)); n != count.want {
					t.Errorf("%s: %d, want %d", count.kind, n, count.want)
				}
			}
			if _, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "nodeupgrade-replay", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get of a configmap: %v, want NotFound", err)
			}
			if _, err := c.CoordinationV1().Leases("kube-system").Get(ctx, "nodeupgrade-replay", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get of a lease: %v, want NotFound", err)
			}
			if _, err := c.CoreV1().Pods("replay-0").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); !apierrors.IsMethodNotSupported(err) {
				t.Errorf("create of a pod: %v, want MethodNotAllowed", err)
			}
		})
	}

	for _, tc := range []struct {
		name, query string
		gzip        bool
	}{
		{"all pods, over 128 KiB", "", true},
		{"one pod", "?limit=1", false},
	} {
		t.Run("gzip/"+tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, replay.URL+"/api/v1/pods"+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			// set by hand, the transport leaves the body compressed
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzip || resp.StatusCode != http.StatusOK {
				t.Errorf("status %d, gzipped %v, want %v", resp.StatusCode, got, tc.gzip)
			}
		})
	}
}

func itemsOf(t *testing.T, list kruntime.Object) []kruntime.Object {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// TestReplayManagedFieldsAreTheFieldManagers checks the shortcuts the
// replay takes with the field manager (the managedFields of a
// Deployment's pods computed once, status updates shown without the spec)
// against the field manager run on every write as a whole.
func TestReplayManagedFieldsAreTheFieldManagers(t *testing.T) {
	p := PlanScale{Name: "fields", Nodes: 10, PodsPerNode: 6, Replicas: 6, Namespaces: 2}
	fast, err := buildPlanScaleReplay(p, false)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := buildPlanScaleReplay(p, true)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ manager, operation, apiVersion, subresource, fields string }
	managedFields := func(objects replayObjects) map[string][]entry {
		byObject := map[string][]entry{}
		for _, res := range newReplayHandler(objects, nil).resources {
			for i, key := range res.keys {
				o, err := res.object(i)
				if err != nil {
					t.Fatal(err)
				}
				m := o.(metav1.Object)
				for _, e := range m.GetManagedFields() {
					byObject[key] = append(byObject[key], entry{e.Manager, string(e.Operation), e.APIVersion, e.Subresource, e.FieldsV1.GetRawString()})
				}
			}
		}
		return byObject
	}
	want, got := managedFields(exact), managedFields(fast)
	if len(got) != len(want) || len(want) < p.Nodes*p.PodsPerNode {
		t.Fatalf("%d objects, want %d", len(got), len(want))
	}
	for key, w := range want {
		if !slices.Equal(got[key], w) {
			t.Errorf("%s: managedFields\n%v\nwant\n%v", key, got[key], w)
		}
	}
}

// TestReplayServesTLS lists through client-go over https, which it speaks
// HTTP/2 as kube-apiserver: client-go's own transport, unlike over plain
// http, leaves compression off when the config says so.
func TestReplayServesTLS(t *testing.T) {
	p := PlanScale{Name: "tls", Nodes: 10, PodsPerNode: 40, Replicas: 10, Namespaces: 2}
	replay, err := StartPlanScaleReplay(p, ReplayOptions{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	for _, tc := range []struct {
		name               string
		disableCompression bool
		gzip               bool
	}{
		{"compressed", false, true},
		{"compression disabled", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &rest.Config{Host: replay.URL, TLSClientConfig: rest.TLSClientConfig{CAData: replay.CAData}, DisableCompression: tc.disableCompression}
			c, err := kubernetes.NewForConfig(rc)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if err != nil || len(pods.Items) != p.Nodes*p.PodsPerNode {
				t.Fatalf("listed %d pods, want %d: %v", len(pods.Items), p.Nodes*p.PodsPerNode, err)
			}
			hc, err := rest.HTTPClientFor(rc)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Get(replay.URL + "/api/v1/pods")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// Go's transport gunzips what it asked to be gzipped
			if resp.ProtoMajor != 2 || resp.Uncompressed != tc.gzip {
				t.Errorf("%s, gunzipped by the transport %v, want HTTP/2, %v", resp.Proto, resp.Uncompressed, tc.gzip)
			}
		})
	}
}
