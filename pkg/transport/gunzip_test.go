package transport

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
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
// transport would ask, its gzipped answers are gunzipped by gzhttp, and
// --disable-compression asks for none.
func TestResponsesAreGunzippedByKlauspost(t *testing.T) {
	const namespace = `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`
	tests := []struct {
		name                string
		disableCompression  bool
		serverZips          bool
		wantAsked, wantBody bool // gzip asked for; body gunzipped by gzhttp
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
			// Go's own gunzipping is off (DisableCompression): a body
			// marked uncompressed was gunzipped by gzhttp
			if resp.Uncompressed != tc.wantBody {
				t.Errorf("body gunzipped by gzhttp: %v, want %v", resp.Uncompressed, tc.wantBody)
			}
			if b, err := io.ReadAll(resp.Body); err != nil || string(b) != namespace {
				t.Errorf("body %q, %v; want the namespace", b, err)
			}
		})
	}
}

// countingBody is a response body whose data has all arrived: each Read
// returns as much as it is asked for, as an HTTP/2 body does with its
// stream's buffer full, and is counted.
type countingBody struct {
	r     io.Reader
	reads int
}

func (c *countingBody) Read(p []byte) (int, error) { c.reads++; return c.r.Read(p) }
func (c *countingBody) Close() error               { return nil }

// TestGzippedBodyIsReadInLargeChunks: the gunzipper's own 4 KiB reads would
// each send the server a flow-control frame over HTTP/2; a gzipped body is
// read bodyReadSize at a time instead.
func TestGzippedBodyIsReadInLargeChunks(t *testing.T) {
	// random bytes do not compress: the gzipped body is as large
	plain := make([]byte, 4<<20)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(plain)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	for _, tc := range []struct {
		name string
		read func(r io.Reader) ([]byte, error)
	}{
		{"read whole", io.ReadAll},
		{"read 4 KiB at a time", func(r io.Reader) ([]byte, error) {
			var out bytes.Buffer
			_, err := io.CopyBuffer(&out, struct{ io.Reader }{r}, make([]byte, 4<<10))
			return out.Bytes(), err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &countingBody{r: bytes.NewReader(zipped.Bytes())}
			rt := gunzipping(roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Encoding": {"gzip"}}, Body: body}, nil
			}))
			req, _ := http.NewRequest(http.MethodGet, "https://example.com/api/v1/pods", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := tc.read(resp.Body)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("gunzipped %d bytes, %v; want the %d written", len(got), err, len(plain))
			}
			// one more read finds the end
			if want := zipped.Len()/bodyReadSize + 2; body.reads > want {
				t.Errorf("%d reads of a %d-byte gzipped body, want at most %d (%d bytes each)", body.reads, zipped.Len(), want, bodyReadSize)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRetriedRequestIsGunzippedToo: a request sent again as it is (as a
// retrying transport does) is gunzipped again; the Accept-Encoding gzhttp
// adds to the first try must not make it leave the second answer gzipped.
func TestRetriedRequestIsGunzippedToo(t *testing.T) {
	const namespace = `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, namespace)
		_ = zw.Close()
	}))
	t.Cleanup(srv.Close)
	rt := gunzipping(srv.Client().Transport)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/default", nil)
	for try := 1; try <= 2; try++ {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(b) != namespace {
			t.Errorf("try %d: body %q, %v; want the namespace", try, b, err)
		}
	}
	if h := req.Header.Get("Accept-Encoding"); h != "" {
		t.Errorf("the caller's request was changed: Accept-Encoding %q", h)
	}
}
