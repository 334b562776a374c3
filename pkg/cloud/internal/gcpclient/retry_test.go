package gcpclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// googleError is an error answer in Google's JSON shape, with a reason.
func googleError(code int, reason string) string {
	return fmt.Sprintf(`{"error":{"code":%d,"message":"m","errors":[{"reason":%q,"message":"m"}]}}`, code, reason)
}

func TestTransportRetries(t *testing.T) {
	const ok = 200
	for _, tc := range []struct {
		name     string
		api      API
		method   string
		path     string
		answers  []int // HTTP codes in turn; the last repeats
		reason   string
		attempts int
		code     int
		// requestID: a requestId is sent, the same on every attempt.
		requestID bool
	}{
		{name: "a read through 503s", api: Container, method: "GET", path: "/v1/x", answers: []int{503, 503, ok}, attempts: 3, code: ok},
		{name: "a read through 500, 502, 504", api: Compute, method: "GET", path: "/compute/v1/x", answers: []int{500, 502, 504, ok}, attempts: 4, code: ok},
		{name: "a read gives up after the attempts", api: Container, method: "GET", path: "/v1/x", answers: []int{500}, attempts: maxAttempts, code: 500},
		{name: "not found is final", api: Compute, method: "GET", path: "/compute/v1/x", answers: []int{404}, attempts: 1, code: 404},
		{name: "a Compute insert carries one requestId", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers", answers: []int{503, ok}, attempts: 2, code: ok, requestID: true},
		{name: "Compute's rate limit is 403 rateLimitExceeded", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers/g/resize", answers: []int{403, ok}, reason: "rateLimitExceeded", attempts: 2, code: ok, requestID: true},
		{name: "userRateLimitExceeded too", api: Compute, method: "GET", path: "/compute/v1/x", answers: []int{403, ok}, reason: "userRateLimitExceeded", attempts: 2, code: ok},
		{name: "403 forbidden is final", api: Compute, method: "GET", path: "/compute/v1/x", answers: []int{403, ok}, reason: "forbidden", attempts: 1, code: 403},
		{name: "Compute's POST reads carry no requestId", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers/g/listManagedInstances", answers: []int{502, ok}, attempts: 2, code: ok},
		{name: "a GKE change is not sent again after a 503", api: Container, method: "PUT", path: "/v1/projects/p/locations/l/clusters/c/nodePools/n", answers: []int{503, ok}, attempts: 1, code: 503},
		{name: "a GKE change refused for its rate is", api: Container, method: "PUT", path: "/v1/projects/p/locations/l/clusters/c/nodePools/n", answers: []int{429, ok}, attempts: 2, code: ok},
		{name: "testIamPermissions is a read", api: ResourceManager, method: "POST", path: "/v1/projects/p:testIamPermissions", answers: []int{503, ok}, attempts: 2, code: ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var ids, bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				b, _ := io.ReadAll(r.Body)
				ids, bodies = append(ids, r.URL.Query().Get("requestId")), append(bodies, string(b))
				code := tc.answers[min(len(ids), len(tc.answers))-1]
				w.WriteHeader(code)
				if code >= 400 {
					fmt.Fprint(w, googleError(code, tc.reason))
				}
			}))
			defer srv.Close()
			c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, API: tc.api, Attempts: maxAttempts, Backoff: time.Millisecond}}
			req, _ := http.NewRequestWithContext(context.Background(), tc.method, srv.URL+tc.path+"?alt=json", strings.NewReader(`{"a":1}`))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || len(ids) != tc.attempts {
				t.Fatalf("answer %d after %d attempts, want %d after %d", resp.StatusCode, len(ids), tc.code, tc.attempts)
			}
			if tc.code >= 400 && !strings.Contains(string(body), `"code"`) {
				t.Errorf("the final error's body is lost: %q", body)
			}
			for i := range ids {
				if (ids[i] != "") != tc.requestID || ids[i] != ids[0] || bodies[i] != `{"a":1}` {
					t.Errorf("attempt %d: requestId %q (first %q), body %q", i+1, ids[i], ids[0], bodies[i])
				}
			}
		})
	}
}

func TestTransportStopsWithTheContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, API: Container, Attempts: 100, Backoff: time.Second}}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	start := time.Now()
	if _, err := c.Do(req); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("want the context's error at once, got %v after %s", err, time.Since(start))
	}
}
