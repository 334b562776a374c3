package awsfake

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
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

// faultDice decides, from Options.FaultSeed, which requests fail; rate
// and seed are Options.Faults and FaultSeed, or what SetFaults set.
type faultDice struct {
	mu   sync.Mutex
	rnd  *rand.Rand
	rate float64
	seed uint64
}

// SetFaults sets the share of requests refused with a fault, and the seed
// of which, on a running Server: a test sets its scene without faults and
// then lets them in.
func (s *Server) SetFaults(rate float64, seed uint64) {
	d := &s.dice
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rate, d.seed, d.rnd = rate, seed, nil
}

// injectFault answers r with a fault at the rate Options.Faults says, in
// the shape of r's service; it reports whether it did.
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request) bool {
	d := &s.dice
	d.mu.Lock()
	if d.rate <= 0 {
		d.mu.Unlock()
		return false
	}
	if d.rnd == nil {
		d.rnd = rand.New(rand.NewPCG(d.seed, 38))
	}
	hit, pick := d.rnd.Float64() < d.rate, d.rnd.IntN(6)
	d.mu.Unlock()
	if !hit {
		return false
	}
	kind := serviceOf(r)
	f := faults[kind][pick%len(faults[kind])]
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

// Faults is how many requests were refused with an injected fault.
func (s *Server) Faults() int64 { return s.faultCount.Load() }
