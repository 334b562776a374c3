// Package gcpfault gives the Google fakes (sim/gcefake, sim/gkefake) the
// faults a Google Cloud API answers under load, in Google's own JSON error
// shape, before the request is acted on: a request refused this way was
// not done, so the caller may send it again.
package gcpfault

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
)

// Fault is one refusal: the HTTP code, the canonical status
// (google.rpc.Code, whose documentation gives each code's HTTP mapping),
// and the legacy reason and domain the Go client reads into
// googleapi.Error.Errors.
type Fault struct {
	Code    int
	Status  string
	Reason  string
	Domain  string
	Message string
}

// Faults are the refusals a Dice picks from, each equally often.
//   - 403 rateLimitExceeded: "If your project exceeds a rate quota, you
//     receive a 403 error with the reason rateLimitExceeded" (Compute
//     Engine, "Rate quotas", https://cloud.google.com/compute/api-quota);
//     userRateLimitExceeded is the per-user form of the same limit. Rate
//     limits carry the domain "usageLimits".
//   - 429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE, 504
//     DEADLINE_EXCEEDED: the HTTP mappings of google.rpc.Code
//     (https://cloud.google.com/service-control/reference/rpc/google.rpc).
//   - 502: what Google's front end answers when it cannot reach the
//     service; google.rpc.Code has no code mapped to it, so it carries
//     UNAVAILABLE, the status of a service that may answer a retry.
var Faults = []Fault{
	{Code: http.StatusForbidden, Status: "PERMISSION_DENIED", Reason: "rateLimitExceeded", Domain: "usageLimits", Message: "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute'."},
	{Code: http.StatusForbidden, Status: "PERMISSION_DENIED", Reason: "userRateLimitExceeded", Domain: "usageLimits", Message: "User Rate Limit Exceeded."},
	{Code: http.StatusTooManyRequests, Status: "RESOURCE_EXHAUSTED", Reason: "rateLimitExceeded", Domain: "usageLimits", Message: "Resource has been exhausted (e.g. check quota)."},
	{Code: http.StatusInternalServerError, Status: "INTERNAL", Reason: "backendError", Domain: "global", Message: "Internal error. Please try again or contact Google Support."},
	{Code: http.StatusBadGateway, Status: "UNAVAILABLE", Reason: "backendError", Domain: "global", Message: "Bad Gateway."},
	{Code: http.StatusServiceUnavailable, Status: "UNAVAILABLE", Reason: "backendError", Domain: "global", Message: "The service is currently unavailable."},
	{Code: http.StatusGatewayTimeout, Status: "DEADLINE_EXCEEDED", Reason: "backendError", Domain: "global", Message: "Deadline exceeded."},
}

// Late are the faults a service may answer after it has acted:
// DEADLINE_EXCEEDED "may be returned even if the operation has completed
// successfully" (google.rpc.Code). A fake that answers one of these after
// doing the call shows whether the caller's retry does it twice.
var Late = []Fault{Faults[len(Faults)-1]}

// Write answers w with f in Google's JSON error shape:
// {"error":{"code","message","errors":[{"message","domain","reason"}],"status"}}
// (Compute Engine API, "Errors":
// https://cloud.google.com/compute/docs/reference/rest/v1#errors; the
// errors list is the legacy form Google's REST APIs still send beside
// status).
func Write(w http.ResponseWriter, f Fault) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(f.Code)
	type item struct {
		Message string `json:"message"`
		Domain  string `json:"domain"`
		Reason  string `json:"reason"`
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code":    f.Code,
		"message": f.Message,
		"errors":  []item{{Message: f.Message, Domain: f.Domain, Reason: f.Reason}},
		"status":  f.Status,
	}})
}

// Dice refuses a share of requests with a fault: Rate is the share (0 for
// none, 1 for every request), Seed makes the sequence of refusals the same
// on every run, From are the faults picked from (default Faults). The
// zero Dice refuses nothing; a Dice is safe for concurrent use and must
// not be copied after its first Inject.
type Dice struct {
	Rate float64
	Seed uint64
	From []Fault

	mu    sync.Mutex
	rnd   *rand.Rand
	count atomic.Int64
}

// Inject answers w with one of the Dice's faults at its rate and reports
// whether it did; the caller then leaves r undone (or, with Late, does
// not answer it again).
func (d *Dice) Inject(w http.ResponseWriter, _ *http.Request) bool {
	if d == nil || d.Rate <= 0 {
		return false
	}
	d.mu.Lock()
	if d.rnd == nil {
		d.rnd = rand.New(rand.NewPCG(d.Seed, 38))
	}
	from := d.From
	if len(from) == 0 {
		from = Faults
	}
	hit, pick := d.rnd.Float64() < d.Rate, d.rnd.IntN(len(from))
	d.mu.Unlock()
	if !hit {
		return false
	}
	d.count.Add(1)
	Write(w, from[pick])
	return true
}

// Count is how many requests Inject refused.
func (d *Dice) Count() int64 {
	if d == nil {
		return 0
	}
	return d.count.Load()
}
