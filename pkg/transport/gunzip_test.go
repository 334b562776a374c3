package transport

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestResponsesAreGunzippedByKlauspost: the server is asked for gzip as Go's
// transport would ask, its gzipped answers are read through gunzipBody, and
// --disable-compression asks for none.
func TestResponsesAreGunzippedByKlauspost(t *testing.T) {
	const namespace = `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`
	tests := []struct {
		name                string
		disableCompression  bool
		serverZips          bool
		wantAsked, wantBody bool // gzip asked for; body read through gunzipBody
	}{
		{"gzipped answer", false, true, true, true},
		{"plain answer to a request for gzip", false, false, true, false},
		{"--disable-compression", true, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Bool
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Store(strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"))
				w.Header().Set("Content-Type", "application/json")
				if !tc.serverZips || !asked.Load() {
					_, _ = io.WriteString(w, namespace)
					return
				}
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				_, _ = io.WriteString(zw, namespace)
				_ = zw.Close()
			}))
			t.Cleanup(srv.Close)
			cfg := &rest.Config{Host: srv.URL, DisableCompression: tc.disableCompression, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
			GunzipFaster(cfg)
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ns, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
			if err != nil || ns.Name != "default" {
				t.Fatalf("got %v, %v; want namespace \"default\"", ns, err)
			}
			if asked.Load() != tc.wantAsked {
				t.Errorf("gzip asked for: %v, want %v", asked.Load(), tc.wantAsked)
			}
			rt, err := rest.TransportFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/default", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if _, ours := resp.Body.(*gunzipBody); ours != tc.wantBody {
				t.Errorf("body %T, want gunzipBody: %v", resp.Body, tc.wantBody)
			}
			if b, err := io.ReadAll(resp.Body); err != nil || string(b) != namespace {
				t.Errorf("body %q, %v; want the namespace", b, err)
			}
		})
	}
}
