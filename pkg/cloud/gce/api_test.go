package gce

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
)

// api is an httptest endpoint answering Compute's REST paths (after
// /compute/v1/) in the API's JSON shape: each route, "METHOD path", gives
// a value to encode, or a func of the request body or query giving one; an
// *apiErr answers an error. Calls and bodies are recorded.
type api struct {
	t      *testing.T
	mu     sync.Mutex
	routes map[string]any
	calls  []string
	bodies map[string]string
	// url is the server's root; the API is under url+"/compute/v1/".
	url string
}

// apiErr is an error answer in the API's shape.
type apiErr struct {
	code   int
	reason string
}

func newAPI(t *testing.T, routes map[string]any) (*api, *Client) {
	t.Helper()
	a := &api{t: t, routes: routes, bodies: map[string]string{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.url = srv.URL
	svc, err := compute.NewService(context.Background(), option.WithEndpoint(srv.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return a, &Client{svc: svc, project: "p", pollEvery: time.Millisecond}
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + strings.TrimPrefix(r.URL.Path, "/compute/v1/")
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.calls = append(a.calls, key)
	a.bodies[key] = string(b)
	out, ok := a.routes[key]
	a.mu.Unlock()
	switch f := out.(type) {
	case func(string) any:
		out = f(string(b))
	case func(url.Values) any:
		out = f(r.URL.Query())
	}
	w.Header().Set("Content-Type", "application/json")
	if e, isErr := out.(*apiErr); isErr || !ok {
		if !ok {
			e = &apiErr{http.StatusNotFound, "notFound"}
		}
		w.WriteHeader(e.code)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"code": e.code, "message": key + ": " + e.reason, "errors": []any{map[string]any{"reason": e.reason, "message": e.reason}},
		}})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// called reports whether a call was made.
func (a *api) called(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Contains(a.calls, key)
}

func (a *api) body(key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bodies[key]
}

// done is an operation that is DONE.
var done = &compute.Operation{Name: "op", Status: "DONE"}
