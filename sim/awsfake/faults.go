package awsfake

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// A fault is one way a service refuses a request under load, in the
// service's own shape, before it does anything:
//   - Auto Scaling and Elastic Load Balancing: 400 Throttling, "Rate
//     exceeded" (Auto Scaling API Reference, Common Errors: Throttling);
//     503 ServiceUnavailable (Common Errors).
//   - EC2: 503 RequestLimitExceeded (EC2 API Reference, Error codes:
//     "RequestLimitExceeded ... The maximum request rate permitted by the
//     Amazon EC2 APIs has been exceeded"); 500 InternalError.
//   - EKS: 503 ServiceUnavailableException, 500 ServerException (API
//     Reference, the errors of every operation); 429 ThrottlingException,
//     what API Gateway-fronted REST services answer.
//   - SSM: 400 ThrottlingException (API Reference, GetParameter's common
//     errors), 500 InternalServerError.
type fault struct {
	status        int
	code, message string
}

var faults = map[string][]fault{
	"query": {{400, "Throttling", "Rate exceeded"}, {503, "ServiceUnavailable", "Service is unavailable"}},
	"ec2":   {{503, "RequestLimitExceeded", "Request limit exceeded."}, {500, "InternalError", "An internal error has occurred"}},
	"eks":   {{503, "ServiceUnavailableException", "Service unavailable"}, {500, "ServerException", "Internal failure"}, {429, "ThrottlingException", "Rate exceeded"}},
	"ssm":   {{400, "ThrottlingException", "Rate exceeded"}, {500, "InternalServerError", "Internal failure"}},
}

// faultDice decides, from Options.FaultSeed, which requests fail; rate,
// lost and seed are Options.Faults, LostReplies and FaultSeed, or what
// SetFaults set.
type faultDice struct {
	mu         sync.Mutex
	rnd        *rand.Rand
	rate, lost float64
	seed       uint64
}

// SetFaults sets the share of requests refused with a fault, the share
// carried out whose answer is lost, and the seed of which, on a running
// Server: a test sets its scene without faults and then lets them in.
func (s *Server) SetFaults(rate, lost float64, seed uint64) {
	d := &s.dice
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rate, d.lost, d.seed, d.rnd = rate, lost, seed, nil
}

// roll decides a request's fate: refused before it is carried out
// (before), carried out with its answer lost (after), or neither; pick
// chooses the fault.
func (d *faultDice) roll() (before, after bool, pick int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rate <= 0 && d.lost <= 0 {
		return false, false, 0
	}
	if d.rnd == nil {
		d.rnd = rand.New(rand.NewPCG(d.seed, 38))
	}
	x := d.rnd.Float64()
	return x < d.rate, x >= d.rate && x < d.rate+d.lost, d.rnd.IntN(6)
}

// injectFault answers r with a fault at the rates Options.Faults and
// LostReplies say, in the shape of r's service; it reports whether it
// did. A lost reply is the request carried out by serve and its answer
// replaced by a server error, as when a service fails after acting or a
// connection drops: what the services' idempotency tokens are for (EC2
// API Reference, "Ensuring idempotency": "If you retry a request that
// completed successfully using the same client token, the result is the
// same"; EKS API Reference, clientRequestToken of each mutating call).
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request, serve http.HandlerFunc) bool {
	before, after, pick := s.dice.roll()
	after = after || s.loseNow(r)
	if !before && !after {
		return false
	}
	kind := serviceOf(r)
	choice := faults[kind]
	if after {
		choice = slices.DeleteFunc(slices.Clone(choice), func(f fault) bool { return f.status < 500 })
		serve(discard{header: http.Header{}}, r)
		s.lostCount.Add(1)
		s.mu.Lock()
		s.lostCalls = append(s.lostCalls, callOf(r))
		s.mu.Unlock()
	}
	f := choice[pick%len(choice)]
	s.faultCount.Add(1)
	switch kind {
	case "eks", "ssm":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", f.code)
		w.WriteHeader(f.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": f.code, "message": f.message})
	case "ec2":
		reply(w, f.status, el("Response", el("Errors", el("Error", txt("Code", f.code), txt("Message", f.message))), txt("RequestID", requestID())))
	default:
		queryReply(w, autoScalingNS, "", requestID(), nil, &apiError{status: f.status, code: f.code, message: f.message})
	}
	return true
}

// LoseAnswer makes the next request of call (as callOf names it, such as
// "CreateLaunchTemplateVersion" or "POST /clusters/c1/node-groups/ng1/
// update-version") carried out and its answer lost, whatever the rates.
func (s *Server) LoseAnswer(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseNext = append(s.loseNext, call)
}

// loseNow reports whether r's answer is one LoseAnswer asked to lose,
// and forgets that wish.
func (s *Server) loseNow(r *http.Request) bool {
	if r.Method == http.MethodPost && r.URL.Path == "/" && r.Header.Get("X-Amz-Target") == "" {
		_ = r.ParseForm() // the query protocol names its call in the body
	}
	call := callOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.loseNext, call)
	if i < 0 {
		return false
	}
	s.loseNext = slices.Delete(s.loseNext, i, i+1)
	return true
}

// SlowAnswer holds the answer of the next request of call (named as for
// LoseAnswer) back for d once the call is carried out: a client stopped
// meanwhile never hears that the service acted, as on a slow network.
func (s *Server) SlowAnswer(call string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slowNext == nil {
		s.slowNext = map[string]time.Duration{}
	}
	s.slowNext[call] = d
}

// slowNow is how long r's answer is held back (SlowAnswer), forgetting
// that wish.
func (s *Server) slowNow(r *http.Request) time.Duration {
	if r.Method == http.MethodPost && r.URL.Path == "/" && r.Header.Get("X-Amz-Target") == "" {
		_ = r.ParseForm()
	}
	call := callOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.slowNext[call]
	delete(s.slowNext, call)
	return d
}

// serveSlowly carries r out at once and answers it d later, or never if
// the client has gone by then.
func (s *Server) serveSlowly(w http.ResponseWriter, r *http.Request, d time.Duration) {
	rec := httptest.NewRecorder()
	s.serve(rec, r)
	select {
	case <-r.Context().Done():
		return
	case <-time.After(d):
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// discard is an answer nobody receives.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// serviceOf tells the services apart as ServeHTTP does, without reading
// the body: EKS by path, SSM by target header, EC2 by its host or
// query-protocol version (which is in the body, so the SDK's EC2 client is
// told apart by its User-Agent), the rest are Auto Scaling and ELB.
func serviceOf(r *http.Request) string {
	switch {
	case strings.HasPrefix(r.URL.Path, "/clusters"):
		return "eks"
	case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AmazonSSM."):
		return "ssm"
	case strings.Contains(strings.ToLower(r.Header.Get("User-Agent")), "api/ec2"):
		return "ec2"
	}
	return "query"
}

// Faults is how many requests were answered with an injected fault, lost
// replies included.
func (s *Server) Faults() int64 { return s.faultCount.Load() }

// LostReplies is how many requests were carried out and their answer
// replaced by a fault.
func (s *Server) LostReplies() int64 { return s.lostCount.Load() }

// LostCalls names the calls whose answer was lost, in order (callOf).
func (s *Server) LostCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lostCalls)
}

// callOf names a request that was served (its form parsed): the query
// protocol's Action, JSON 1.1's target, else method and path.
func callOf(r *http.Request) string {
	if a := r.PostForm.Get("Action"); a != "" {
		return a
	}
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		return t
	}
	return r.Method + " " + r.URL.Path
}
