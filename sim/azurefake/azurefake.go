// Package azurefake is a local Azure Resource Manager endpoint for AKS:
// it answers the calls of the real Azure SDK for Go
// (armcontainerservice/v6, API version 2025-02-01) on managed clusters and
// their agent pools, and runs the pools' upgrades itself, with the
// nodes as kwok nodes of the simulated cluster. See README.md for what it
// models and where each rule comes from.
package azurefake

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// APIVersion is the ARM API version of the SDK this fake answers
// (armcontainerservice/v6 v6.6.0: "Generated from API version 2025-02-01").
const APIVersion = "2025-02-01"

// Options configure a Server; the durations are AKS's where AKS documents
// one, and tests set them short.
type Options struct {
	// Subscription is the subscription ID of every resource; default
	// "00000000-0000-0000-0000-000000000054".
	Subscription string
	// Location is the clusters' region; default "westeurope".
	Location string
	// PollEvery is how often an upgrade looks at nodes; default 100ms.
	PollEvery time.Duration
	// EvictRetry is the wait between evictions a PDB refused; default 500ms.
	EvictRetry time.Duration
	// MinuteIs is how long one of AKS's minutes lasts here
	// (drainTimeoutInMinutes, nodeSoakDurationInMinutes); default a minute.
	MinuteIs time.Duration
	// NodeReadyTimeout bounds the wait for a new node to be Ready; the
	// operation fails after it. Default 10 minutes.
	NodeReadyTimeout time.Duration
	// SettingsDuration is how long a PUT that changes settings alone runs
	// (provisioningState Updating); default 200ms.
	SettingsDuration time.Duration
	// Faults is the share of requests answered with a fault (see
	// faults.go); FaultSeed makes which ones the same on every run.
	Faults    float64
	FaultSeed uint64
	// RetryAfter is the Retry-After a throttled request (429) is answered
	// with, in whole seconds; default DefaultRetryAfter, as ARM throttles.
	// Tests that roll faults set a second to stay quick.
	RetryAfter time.Duration
	// Logf receives a line per step of an upgrade; default none.
	Logf func(format string, args ...any)
}

// Server is a running fake ARM endpoint.
type Server struct {
	// URL is the endpoint's root: what the SDK's cloud configuration takes
	// as the Resource Manager endpoint.
	URL string

	opts     Options
	kube     kubernetes.Interface
	versions *scenario.KubeletVersions
	srv      *http.Server
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	dice     dice

	mu       sync.Mutex
	clusters map[string]*cluster // by resource group/name, lower case
	ops      map[string]*operation
	vmss     *vmssState // the scale sets of Microsoft.Compute (vmss.go)
	calls    []Call
	deleted  []deletedPool // pools.go
	seq      int
	acct     account // the caller's roles, the quotas (authorization.go)
	// subnets and networks are the pools' subnets and the clusters'
	// network profiles (network.go).
	subnets  map[string]*subnet
	networks networkProfiles
	// next is how the next request of an operation is answered.
	next map[string]nextAnswer
	// refuseLaunches are the codes new machines are refused with, by pool
	// or scale set name (launches.go).
	refuseLaunches map[string]string
}

// Call is a request the server answered: its HTTP method and the ARM
// operation it named ("agentPools/write", "agentPools/upgradeNodeImageVersion/action", ...).
type Call struct {
	HTTPMethod, Operation string
}

// Start starts the endpoint; kube is the cluster its pools' nodes join.
func Start(ctx context.Context, kube kubernetes.Interface, o Options) (*Server, error) {
	if o.Subscription == "" {
		o.Subscription = "00000000-0000-0000-0000-000000000054"
	}
	if o.Location == "" {
		o.Location = "westeurope"
	}
	o.PollEvery = orDefault(o.PollEvery, 100*time.Millisecond)
	o.EvictRetry = orDefault(o.EvictRetry, 500*time.Millisecond)
	o.MinuteIs = orDefault(o.MinuteIs, time.Minute)
	o.NodeReadyTimeout = orDefault(o.NodeReadyTimeout, 10*time.Minute)
	o.SettingsDuration = orDefault(o.SettingsDuration, 200*time.Millisecond)
	o.RetryAfter = orDefault(o.RetryAfter, DefaultRetryAfter)
	s := &Server{opts: o, kube: kube, clusters: map[string]*cluster{}, ops: map[string]*operation{}}
	s.dice = dice{rate: o.Faults, seed: o.FaultSeed}
	s.ctx, s.cancel = context.WithCancel(ctx)
	var err error
	if s.versions, err = scenario.WatchKubeletVersions(s.ctx, kube); err != nil {
		s.cancel()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); _ = s.srv.Serve(ln) }()
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Close stops the upgrades and the endpoint.
func (s *Server) Close() {
	s.cancel()
	_ = s.srv.Close()
	s.wg.Wait()
}

// Subscription is the subscription of the fake's resources.
func (s *Server) Subscription() string { return s.opts.Subscription }

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf("azurefake: "+format, args...)
	}
}

// Calls lists the requests answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ChangingCalls lists the operations of the requests that change
// something: every method but GET.
func (s *Server) ChangingCalls() []string {
	var out []string
	for _, c := range s.Calls() {
		if c.HTTPMethod != http.MethodGet {
			out = append(out, c.Operation)
		}
	}
	return out
}

// Faults counts the faults injected.
func (s *Server) Faults() int64 { return s.dice.count.Load() }

// nextID is a new operation or node suffix.
func (s *Server) nextIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%08x", prefix, s.seq)
}
