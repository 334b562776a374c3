package azarm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
)

// TestLongRetryAfterIsWaitedOut: ARM's 429 with a Retry-After of several
// seconds (longer than the 5 s cap the provider had, with which azcore
// gave up at once) is waited out and the request retried.
func TestLongRetryAfterIsWaitedOut(t *testing.T) {
	var tries atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) == 1 {
			w.Header().Set("Retry-After", "6")
			w.Header().Set("x-ms-error-code", "TooManyRequests")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"TooManyRequests","message":"The request is being throttled."}}`))
			return
		}
		_, _ = w.Write([]byte(`{"value":[]}`))
	}))
	defer srv.Close()
	e := Endpoint{Env: "NODEUPGRADE_AZARM_TEST_ENDPOINT", NoAuthEnv: "NODEUPGRADE_AZARM_TEST_NO_AUTH"}
	t.Setenv(e.Env, srv.URL)
	t.Setenv(e.NoAuthEnv, "true")
	opts, cred, err := e.Options()
	if err != nil {
		t.Fatal(err)
	}
	c, err := arm.NewClient("azarm-test", "v0.0.1", cred, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := e.ListPermissions(ctx, c.Pipeline(), "/subscriptions/s"); err != nil {
		t.Fatalf("after a 429 with Retry-After 6: %v, want it retried", err)
	}
	if n, d := tries.Load(), time.Since(start); n != 2 || d < 6*time.Second {
		t.Errorf("%d tries in %s, want 2 after the 6 s Retry-After", n, d)
	}
}
