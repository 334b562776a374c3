package azurefake

import (
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The faults a request may get, each equally often at the dice's rate:
// ARM's throttling (429 with Retry-After), a server error before the
// request is acted on (500), and, for a request that changes something,
// the request carried out and its answer lost (a 500 after the fact, as
// when a connection drops after ARM accepted it). The SDK's retry policy
// sends the request again in each case (azcore policy.RetryOptions:
// StatusCodes 408, 429, 500, 502, 503, 504 by default).
type fault int

const (
	faultNone fault = iota
	faultThrottle
	faultServer
	faultLost
)

// dice picks faults at a rate, the same sequence for the same seed.
type dice struct {
	rate  float64
	seed  uint64
	mu    sync.Mutex
	rnd   *rand.Rand
	count atomic.Int64
}

func (d *dice) roll(method string) fault {
	if d.rate <= 0 {
		return faultNone
	}
	d.mu.Lock()
	if d.rnd == nil {
		d.rnd = rand.New(rand.NewPCG(d.seed, 54))
	}
	hit, pick := d.rnd.Float64() < d.rate, d.rnd.IntN(3)
	d.mu.Unlock()
	if !hit {
		return faultNone
	}
	f := []fault{faultThrottle, faultServer, faultLost}[pick]
	if f == faultLost && method == http.MethodGet {
		f = faultServer
	}
	d.count.Add(1)
	return f
}

// SlowAnswer holds back by d the answer to the next request of the ARM
// operation op (as Call names it, "agentPools/write"), which is carried
// out at once: a caller stopped meanwhile never hears that it was (the
// window between a request ARM accepted and the caller recording it).
func (s *Server) SlowAnswer(op string, d time.Duration) {
	s.setNext(op, nextAnswer{delay: d})
}

// LoseAnswer loses the answer to the next request of op, carried out: the
// caller gets a 500, as with the seeded faultLost, but on the request a
// test names.
func (s *Server) LoseAnswer(op string) {
	s.setNext(op, nextAnswer{lost: true})
}

// nextAnswer is how the next request of an operation is answered.
type nextAnswer struct {
	delay time.Duration
	lost  bool
}

func (s *Server) setNext(op string, a nextAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		s.next = map[string]nextAnswer{}
	}
	s.next[op] = a
}

// takeNextLocked is how to answer a request of op, once.
func (s *Server) takeNextLocked(op string) nextAnswer {
	a := s.next[op]
	delete(s.next, op)
	return a
}

// answerLate carries the request out, then answers it after d.
func answerLate(q *request, w http.ResponseWriter, h func(*request), d time.Duration) {
	rec := httptest.NewRecorder()
	q.w = rec
	h(q)
	_ = sleep(q.r.Context(), d)
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// DefaultRetryAfter is the Retry-After of the fake's 429: ARM throttles
// with a Retry-After in seconds, "the number of seconds you should wait
// before sending the next request", and a throttled subscription or
// tenant waits tens of them, the rest of the bucket's refill
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling#error-code,
// "Migrating to regional throttling and token bucket algorithm": buckets
// refill per second, the window a throttled client waits out).
const DefaultRetryAfter = 20 * time.Second

// retryAfterSeconds is d as Retry-After's delay-seconds (RFC 9110
// 10.2.3): whole seconds, rounded up, at least one.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
