// Package gkefake is a local GKE endpoint for tests and the demo: it
// answers the REST JSON calls of google.golang.org/api/container/v1 that
// pkg/cloud/gke makes (clusters get, node pools get / list / update /
// rollback / completeUpgrade, operations get / list / cancel, the server
// config), pointed at with option.WithEndpoint(Server.Endpoint) and
// option.WithoutAuthentication.
//
// A node pool stands on a Compute Engine endpoint of sim/gcefake: one
// managed instance group per zone, whose instances are nodes of the
// simulated cluster labelled cloud.google.com/gke-nodepool=POOL with
// gce:// provider IDs. nodePools.update carries GKE's upgrade strategies
// out as GKE documents them, through the Compute API and the Kubernetes
// API, draining with kubectl's drain library (k8s.io/kubectl/pkg/drain),
// never the plugin's.
//
// No emulator of GKE exists to check it against, so every behaviour it
// models cites the GKE documentation or API reference
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/...)
// where it is implemented; README.md lists what it does not model.
package gkefake

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpfault"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// Options configure a Server. The durations are GKE's own where GKE
// documents one; tests set them short.
type Options struct {
	// Compute configures the Compute Engine endpoint the pools stand on;
	// its OnLaunch and OnDelete are the Server's.
	Compute gcefake.Options
	// PollEvery is how often the upgrade looks at nodes and instances;
	// default 100ms.
	PollEvery time.Duration
	// EvictRetry is the wait between evictions a PDB refused; default
	// 500ms.
	EvictRetry time.Duration
	// NodeReadyTimeout bounds the wait for a new node to be Ready; the
	// operation fails after it. Default 10 minutes.
	NodeReadyTimeout time.Duration
	// DefaultPDBTimeout is how long a drain honours PodDisruptionBudgets
	// when the pool's nodeDrainConfig sets no pdbTimeoutDuration: one hour
	// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#surge:
	// "for up to 1 hour ... after 1 hour, the remaining Pods are forcibly
	// deleted").
	DefaultPDBTimeout time.Duration
	// SettingsDuration is how long a nodePools.update of the settings
	// alone runs before its operation is DONE (see startSettingsLocked);
	// GKE documents none. Default 1s.
	SettingsDuration time.Duration
	// Logf receives a line per step of an upgrade; default none.
	Logf func(format string, args ...any)
	// Addr is the listen address; default "127.0.0.1:0".
	Addr string
	// Faults is the share of API requests (0..1) refused, before they are
	// acted on, with the faults Google's APIs answer under load (see
	// gcpfault.Faults); FaultSeed makes which ones the same each run.
	// Compute.Faults would also refuse the fake's own calls to its
	// instances, which the service makes and retries itself.
	Faults    float64
	FaultSeed uint64
}

// Server is a running fake GKE endpoint and the Compute Engine endpoint
// its pools stand on.
type Server struct {
	// URL is the server's root; Endpoint what option.WithEndpoint takes.
	URL, Endpoint string
	// Compute is the Compute Engine endpoint of the pools' instance groups.
	Compute *gcefake.Server

	opts   Options
	dice   *gcpfault.Dice // Options.Faults
	kube   kubernetes.Interface
	gce    *compute.Service
	srv    *http.Server
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	changed   chan struct{}
	clusters  map[string]*cluster // by project/location/name
	ops       map[string]*operation
	opOrder   []string
	templates map[string]nodeConfig // a node template's configuration, by template name
	versions  *scenario.KubeletVersions
	calls     []Call
	seq       int
	// role is what the caller may do (see Grant and Deny).
	role gcpiam.Role
}

// Call is one request the server answered: the API method's name, and for
// nodePools.update whether it asked for an upgrade (a node version or an
// image type) rather than settings only.
type Call struct {
	HTTPMethod, Method string
	Upgrade            bool
}

// Start starts the Compute Engine endpoint with nodes of kube, and the GKE
// endpoint over it.
func Start(ctx context.Context, kube kubernetes.Interface, opts Options) (*Server, error) {
	if opts.PollEvery == 0 {
		opts.PollEvery = 100 * time.Millisecond
	}
	if opts.EvictRetry == 0 {
		opts.EvictRetry = 500 * time.Millisecond
	}
	if opts.NodeReadyTimeout == 0 {
		opts.NodeReadyTimeout = 10 * time.Minute
	}
	if opts.DefaultPDBTimeout == 0 {
		opts.DefaultPDBTimeout = time.Hour
	}
	if opts.SettingsDuration == 0 {
		opts.SettingsDuration = time.Second
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	s := &Server{opts: opts, dice: &gcpfault.Dice{Rate: opts.Faults, Seed: opts.FaultSeed}, kube: kube, changed: make(chan struct{}), clusters: map[string]*cluster{},
		ops: map[string]*operation{}, templates: map[string]nodeConfig{}}
	s.ctx, s.cancel = context.WithCancel(ctx)
	if kube != nil {
		var err error
		if s.versions, err = scenario.WatchKubeletVersions(s.ctx, kube); err != nil {
			s.cancel()
			return nil, err
		}
	}
	copts := opts.Compute
	copts.OnLaunch, copts.OnDelete = s.kubeNodes()
	gce, err := gcefake.Start(s.ctx, copts)
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.Compute = gce
	s.gce, err = compute.NewService(s.ctx, option.WithEndpoint(gce.Endpoint), option.WithoutAuthentication())
	if err != nil {
		gce.Close()
		s.cancel()
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		gce.Close()
		s.cancel()
		return nil, err
	}
	s.URL = "http://" + ln.Addr().String()
	s.Endpoint = s.URL + "/"
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the upgrades, the server and the Compute Engine endpoint.
func (s *Server) Close() {
	s.cancel()
	_ = s.srv.Close()
	s.wg.Wait()
	s.Compute.Close()
}

// Project is the project the pools are made in.
func (s *Server) Project() string { return s.Compute.Project() }

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf("gkefake: "+format, args...)
	}
}

// notifyLocked wakes the waiters on a change.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Calls returns every call answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// UpgradeCalls counts the nodePools.update calls that asked for an
// upgrade.
func (s *Server) UpgradeCalls() int {
	n := 0
	for _, c := range s.Calls() {
		if c.Upgrade {
			n++
		}
	}
	return n
}

// ChangingCalls lists the calls that change something: every method but
// GET.
func (s *Server) ChangingCalls() []string {
	var out []string
	for _, c := range s.Calls() {
		// testIamPermissions is a POST that only reads.
		if c.HTTPMethod != http.MethodGet && c.Method != "cloudresourcemanager.projects.testIamPermissions" {
			out = append(out, c.Method)
		}
	}
	return out
}

// Faults is how many API requests were refused with an injected fault
// (Options.Faults).
func (s *Server) Faults() int64 { return s.dice.Count() }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Server) nextName(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextNameLocked(prefix)
}

func (s *Server) nextNameLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%08x", prefix, uint32(s.seq)*2654435761)
}
