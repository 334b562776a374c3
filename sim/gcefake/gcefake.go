// Package gcefake is a local Compute Engine endpoint for tests and the
// demo: it answers the REST JSON calls of google.golang.org/api/compute/v1
// that pkg/cloud/gce makes (instance templates, images, instances, zonal
// and regional managed instance groups, autoscalers, operations), pointed
// at with option.WithEndpoint(Server.Endpoint) and
// option.WithoutAuthentication. Its managed instance groups keep their
// target size by creating instances that become nodes of the simulated
// cluster through a callback (see KubeNodes).
//
// No emulator of Compute Engine exists to check it against, so every
// behaviour it models cites the Compute API reference
// (https://cloud.google.com/compute/docs/reference/rest/v1/...) where it is
// implemented; README.md lists what it does not model.
package gcefake

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpfault"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
)

// Options configure a Server.
type Options struct {
	// Project is the project the scenes are made in; default "sim-project".
	// Every project answers, each with its own resources.
	Project string
	// ProjectNumber is what the created-by metadata of instances names
	// the project by; default 123456789012.
	ProjectNumber int64
	// LaunchDelay is how long a managed instance stays CREATING (or
	// RECREATING) before OnLaunch; default 1s, negative for none.
	LaunchDelay time.Duration
	// DeleteDelay is how long it stays DELETING before OnDelete; default
	// 200ms, negative for none.
	DeleteDelay time.Duration
	// OnLaunch is called once per instance that starts running (again,
	// after a recreate); an error fails the creation and the group tries
	// again later.
	OnLaunch func(ctx context.Context, in Instance) error
	// OnDelete is called once per instance the group deletes.
	OnDelete func(ctx context.Context, in Instance) error
	// MaxGroups is the INSTANCE_GROUP_MANAGERS quota regions.get reports
	// and insert enforces per region; default 500.
	MaxGroups int
	// Logf receives a line per creation, deletion and action of the
	// group's own; default none.
	Logf func(format string, args ...any)
	// Addr is the listen address; default "127.0.0.1:0".
	Addr string
	// Faults is the share of API requests (0..1) refused, before they are
	// acted on, with one of the faults Google's APIs answer under load
	// (see gcpfault.Faults); FaultSeed makes which ones the same each run.
	// The test hooks (Server's methods) never fail.
	Faults    float64
	FaultSeed uint64
	// LateFaults is the share of calls that change something (those
	// with a requestId) that are done and then answered 504
	// DEADLINE_EXCEEDED (gcpfault.Late), as if the answer were lost: a
	// retry with the call's requestId gets the first answer (see once).
	LateFaults float64
	// SlowOperations leaves each global operation RUNNING until it has
	// been polled once, as a Compute operation that takes a while is
	// (globalOperations.wait "returns when the operation is DONE or when
	// the wait deadline is reached"); default DONE at once.
	SlowOperations bool
}

// Managed instance actions and instance statuses, as
// instanceGroupManagers.listManagedInstances reports them
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/listManagedInstances).
const (
	ActionNone       = "NONE"
	ActionCreating   = "CREATING"
	ActionRecreating = "RECREATING"
	ActionDeleting   = "DELETING"

	StatusProvisioning = "PROVISIONING"
	StatusRunning      = "RUNNING"
	StatusStopping     = "STOPPING"
)

// Update policy values of instanceGroupManagers
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers#updatepolicy).
const (
	Proactive     = "PROACTIVE"
	Opportunistic = "OPPORTUNISTIC"
	NoRedistrib   = "NONE"
)

// Instance is a snapshot of a managed instance.
type Instance struct {
	Project, Zone, Name string
	ID                  uint64
	// Group is the managed instance group's key (see Group.Key).
	Group string
	// Template is the name of the instance template the VM was created
	// from; Intended the one the group intends (they differ while it is
	// RECREATING).
	Template, Intended string
	// Image is the boot disk's source image of Template.
	Image          string
	Action, Status string
	// Labels are the node labels the template's kube-labels metadata
	// asks for.
	Labels  map[string]string
	Created time.Time
	// LastError is the error of the last failed attempt to create the VM,
	// as listManagedInstances reports it (lastAttempt.errors); nil once
	// an attempt succeeded.
	LastError *compute.ManagedInstanceLastAttemptErrorsErrors
}

// Removal is an instance a group deleted of its own accord: a proactive
// update or an instance redistribution. Nobody drained it.
type Removal struct {
	Group, Instance, Zone, Why string
	At                         time.Time
}

// Server is a running fake endpoint.
type Server struct {
	// URL is the server's root; Endpoint what option.WithEndpoint takes.
	URL, Endpoint string

	opts   Options
	srv    *http.Server
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	mu          sync.Mutex
	changed     chan struct{}
	templates   map[string]*compute.InstanceTemplate // by project/name
	images      map[string]*compute.Image            // by project/name
	groups      map[string]*group                    // by Group.Key
	instances   map[string]*instance                 // by project/zone/name
	autoscalers map[string]*compute.Autoscaler       // by project/scope/name
	// backendServices are by project/global/name or
	// project/regions/R/name.
	backendServices map[string]*compute.BackendService
	// subnetworks are those RegisterSubnetwork made, by project/region/name.
	subnetworks map[string]bool
	// quotas are the regional quotas' limits SetQuota set, by
	// project/region/metric.
	quotas map[string]float64
	// notOffered are the machine types SetOffered took out of a zone, by
	// zone/type.
	notOffered map[string]bool
	// failCreate is the error code creations fail with, by zone ("": all).
	failCreate map[string]string
	// failTemplate is the error template inserts end with (nil: none).
	failTemplate *compute.OperationError
	ops          map[string]*compute.Operation // by project/scope/name
	removals     []Removal
	calls        []Call
	// role is what the caller may do (see Grant and Deny).
	role gcpiam.Role
	dice *gcpfault.Dice
	late *gcpfault.Dice
	// done are the answers of the calls done, by project and requestId.
	done map[string]any
}

// Call is one request the server answered: its method and the API's
// method name (compute.instanceGroupManagers.resize).
type Call struct {
	HTTPMethod, Method string
}

// ids numbers resources across all Servers of a process, so instance
// names, and so node names, never collide in one simulated cluster.
var ids atomic.Uint64

func nextID() uint64 { return 1_000_000 + ids.Add(1) }

// Start listens and serves until ctx ends or Close is called.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Project == "" {
		opts.Project = "sim-project"
	}
	if opts.ProjectNumber == 0 {
		opts.ProjectNumber = 123456789012
	}
	if opts.LaunchDelay == 0 {
		opts.LaunchDelay = time.Second
	}
	if opts.DeleteDelay == 0 {
		opts.DeleteDelay = 200 * time.Millisecond
	}
	if opts.MaxGroups == 0 {
		opts.MaxGroups = 500
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL: "http://" + ln.Addr().String(), opts: opts, ln: ln, kick: make(chan struct{}, 1),
		changed: make(chan struct{}), templates: map[string]*compute.InstanceTemplate{},
		images: map[string]*compute.Image{}, groups: map[string]*group{}, instances: map[string]*instance{},
		autoscalers: map[string]*compute.Autoscaler{}, ops: map[string]*compute.Operation{},
		backendServices: map[string]*compute.BackendService{}, failCreate: map[string]string{}, subnetworks: map[string]bool{}, quotas: map[string]float64{}, notOffered: map[string]bool{},
		dice: &gcpfault.Dice{Rate: opts.Faults, Seed: opts.FaultSeed},
		late: &gcpfault.Dice{Rate: opts.LateFaults, Seed: opts.FaultSeed + 1, From: gcpfault.Late}, done: map[string]any{},
	}
	s.Endpoint = s.URL + apiPrefix
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); _ = s.srv.Serve(ln) }()
	go func() { defer s.wg.Done(); s.loop() }()
	return s, nil
}

// Close stops the server and its groups.
func (s *Server) Close() {
	s.cancel()
	_ = s.srv.Close()
	s.wg.Wait()
}

// Faults is how many requests were refused with an injected fault, or
// done and answered with one (LateFaults).
func (s *Server) Faults() int64 { return s.dice.Count() + s.late.Count() }

// Project is the default project.
func (s *Server) Project() string { return s.opts.Project }

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// notifyLocked wakes waiters and the reconcile loop.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Removals returns every instance a group deleted of its own accord.
func (s *Server) Removals() []Removal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Removal(nil), s.removals...)
}

// Calls returns every call answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// WaitFor calls cond with a snapshot of the group after every change until
// it returns true or ctx ends.
func (s *Server) WaitFor(ctx context.Context, key string, cond func(Group) bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		g, ok := s.groupLocked(key)
		s.mu.Unlock()
		if ok && cond(g) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for group %s: %w", key, ctx.Err())
		case <-ch:
		}
	}
}

// WaitStable waits until the group runs its target size with no action
// under way.
func (s *Server) WaitStable(ctx context.Context, key string) error {
	return s.WaitFor(ctx, key, func(g Group) bool { return g.Stable() })
}
