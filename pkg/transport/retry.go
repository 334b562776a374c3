package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Retry bounds: the first retry after about base, doubling up to maxWait.
const (
	retryBase    = 500 * time.Millisecond
	retryMaxWait = 30 * time.Second
)

// Retrying has every request of cfg's clients retried when the API server
// answers 429, 500, 502, 503 or 504, when the connection fails before the
// answer is in (reset, closed, or, once the server has answered anything,
// refused or timed out), and when an answer is cut off while it is read.
// client-go retries only some of these (rest/with_retry.go: a 429 or 5xx
// with Retry-After; a GET reset, never a write or a Stream). Each retry
// waits a jittered exponential backoff, or the server's Retry-After, and is
// told to the report in the request's context (WithRetryReport), else to
// opts.Report. The retries of one request last opts.Timeout at most from
// its first failure; then its last answer, or a *RetriesExhausted, is
// returned and not retried again by client-go.
//
// Writes are retried too: one the server carried out before its answer was
// lost is sent again, and the callers settle that second answer (a
// conflict, a NotFound, an AlreadyExists). Evictions are not: the drain
// tells a PodDisruptionBudget's refusal from a throttle and retries them
// itself.
//
// With a Timeout of 0 nothing is retried, and answers are only noted
// (WithAnswers).
func Retrying(cfg *rest.Config, opts RetryOptions) {
	shared := &retryTransport{opts: opts, answered: new(atomic.Bool)}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		t := *shared
		t.next = rt
		return &t
	})
}

// RetryOptions configure Retrying.
type RetryOptions struct {
	// Timeout bounds the retries of one request, from its first failure.
	Timeout time.Duration
	// Report is told each retry of a request whose context names no report
	// of its own; nil tells no one.
	Report func(RetryNotice)

	// sleep waits d or until ctx ends, now is the clock, and jitter picks
	// the wait for a backoff of d. Tests replace them.
	sleep  func(ctx context.Context, d time.Duration) error
	now    func() time.Time
	jitter func(d time.Duration) time.Duration
}

// RetryNotice is one retry of a request: why, and the wait before it.
type RetryNotice struct {
	Verb, Target string // "PATCH", "nodes/ip-10-0-1-1"
	Reason       string // "API server answered 503"
	Wait         time.Duration
	Attempt      int // the attempt that failed, from 1
}

func (n RetryNotice) String() string {
	return fmt.Sprintf("%s (%s %s), retrying in %s", n.Reason, n.Verb, n.Target, roundWait(n.Wait))
}

// roundWait shows a wait in whole seconds, or tenths under a second.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

type retryReportKey struct{}

// WithRetryReport has the retries of requests sent with ctx told to
// report (the run's progress line) instead of RetryOptions.Report.
func WithRetryReport(ctx context.Context, report func(RetryNotice)) context.Context {
	return context.WithValue(ctx, retryReportKey{}, report)
}

type answersKey struct{}

// WithAnswers notes whether the API server answers any request sent with
// ctx (any status: an answer, not a connection that failed); answered
// says whether it has. A connection lost after an answer is a server that
// stopped answering, not a wrong address.
func WithAnswers(ctx context.Context) (_ context.Context, answered func() bool) {
	flag := new(atomic.Bool)
	return context.WithValue(ctx, answersKey{}, flag), flag.Load
}

type streamedKey struct{}

// Streamed marks requests whose caller reads the answer as it arrives (a
// list decoded item by item): their answers are not read whole before they
// are handed over, so one cut off while read is the caller's to retry (by
// sending the request again). Watches are always streamed.
func Streamed(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamedKey{}, true)
}

// RetriesExhausted is a request the API server did not answer while its
// retries lasted. It keeps the network error in Cause rather than wrapping
// it: client-go would take a wrapped reset for one of its own to retry,
// and its message words the cause so that client-go's checks of the text
// do not match it either.
type RetriesExhausted struct {
	Verb, Target string
	Reason       string // "connection reset"
	Attempts     int
	For          time.Duration
	Timeout      time.Duration
	cause        error
}

func (e *RetriesExhausted) Error() string {
	return fmt.Sprintf("%s %s: %s, %d attempts in %s (--request-retry-timeout %s)", e.Verb, e.Target, e.Reason, e.Attempts, roundWait(e.For), e.Timeout)
}

// Cause is the network error of the last attempt.
func (e *RetriesExhausted) Cause() error { return e.cause }

type retryTransport struct {
	next http.RoundTripper
	opts RetryOptions
	// answered says the server has answered a request of these clients:
	// until then a refused or timed-out connection is a wrong address,
	// reported at once, not a server restarting.
	answered *atomic.Bool
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.opts.Timeout <= 0 || isEviction(req) {
		resp, err := t.next.RoundTrip(req)
		if err == nil {
			t.noteAnswer(req)
		}
		return resp, err
	}
	var first time.Time
	for attempt := 1; ; attempt++ {
		resp, err := t.send(req)
		reason, wait, retry := t.retryable(req, resp, err)
		if !retry {
			return resp, err
		}
		now := t.now()
		if first.IsZero() {
			first = now
		}
		if wait == 0 {
			wait = t.backoff(attempt)
		}
		if now.Add(wait).Sub(first) > t.opts.Timeout || (req.Body != nil && req.GetBody == nil) {
			return giveUp(req, resp, err, reason, attempt, now.Sub(first), t.opts.Timeout)
		}
		if resp != nil {
			_ = resp.Body.Close()
		}
		t.report(req, RetryNotice{Verb: req.Method, Target: target(req), Reason: reason, Wait: wait, Attempt: attempt})
		if err := t.wait(req.Context(), wait); err != nil {
			return nil, err
		}
		if req, err = rewound(req); err != nil {
			return nil, err
		}
	}
}

// send sends req once; an answer that is not streamed is read whole, so
// that one cut off is retried here rather than failing in the caller's
// read ("Please retry").
func (t *retryTransport) send(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.noteAnswer(req)
	if streamed(req) || resp.StatusCode == http.StatusSwitchingProtocols {
		return resp, nil
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	_, err = buf.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, &cutError{err: err}
	}
	resp.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	resp.ContentLength = int64(buf.Len())
	return resp, nil
}

func (t *retryTransport) noteAnswer(req *http.Request) {
	t.answered.Store(true)
	if flag, ok := req.Context().Value(answersKey{}).(*atomic.Bool); ok {
		flag.Store(true)
	}
}

// cutError is an answer cut off while it was read.
type cutError struct{ err error }

func (e *cutError) Error() string { return "the API server's answer was cut off: " + e.err.Error() }
func (e *cutError) Unwrap() error { return e.err }

// retryable says whether the outcome of one attempt is worth another, why
// (as the notice says it), and the wait the server asked for (0: none).
func (t *retryTransport) retryable(req *http.Request, resp *http.Response, err error) (string, time.Duration, bool) {
	if req.Context().Err() != nil {
		return "", 0, false
	}
	if err != nil {
		reason, ok := failedConnection(err, t.answered.Load())
		return reason, 0, ok
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return fmt.Sprintf("API server answered %d", resp.StatusCode), retryAfter(resp), true
	}
	return "", 0, false
}

// LostConnection reports whether err is a connection to the API server
// that failed and may work again (reset, closed, refused, timed out), as
// the retries here judge one once the server has answered: for callers
// that retry requests of their own (the drain's evictions).
func LostConnection(err error) bool {
	_, ok := failedConnection(err, true)
	return ok
}

// failedConnection names a network failure that may pass, and says
// whether it is one. A connection reset or closed means a server was
// there; a refused or timed-out one, or a name not found, only once it
// has answered. A certificate that does not verify never passes.
func failedConnection(err error, answered bool) (string, bool) {
	var cut *cutError
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var dns *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &cut):
		return "the API server's answer was cut off", true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &verify), errors.As(err, &authority), errors.As(err, &hostname):
		return "", false
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), closedConnection(err):
		return "connection to the API server lost", true
	case !answered:
		return "", false
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection to the API server refused", true
	case errors.As(err, &dns):
		return "API server's name not found", true
	case errors.As(err, &netErr) && netErr.Timeout():
		return "connection to the API server timed out", true
	}
	return "", false
}

// closedConnection matches the connection losses Go's HTTP transports
// report only in words: a connection closed under the request by either
// side (net/http's h2_bundle.go: errClientConnForceClosed when the client
// closes it, errClientConnClosed, errClientConnLost, GoAwayError), a
// stream reset, a reset worded by the OS or a proxy.
func closedConnection(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"use of closed network connection", "http2: client connection lost",
		"http2: client connection force closed", "http2: client conn is closed", "http2: server sent goaway",
		"broken connection", "transport connection broken", "stream error", "connection reset"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retryAfter is the wait a 429 or 5xx asks for in whole seconds (the API
// server's form), or 0.
func retryAfter(resp *http.Response) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// backoff is the jittered wait after the attempt'th failure in a row.
func (t *retryTransport) backoff(attempt int) time.Duration {
	d := retryBase
	for i := 1; i < attempt && d < retryMaxWait; i++ {
		d *= 2
	}
	d = min(d, retryMaxWait)
	if t.opts.jitter != nil {
		return t.opts.jitter(d)
	}
	// between half and all of d: retries of requests that failed together
	// spread out
	return d/2 + rand.N(d/2+1)
}

func (t *retryTransport) now() time.Time {
	if t.opts.now != nil {
		return t.opts.now()
	}
	return time.Now()
}

func (t *retryTransport) wait(ctx context.Context, d time.Duration) error {
	if t.opts.sleep != nil {
		return t.opts.sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

func (t *retryTransport) report(req *http.Request, n RetryNotice) {
	if !Tell(req.Context(), n) && t.opts.Report != nil {
		t.opts.Report(n)
	}
}

// Tell tells a retry to the report of ctx (WithRetryReport), for callers
// that retry on their own (a list read again), and says whether ctx had
// one.
func Tell(ctx context.Context, n RetryNotice) bool {
	r, ok := ctx.Value(retryReportKey{}).(func(RetryNotice))
	if ok && r != nil {
		r(n)
	}
	return ok && r != nil
}

// giveUp returns the last outcome once the retries are over: an answer
// without its Retry-After (client-go would send it again), or the network
// failure as a *RetriesExhausted.
func giveUp(req *http.Request, resp *http.Response, err error, reason string, attempts int, spent, timeout time.Duration) (*http.Response, error) {
	if resp != nil {
		resp.Header.Del("Retry-After")
		return resp, nil
	}
	return nil, &RetriesExhausted{Verb: req.Method, Target: target(req), Reason: reason, Attempts: attempts, For: spent, Timeout: timeout, cause: err}
}

// rewound is req to send again, with its body from the start.
func rewound(req *http.Request) (*http.Request, error) {
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		again.Body = body
	}
	return again, nil
}

func streamed(req *http.Request) bool {
	if s, _ := req.Context().Value(streamedKey{}).(bool); s {
		return true
	}
	q := req.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || q.Get("follow") == "true" || strings.Contains(req.URL.Path, "/watch/")
}

func isEviction(req *http.Request) bool {
	return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/eviction")
}

// target is what a request is about, from its path: "nodes/NAME",
// "namespaces/NS/configmaps/NAME", "pods" for a list.
func target(req *http.Request) string {
	p := strings.Trim(req.URL.Path, "/")
	for _, prefix := range []string{"api/v1/", "api/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return rest
		}
	}
	if rest, ok := strings.CutPrefix(p, "apis/"); ok {
		// apis/GROUP/VERSION/...
		if parts := strings.SplitN(rest, "/", 3); len(parts) == 3 {
			return parts[2]
		}
	}
	return p
}
