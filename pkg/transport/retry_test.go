package transport

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fault is what scriptedServer does with one request.
type fault string

const (
	answer     fault = ""            // serve it
	status503  fault = "503"         // answer 503
	status500  fault = "500"         // answer 500
	throttle   fault = "429"         // answer 429 without Retry-After
	throttleRA fault = "429+2s"      // answer 429 with Retry-After: 2
	resetFirst fault = "reset"       // close the connection before serving
	resetAfter fault = "reset-after" // serve it, then close the connection instead of answering
	cutBody    fault = "cut"         // serve it, and close the connection halfway through the answer
)

// scriptedServer serves one node, "n1", over HTTP/1.1: GET, and PATCH
// (a merge patch of its labels). The i'th request meets faults[i]; the
// rest are served.
type scriptedServer struct {
	mu      sync.Mutex
	faults  []fault
	seen    int               // requests received
	applied int               // patches carried out
	bodies  []string          // of the patches received
	labels  map[string]string // the node's
}

func (s *scriptedServer) next() fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	if len(s.faults) == 0 {
		return answer
	}
	f := s.faults[0]
	if len(s.faults) > 1 || f == answer {
		s.faults = s.faults[1:]
	}
	return f
}

func (s *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := s.next()
	switch f {
	case status503, status500, throttle, throttleRA:
		if f == throttleRA {
			w.Header().Set("Retry-After", "2")
		}
		code := map[fault]int{status503: 503, status500: 500, throttle: 429, throttleRA: 429}[f]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}`, code)
		return
	case resetFirst:
		hangUp(w)
		return
	}
	node := s.apply(r)
	if f == resetAfter {
		hangUp(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if f == cutBody {
		w.Header().Set("Content-Length", fmt.Sprint(len(node)+100))
		_, _ = io.WriteString(w, node[:len(node)/2])
		w.(http.Flusher).Flush()
		hangUp(w)
		return
	}
	_, _ = io.WriteString(w, node)
}

// apply carries a patch out and returns the node as JSON.
func (s *scriptedServer) apply(r *http.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodPatch {
		b, _ := io.ReadAll(r.Body)
		s.bodies = append(s.bodies, string(b))
		s.applied++
		var p struct {
			Metadata struct{ Labels map[string]string } `json:"metadata"`
		}
		if err := json.Unmarshal(b, &p); err == nil {
			for k, v := range p.Metadata.Labels {
				s.labels[k] = v
			}
		}
	}
	var labels []string
	for k, v := range s.labels {
		labels = append(labels, fmt.Sprintf("%q:%q", k, v))
	}
	return fmt.Sprintf(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","labels":{%s}}}`, strings.Join(labels, ","))
}

// hangUp closes the connection without a word.
func hangUp(w http.ResponseWriter) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	_ = buf.Flush()
	_ = conn.Close()
}

// fakeTime is the retries' clock: each wait moves it on at once.
type fakeTime struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *fakeTime) sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	return nil
}

func (c *fakeTime) clock() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// retryingClient is a clientset for srv whose retries wait on clock, last
// timeout, and back off without jitter; it returns the notices it was told.
func retryingClient(t *testing.T, srv *httptest.Server, clock *fakeTime, timeout time.Duration) (kubernetes.Interface, *[]RetryNotice) {
	t.Helper()
	var mu sync.Mutex
	var notices []RetryNotice
	cfg := &rest.Config{Host: srv.URL}
	Retrying(cfg, RetryOptions{
		Timeout: timeout,
		Report:  func(n RetryNotice) { mu.Lock(); notices = append(notices, n); mu.Unlock() },
		sleep:   clock.sleep, now: clock.clock,
		jitter: func(d time.Duration) time.Duration { return d },
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, &notices
}

// TestTransientFailuresAreRetried: each fault of the API server or the
// connection is retried, told with its reason and wait, and the caller gets
// the answer that followed; a patch the server carried out before its answer
// was lost is sent again whole.
func TestTransientFailuresAreRetried(t *testing.T) {
	tests := []struct {
		name       string
		faults     []fault
		patch      bool
		wantReason string
		wantWaits  []time.Duration
	}{
		{"503", []fault{status503, status503}, false, "API server answered 503", []time.Duration{500 * time.Millisecond, time.Second}},
		{"500 on a patch", []fault{status500}, true, "API server answered 500", []time.Duration{500 * time.Millisecond}},
		{"429 without Retry-After", []fault{throttle}, false, "API server answered 429", []time.Duration{500 * time.Millisecond}},
		{"429 with Retry-After", []fault{throttleRA, throttleRA}, true, "API server answered 429", []time.Duration{2 * time.Second, 2 * time.Second}},
		{"reset before the answer", []fault{resetFirst}, true, "connection to the API server lost", []time.Duration{500 * time.Millisecond}},
		{"reset after the patch was carried out", []fault{resetAfter}, true, "connection to the API server lost", []time.Duration{500 * time.Millisecond}},
		{"answer cut off", []fault{cutBody}, false, "the API server's answer was cut off", []time.Duration{500 * time.Millisecond}},
		{"patch's answer cut off", []fault{cutBody}, true, "the API server's answer was cut off", []time.Duration{500 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scriptedServer{faults: append(tc.faults, answer), labels: map[string]string{}}
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			clock := &fakeTime{now: time.Unix(0, 0)}
			client, notices := retryingClient(t, ts, clock, time.Minute)
			var node *corev1.Node
			var err error
			if tc.patch {
				node, err = client.CoreV1().Nodes().Patch(context.Background(), "n1", types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"upgrade":"yes"}}}`), metav1.PatchOptions{})
			} else {
				node, err = client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			}
			if err != nil || node.Name != "n1" {
				t.Fatalf("got %v, %v; want node n1", node, err)
			}
			if tc.patch && node.Labels["upgrade"] != "yes" {
				t.Errorf("labels %v after the patch, want upgrade=yes", node.Labels)
			}
			for _, b := range srv.bodies {
				if b != `{"metadata":{"labels":{"upgrade":"yes"}}}` {
					t.Errorf("patch sent as %q, want it whole every time", b)
				}
			}
			if len(*notices) != len(tc.faults) {
				t.Fatalf("%d retries told (%v), want %d", len(*notices), *notices, len(tc.faults))
			}
			for i, n := range *notices {
				if n.Reason != tc.wantReason || n.Wait != tc.wantWaits[i] || n.Target != "nodes/n1" {
					t.Errorf("retry %d told as %+v, want reason %q, wait %s, target nodes/n1", i+1, n, tc.wantReason, tc.wantWaits[i])
				}
			}
			if got := clock.waits; fmt.Sprint(got) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waited %v, want %v", got, tc.wantWaits)
			}
		})
	}
}

// TestRetriesEndWithTheirTimeout: a server that keeps failing is given the
// timeout, then its last answer or failure is returned; client-go does not
// start its own retries over it (with its Retry-After, a 503 would be sent
// ten times more, each retried for the timeout again).
func TestRetriesEndWithTheirTimeout(t *testing.T) {
	tests := []struct {
		name         string
		fault        fault
		wantAttempts int
		check        func(error) bool
	}{
		// waits 0.5+1+2+4 = 7.5s; the next, 8s, would end past 10s
		{"503 every time", status503, 5, apierrors.IsServiceUnavailable},
		// waits of 2s: 5 of them reach 10s
		{"429 with Retry-After every time", throttleRA, 6, apierrors.IsTooManyRequests},
		{"reset every time", resetFirst, 5, func(err error) bool {
			var ex *RetriesExhausted
			return errors.As(err, &ex) && ex.Attempts == 5 && ex.Reason == "connection to the API server lost"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scriptedServer{faults: []fault{answer, tc.fault}, labels: map[string]string{}}
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			clock := &fakeTime{now: time.Unix(0, 0)}
			client, notices := retryingClient(t, ts, clock, 10*time.Second)
			// one answer first: the server is known to be there
			if _, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if !tc.check(err) {
				t.Fatalf("got %v (%T), want the last failure", err, err)
			}
			if len(*notices) != tc.wantAttempts-1 {
				t.Errorf("%d retries, want %d: client-go retried the request again", len(*notices), tc.wantAttempts-1)
			}
			if tc.fault != resetFirst && srv.seen != tc.wantAttempts+1 {
				t.Errorf("server saw %d requests, want %d", srv.seen, tc.wantAttempts+1)
			}
		})
	}
}

// TestUnreachableServerIsNotRetried: a connection refused before the
// server ever answered is a wrong address, reported at once; after an
// answer, it is a server restarting, and retried.
func TestUnreachableServerIsNotRetried(t *testing.T) {
	ts := httptest.NewServer(&scriptedServer{labels: map[string]string{}})
	addr := ts.URL
	ts.Close() // refuses from now on
	clock := &fakeTime{now: time.Unix(0, 0)}
	client, notices := retryingClient(t, &httptest.Server{URL: addr}, clock, time.Minute)
	_, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	var ex *RetriesExhausted
	if err == nil || errors.As(err, &ex) || len(*notices) > 0 {
		t.Fatalf("got %v after %d retries, want the refusal at once", err, len(*notices))
	}
	if _, ok := failedConnection(err, true); !ok {
		t.Errorf("%v after an answer: not retried, want retried", err)
	}
}

// TestEvictionsAndWatchesAreLeftToTheirCallers: an eviction's 429 reaches
// the drain, which tells a PDB's refusal from a throttle; a watch's answer
// is handed over as it streams, not read whole first.
func TestEvictionsAndWatchesAreLeftToTheirCallers(t *testing.T) {
	t.Run("eviction", func(t *testing.T) {
		srv := &scriptedServer{faults: []fault{throttle, answer}, labels: map[string]string{}}
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		client, notices := retryingClient(t, ts, &fakeTime{}, time.Minute)
		rc := client.PolicyV1().RESTClient()
		err := rc.Post().AbsPath("/api/v1").Namespace("ns").Resource("pods").Name("p").SubResource("eviction").
			MaxRetries(0).Body([]byte(`{}`)).Do(context.Background()).Error()
		if !apierrors.IsTooManyRequests(err) || len(*notices) > 0 {
			t.Errorf("got %v after %d retries, want the 429 at once", err, len(*notices))
		}
	})
	t.Run("watch", func(t *testing.T) {
		release := make(chan struct{})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}}`+"\n")
			w.(http.Flusher).Flush()
			<-release // the rest never comes while the client reads
		}))
		t.Cleanup(ts.Close)
		t.Cleanup(func() { close(release) })
		client, _ := retryingClient(t, ts, &fakeTime{}, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w, err := client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			if n, ok := ev.Object.(*corev1.Node); !ok || n.Name != "n1" {
				t.Errorf("got %v, want node n1 added", ev)
			}
		case <-ctx.Done():
			t.Fatal("the watch's first event did not arrive before its answer ended")
		}
	})
}

// TestAnswersAreNoted: a context from WithAnswers says whether a request
// sent with it was answered, with the retries on or off; a refusal is no
// answer.
func TestAnswersAreNoted(t *testing.T) {
	ts := httptest.NewServer(&scriptedServer{faults: []fault{status503}, labels: map[string]string{}})
	t.Cleanup(ts.Close)
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close()
	for _, timeout := range []time.Duration{0, time.Minute} {
		for _, tc := range []struct {
			url  string
			want bool
		}{{ts.URL, true}, {refusedURL, false}} {
			t.Run(fmt.Sprintf("timeout %s, answered %v", timeout, tc.want), func(t *testing.T) {
				client, _ := retryingClient(t, &httptest.Server{URL: tc.url}, &fakeTime{}, timeout)
				ctx, answered := WithAnswers(context.Background())
				if answered() {
					t.Fatal("answered before any request")
				}
				_, _ = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
				if answered() != tc.want {
					t.Errorf("answered %v, want %v", answered(), tc.want)
				}
			})
		}
	}
}

// TestConnectionLossesAreRetried: every way Go's transports word a
// connection closed under a request, as a list or an eviction meets it,
// is a lost connection to retry, before the server has answered or after.
func TestConnectionLossesAreRetried(t *testing.T) {
	for _, msg := range []string{
		"http2: client connection force closed via ClientConn.Close",
		"http2: client conn is closed",
		"http2: client connection lost",
		"http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=\"\"",
		"stream error: stream ID 173; INTERNAL_ERROR; received from peer",
		"read tcp 10.0.0.1:443: connection reset",
		"net/http: HTTP/1.x transport connection broken: unexpected EOF",
	} {
		t.Run(msg, func(t *testing.T) {
			err := fmt.Errorf("select pods of node %q: %w", "n1",
				&url.Error{Op: "Get", URL: "https://api/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", Err: errors.New(msg)})
			for _, answered := range []bool{false, true} {
				if reason, ok := failedConnection(err, answered); !ok || reason != "connection to the API server lost" {
					t.Errorf("answered %v: %q, %v; want a lost connection, retried", answered, reason, ok)
				}
			}
			if !LostConnection(err) {
				t.Error("LostConnection false, want true")
			}
		})
	}
	t.Run("a certificate that does not verify is not", func(t *testing.T) {
		if _, ok := failedConnection(&url.Error{Op: "Get", URL: "https://api", Err: x509.UnknownAuthorityError{}}, true); ok {
			t.Error("retried, want not")
		}
	})
}
