package gcpclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
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
		{name: "a Compute change that takes no requestId gets none, and is not sent again after a 503", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers/g/applyUpdatesToInstances", answers: []int{503, ok}, attempts: 1, code: 503},
		{name: "nor is setIamPolicy", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instances/i/setIamPolicy", answers: []int{500, ok}, attempts: 1, code: 500},
		{name: "a Compute change without requestId refused for its rate is", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instances/i/setIamPolicy", answers: []int{403, ok}, reason: "rateLimitExceeded", attempts: 2, code: ok},
		{name: "Compute's testIamPermissions is a read", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instances/i/testIamPermissions", answers: []int{503, ok}, attempts: 2, code: ok},
		{name: "a POST Compute does not know is not sent again", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers/g/listSomethingNew", answers: []int{503, ok}, attempts: 1, code: 503},
		{name: "testIamPermissions is a read", api: ResourceManager, method: "POST", path: "/v1/projects/p:testIamPermissions", answers: []int{503, ok}, attempts: 2, code: ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, sent := answering(t, tc.answers, tc.reason)
			c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, API: tc.api, Attempts: maxAttempts, Backoff: time.Millisecond}}
			req, _ := http.NewRequestWithContext(context.Background(), tc.method, url+tc.path+"?alt=json", strings.NewReader(`{"a":1}`))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			ids, bodies := sent()
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

// answering is a server that answers the codes of answers in turn (the
// last repeats), errors in Google's shape with reason; sent are the
// requestIds and bodies of the calls it got.
func answering(t *testing.T, answers []int, reason string) (url string, sent func() (ids, bodies []string)) {
	var mu sync.Mutex
	var ids, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := io.ReadAll(r.Body)
		ids, bodies = append(ids, r.URL.Query().Get("requestId")), append(bodies, string(b))
		code := answers[min(len(ids), len(answers))-1]
		w.WriteHeader(code)
		if code >= 400 {
			fmt.Fprint(w, googleError(code, reason))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() ([]string, []string) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ids), slices.Clone(bodies)
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

// oneShot is a body that can be read once: http.NewRequest gives it no
// GetBody, so the request cannot be sent again.
type oneShot struct{ io.Reader }

// TestTransportSendsAgainOnlyWhatItCan: a call that failed before an
// answer is sent again only where repeating it cannot do it twice, and a
// call whose body cannot be read twice is never sent again: its answer is
// the caller's, not an error of the transport's.
func TestTransportSendsAgainOnlyWhatItCan(t *testing.T) {
	reset := errors.New("connection reset by peer")
	for _, tc := range []struct {
		name     string
		api      API
		method   string
		path     string // under https://example.test; /v1/projects/p/x if ""
		body     func() io.Reader
		fail     error // the first attempt's error; a 503 when nil
		attempts int
		wantErr  string
		code     int
	}{
		{name: "a read after a connection reset", api: Container, method: "GET", fail: reset, attempts: 2, code: 200},
		{name: "a GKE change after a connection reset: it may have been done", api: Container, method: "PUT", fail: reset, attempts: 1, wantErr: "connection reset by peer"},
		{name: "a Compute change after a connection reset: its requestId makes it safe", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers/g/resize", fail: reset, attempts: 2, code: 200},
		{name: "a Compute change that takes no requestId after a connection reset: it may have been done", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers/g/applyUpdatesToInstances", fail: reset, attempts: 1, wantErr: "connection reset by peer"},
		{name: "a body that cannot be read twice, throttled", api: Container, method: "PUT", body: func() io.Reader { return oneShot{strings.NewReader(`{"a":1}`)} }, attempts: 1, code: 429},
		{name: "a body that cannot be read twice, after a reset", api: Compute, method: "POST", path: "/compute/v1/projects/p/zones/z/instanceGroupManagers/g/resize", body: func() io.Reader { return oneShot{strings.NewReader(`{"a":1}`)} }, fail: reset, attempts: 1, wantErr: "connection reset by peer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			attempts := 0
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				attempts++
				first := attempts == 1
				mu.Unlock()
				if r.Body != nil {
					_, _ = io.Copy(io.Discard, r.Body)
				}
				switch {
				case first && tc.fail != nil:
					return nil, tc.fail
				case first:
					return answer(r, 429, googleError(429, "rateLimitExceeded")), nil
				}
				return answer(r, 200, "{}"), nil
			})
			body := io.Reader(strings.NewReader(`{"a":1}`))
			if tc.body != nil {
				body = tc.body()
			}
			req, _ := http.NewRequestWithContext(context.Background(), tc.method, "https://example.test"+cmp.Or(tc.path, "/v1/projects/p/x"), body)
			tr := &Transport{Base: base, API: tc.api, Attempts: maxAttempts, Backoff: time.Millisecond}
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				defer resp.Body.Close()
			}
			switch {
			case attempts != tc.attempts:
				t.Errorf("%d attempts, want %d", attempts, tc.attempts)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || resp.StatusCode != tc.code):
				t.Errorf("answer %v, %v; want %d", resp, err, tc.code)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(r *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}
}

// TestTransient: what answer asks for the call again is read from its
// code, whatever its body: a front end's HTML 502 as Google's JSON; a
// call refused for its rate was not done, so goes again even where it
// could not be repeated safely.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		name       string
		code       int
		body       string
		repeatable bool
		again      bool
	}{
		{name: "a front end's HTML 502", code: 502, body: "<html><body>502 Bad Gateway</body></html>", repeatable: true, again: true},
		{name: "a 503 of a call that cannot be repeated", code: 503, body: googleError(503, "backendError"), again: false},
		{name: "429 in plain text, not repeatable", code: 429, body: "Too Many Requests", again: true},
		{name: "Compute's quota refusal is final", code: 403, body: googleError(403, "quotaExceeded"), repeatable: true, again: false},
		{name: "a bad request is final", code: 400, body: googleError(400, "invalid"), repeatable: true, again: false},
		{name: "a success", code: 200, body: "{}", repeatable: true, again: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, again := transient(answer(nil, tc.code, tc.body), tc.repeatable)
			b, _ := io.ReadAll(resp.Body)
			if again != tc.again || string(b) != tc.body {
				t.Errorf("again %v, body %q; want %v and the body kept", again, b, tc.again)
			}
		})
	}
}

// TestRetryAfter: the pause an answer asks for, in seconds, is kept to a
// minute; what is not a positive number of seconds asks for none.
func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0}, {"2", 2 * time.Second}, {"3600", time.Minute}, {"0", 0}, {"-5", 0}, {"soon", 0},
	} {
		t.Run(fmt.Sprintf("%q", tc.header), func(t *testing.T) {
			resp := answer(nil, 429, "")
			resp.Header.Set("Retry-After", tc.header)
			if got := retryAfter(resp); got != tc.want {
				t.Errorf("retryAfter = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRetryAfterHonoured: the transport waits what the answer asks,
// beyond its own backoff.
func TestRetryAfterHonoured(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if at = append(at, time.Now()); len(at) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, API: Container, Attempts: maxAttempts, Backoff: time.Millisecond}}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(at) != 2 || at[1].Sub(at[0]) < time.Second {
		t.Errorf("%d attempts, %s apart; want 2, a second apart", len(at), at[len(at)-1].Sub(at[0]))
	}
}
