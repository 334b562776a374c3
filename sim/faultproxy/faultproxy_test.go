package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestFaults: each kind of fault reaches the client as the API server or
// a lost connection would make it, and a reset after forwarding reaches
// the server first.
func TestFaults(t *testing.T) {
	var served atomic.Int32
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	}))
	t.Cleanup(upstream.Close)
	for _, tc := range []struct {
		kind       Kind
		wantStatus int // 0: no answer
		wantServed int32
		retryAfter string
	}{
		{"", 200, 1, ""},
		{Status500, 500, 0, ""},
		{Status503, 503, 0, ""},
		{Throttled, 429, 0, "1"},
		{Throttled0, 429, 0, ""},
		{ResetBefore, 0, 0, ""},
		{ResetAfter, 0, 1, ""},
		{ConnClosed, 0, 0, ""},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			served.Store(0)
			rates := map[Kind]float64{}
			if tc.kind != "" {
				rates[tc.kind] = 1
			}
			p, err := Start(Options{Upstream: &rest.Config{Host: upstream.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, Rates: rates, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := p.WriteKubeconfig(path); err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatal(err)
			}
			rt, err := rest.TransportFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodGet, p.URL()+"/api/v1/namespaces/default", nil)
			resp, err := rt.RoundTrip(req)
			got := 0
			if err == nil {
				got = resp.StatusCode
				if ra := resp.Header.Get("Retry-After"); ra != tc.retryAfter {
					t.Errorf("Retry-After %q, want %q", ra, tc.retryAfter)
				}
				_ = resp.Body.Close()
			}
			if got != tc.wantStatus || served.Load() != tc.wantServed {
				t.Errorf("status %d (%v), server saw %d; want %d and %d", got, err, served.Load(), tc.wantStatus, tc.wantServed)
			}
			if n, faults := p.Counts(); n != 1 || (tc.kind != "" && faults[tc.kind] != 1) {
				t.Errorf("counted %d requests, faults %v", n, faults)
			}
		})
	}
}

// TestRoutes: a route's rates replace the proxy's for the requests it
// matches, and its faults are counted apart.
func TestRoutes(t *testing.T) {
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	}))
	t.Cleanup(upstream.Close)
	p, err := Start(Options{
		Upstream: &rest.Config{Host: upstream.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
		Seed:     1,
		Routes: []Route{
			{Name: "evictions", Match: Evictions, Rates: map[Kind]float64{ConnClosed: 1}},
			{Name: "node pods", Match: NodePodLists, Rates: map[Kind]float64{ResetBefore: 1}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	rt, err := rest.TransportFor(&rest.Config{Host: p.URL(), TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		answered     bool
	}{
		{http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", false},
		{http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&watch=true", true},
		{http.MethodGet, "/api/v1/pods", true},
		{http.MethodPost, "/api/v1/namespaces/default/pods/web/eviction", false},
		{http.MethodDelete, "/api/v1/namespaces/default/pods/web", true},
	} {
		req, _ := http.NewRequest(tc.method, p.URL()+tc.path, nil)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		if (err == nil) != tc.answered {
			t.Errorf("%s %s: error %v, want answered %v", tc.method, tc.path, err, tc.answered)
		}
	}
	for name, kind := range map[string]Kind{"evictions": ConnClosed, "node pods": ResetBefore} {
		if n, faults := p.RouteCounts(name); n != 1 || faults[kind] != 1 {
			t.Errorf("route %q: %d requests, faults %v; want 1 and one %s", name, n, faults, kind)
		}
	}
}
