package plugin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// fakeAPIServer answers every GET of the namespace "default"; the first
// tooMany requests get a 429 with Retry-After: 1, as API Priority and
// Fairness sends when it rejects.
func fakeAPIServer(t *testing.T, tooMany int32) (*httptest.Server, *atomic.Int32) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) <= tooMany {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &served
}

// connectTo parses args as the global flags and builds the client the
// commands use for srv.
func connectTo(t *testing.T, srv *httptest.Server, args ...string) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	configFlags := genericclioptions.NewConfigFlags(false)
	server := srv.URL
	configFlags.APIServer = &server
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddGlobalFlags(fs)
	t.Cleanup(silenceKlog)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := restConfig(configFlags)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, client
}

func TestRateLimitFlags(t *testing.T) {
	srv, _ := fakeAPIServer(t, 0)
	tests := []struct {
		name      string
		args      []string
		wantQPS   float32
		wantBurst int
		limited   bool
	}{
		{"defaults", nil, DefaultQPS, DefaultBurst, true},
		{"raised", []string{"--qps=500", "--burst=1000"}, 500, 1000, true},
		{"off", []string{"--qps=-1"}, -1, DefaultBurst, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, client := connectTo(t, srv, tc.args...)
			if cfg.QPS != tc.wantQPS || cfg.Burst != tc.wantBurst {
				t.Fatalf("QPS %v burst %d, want %v and %d", cfg.QPS, cfg.Burst, tc.wantQPS, tc.wantBurst)
			}
			limiter := client.CoreV1().RESTClient().GetRateLimiter()
			if tc.limited != (limiter != nil) {
				t.Fatalf("rate limiter %v, want one: %v", limiter, tc.limited)
			}
			if limiter != nil && limiter.QPS() != tc.wantQPS {
				t.Fatalf("limiter QPS %v, want %v", limiter.QPS(), tc.wantQPS)
			}
		})
	}
}

// The server's 429 with Retry-After is retried after its Retry-After
// (transport.Retrying).
func TestTooManyRequestsIsRetriedAfterRetryAfter(t *testing.T) {
	srv, served := fakeAPIServer(t, 1)
	_, client := connectTo(t, srv)
	ns, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after a 429: %v", err)
	}
	if ns.Name != "default" || served.Load() != 2 {
		t.Fatalf("got %q after %d requests, want \"default\" after 2", ns.Name, served.Load())
	}
}

// TestRequestRetryTimeoutFlag: the flag bounds the retries of every
// command's client, 0 leaves only client-go's own (of an answer with
// Retry-After), and a negative value is bad input.
func TestRequestRetryTimeoutFlag(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		failures   int32 // 503s before the answer
		retryAfter bool  // the 503s carry Retry-After: 1
		wantServed int32 // requests the server saw for one Get
		wantErr    bool  // the Get fails
	}{
		{"default: a 503 is retried", nil, 1, false, 2, false},
		{"0: a 503 without Retry-After is not", []string{"--request-retry-timeout=0"}, 1, false, 1, true},
		{"1s: gives up within it", []string{"--request-retry-timeout=1s"}, 100, true, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if served.Add(1) <= tc.failures {
					if tc.retryAfter {
						w.Header().Set("Retry-After", "1")
					}
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}`)
					return
				}
				_, _ = io.WriteString(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { clientLimits.retryTimeout = DefaultRequestRetryTimeout })
			_, client := connectTo(t, srv, tc.args...)
			_, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
			if (err != nil) != tc.wantErr || served.Load() != tc.wantServed {
				t.Fatalf("got %v after %d requests, want an error: %v, after %d", err, served.Load(), tc.wantErr, tc.wantServed)
			}
		})
	}
	t.Run("negative", func(t *testing.T) {
		t.Cleanup(func() { clientLimits.retryTimeout = DefaultRequestRetryTimeout })
		clientLimits.retryTimeout = -time.Second
		configFlags := genericclioptions.NewConfigFlags(false)
		_, err := restConfig(configFlags)
		if ExitCode(err) != ExitUsage || !strings.Contains(fmt.Sprint(err), "--request-retry-timeout") {
			t.Fatalf("got %v, want a usage error naming the flag", err)
		}
	})
}

// captureStderr returns what fn writes to os.Stderr, where klog writes.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&out, r)
	}()
	fn()
	klog.Flush()
	os.Stderr = saved
	w.Close()
	<-done
	return out.String()
}

// Client-go's own throttling line (the one the issue saw in the progress
// output) and a plain klog line reach stderr only with -v.
func TestLibraryLogsOnlyWithV(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{"without -v", nil, false},
		// level 2: client-go logs a throttling wait at most once a second
		// there (once in 10 s at level 0)
		{"with -v=2", []string{"-v=2"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := fakeAPIServer(t, 0)
			// 2 requests a second and no burst: the fourth of four
			// concurrent requests waits 1.5 s, above client-go's 1 s
			// threshold for logging at level 0
			_, client := connectTo(t, srv, append([]string{"--qps=2", "--burst=1"}, tc.args...)...)
			got := captureStderr(t, func() {
				klog.Info("a library line")
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						_, _ = client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
					})
				}
				wg.Wait()
			})
			for _, line := range []string{"a library line", "client-side throttling"} {
				if strings.Contains(got, line) != tc.want {
					t.Errorf("stderr %q: contains %q is %v, want %v", got, line, !tc.want, tc.want)
				}
			}
		})
	}
}

// TestRESTConfigGunzipsWithKlauspost: every command's client leaves gzip to
// transport.GunzipFaster (Go's own gunzipping turned off, the wrapper
// asking for gzip), and --disable-compression asks for none.
func TestRESTConfigGunzipsWithKlauspost(t *testing.T) {
	var asked atomic.Bool
	// over TLS: client-go builds a transport of its own, which honours
	// DisableCompression (without TLS it takes Go's default one)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	}))
	t.Cleanup(srv.Close)
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("disable-compression=%v", disable), func(t *testing.T) {
			configFlags := genericclioptions.NewConfigFlags(false)
			server := srv.URL
			insecure := true
			configFlags.APIServer, configFlags.DisableCompression, configFlags.Insecure = &server, &disable, &insecure
			cfg, err := restConfig(configFlags)
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.DisableCompression {
				t.Error("Go's transport still gunzips: DisableCompression is false")
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			if asked.Load() == disable {
				t.Errorf("gzip asked for: %v, want %v", asked.Load(), !disable)
			}
		})
	}
}
