package azurefake

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
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
