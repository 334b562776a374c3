// Package awsfake is a local AWS endpoint for tests and the demo: it answers
// the Auto Scaling and EC2 query-protocol calls that pkg/cloud/aws makes, to
// the real AWS SDK for Go v2, and keeps Auto Scaling groups at their desired
// capacity by "launching" instances through a callback (normally one that
// creates a kwok node in the simulated cluster, see KubeNodes).
package awsfake

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// Options configure a Server.
type Options struct {
	// Region is reported in node names and ARNs; default "us-east-1".
	Region string
	// LaunchDelay is how long an instance stays pending before OnLaunch is
	// called; default 1s. A negative value means no delay.
	LaunchDelay time.Duration
	// TerminateDelay is how long an instance stays shutting-down before
	// OnTerminate is called; default 0.
	TerminateDelay time.Duration
	// OnLaunch is called once per instance when it starts running. An error
	// makes the launch fail: the instance is terminated and the group tries
	// again later, as a real Auto Scaling group does.
	OnLaunch func(ctx context.Context, in Instance) error
	// OnTerminate is called once per instance that was launched, when it is
	// terminated.
	OnTerminate func(ctx context.Context, in Instance) error
	// Logf receives one line per launch, termination and failure; default
	// none.
	Logf func(format string, args ...any)
	// Addr is the listen address; default "127.0.0.1:0".
	Addr string
	// MaxGroups is the account's Auto Scaling group quota that
	// DescribeAccountLimits reports and group creation enforces; default 200.
	MaxGroups int
	// AZRebalance runs the AZRebalance process of every group where it is
	// not suspended (see Rebalances). Off by default: a scene's placement
	// then changes only when asked.
	AZRebalance bool
	// EKS times the managed node group updates the Server carries out
	// (eks.go).
	EKS EKSOptions
	// Faults is the share of requests (0 to 1) refused as the services
	// refuse under load, before anything is done: see faults.go.
	Faults float64
	// LostReplies is the share of requests (0 to 1) carried out whose
	// answer is lost: the client gets a server error instead (faults.go).
	LostReplies float64
	// FaultSeed seeds which requests fail, for a repeatable run.
	FaultSeed uint64
}

// EC2 instance states and Auto Scaling lifecycle states used here.
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"

	LifecyclePending     = "Pending"
	LifecycleInService   = "InService"
	LifecycleTerminating = "Terminating"
	LifecycleTerminated  = "Terminated"
)

// Instance is a simulated EC2 instance.
type Instance struct {
	ID, Group, Zone       string
	ImageID, InstanceType string
	LaunchTemplateID      string
	LaunchTemplateName    string
	// LaunchTemplateVersion is the version number the instance was launched
	// from; GroupVersion the version as the group named it then ("$Latest",
	// "$Default" or a number), which is what Auto Scaling reports for it.
	LaunchTemplateVersion string
	GroupVersion          string
	PrivateIP, PrivateDNS string
	LaunchTime            time.Time
	State, Lifecycle      string
	// NodeLabels and NodeTaints, set for the instances of an EKS managed
	// node group (eks.go), are the labels and taints its node registers
	// with, as the group's bootstrap gives them.
	NodeLabels map[string]string
	NodeTaints []corev1.Taint
	// KubeletVersion, set for the instances of an EKS managed node group
	// launched from an EKS optimized AMI, is the kubelet its node reports.
	KubeletVersion string
}

// LaunchTemplate is a launch template with its versions.
type LaunchTemplate struct {
	ID, Name       string
	DefaultVersion int64
	Versions       []TemplateVersion // in order, Versions[i].Number == i+1
}

// TemplateVersion is one launch template version.
type TemplateVersion struct {
	Number                int64
	ImageID, InstanceType string
	Description           string
	Created               time.Time
}

// GroupSpec describes an Auto Scaling group to create.
type GroupSpec struct {
	Name              string
	Min, Max, Desired int32
	// Zones are where instances go. With Subnets they may be left empty:
	// the zones are then the subnets'.
	Zones []string
	// Subnets make the group's VPCZoneIdentifier; the fake's subnets are
	// named after their zone (Subnet). None means no VPCZoneIdentifier.
	Subnets               []string
	LaunchTemplateID      string
	LaunchTemplateVersion string // number, "$Latest" or "$Default"; default "$Default"
	// Tags are the group's tags. Those not in NoPropagate are copied to
	// the instances it launches (PropagateAtLaunch).
	Tags        map[string]string
	NoPropagate map[string]bool
	// HealthCheckType defaults to "EC2". CreateGroup turns a zero
	// HealthCheckGracePeriod or DefaultCooldown into 300 (the console's
	// defaults); CreateAutoScalingGroup keeps what it is sent (AWS
	// defaults: 0 and 300).
	HealthCheckType        string
	HealthCheckGracePeriod int32
	DefaultCooldown        int32
	TerminationPolicies    []string // default ["Default"]; reported, not applied
	// Reported as set; the fake does not act on them.
	CapacityRebalance, NewInstancesProtectedFromScaleIn bool
}

// StatusDeleting is a group's Status while a forced delete terminates its
// instances, as DescribeAutoScalingGroups reports it.
const StatusDeleting = "Delete in progress"

// Group is a snapshot of an Auto Scaling group.
type Group struct {
	GroupSpec
	Created   time.Time
	Status    string     // "" or StatusDeleting
	Instances []Instance // members, terminating ones included
}

type group struct {
	GroupSpec
	created  time.Time
	members  []string  // instance ids, in launch order
	retryAt  time.Time // no launches before this, after a failed one
	deleting bool      // a forced delete waits for the members to go
	// suspended are the suspended processes, with when; rebalancing is
	// the instance AZRebalance launched and waits for.
	suspended   map[string]time.Time
	rebalancing string
}

type instance struct {
	Instance
	launched chan struct{}     // closed when the launch attempt has finished
	ok       bool              // OnLaunch succeeded, so OnTerminate is owed
	tags     map[string]string // the group's propagated tags at launch
	subnet   string            // "" when the group has no subnets
}

// Image is a registered AMI.
type Image struct {
	ID, Name string
	Created  time.Time
}

// Server is a running fake endpoint. Instance ids, private IPs (and so the
// node names derived from them) and launch template ids are unique across
// all Servers of a process: each Server gets its own 10.N.0.0/16 and id
// range, so several Servers can feed one simulated cluster.
type Server struct {
	URL string

	opts  Options
	index uint64 // this Server's number in the process, see servers
	// dice, faultCount and lostCount serve Options.Faults and
	// LostReplies (faults.go).
	dice                  faultDice
	faultCount, lostCount atomic.Int64
	srv                   *http.Server
	ln                    net.Listener
	ctx                   context.Context
	cancel                context.CancelFunc
	wg                    sync.WaitGroup
	kick                  chan struct{}

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every state change, for waiters
	groups    map[string]*group
	templates map[string]*LaunchTemplate
	instances map[string]*instance
	images    map[string]*Image
	seq       int64
	nodes     *NodeOptions // what StartWithKube was given, if it started this Server
	// rebalances are AZRebalance's rounds, its terminations of its own accord.
	rebalances     []Rebalance
	processChanges []ProcessChange
	lb             lbState // load balancers (lb.go)
	// lifecycle holds hooks, warm pools and protections (lifecycle.go).
	lifecycle lifeState
	iam       iamState      // the caller and what it may not do (iam.go)
	quotas    quotaState    // Service Quotas values (quotas.go)
	capacity  capacityState // offerings withheld, subnets' free addresses (capacity.go)
	// eksData holds EKS clusters and managed node groups (eks.go); kube
	// is the cluster StartWithKube was given, whose nodes EKS's updates
	// drain.
	eksData eksState
	kube    kubernetes.Interface
	// tokenAnswers are the answers of mutating calls by idempotency token
	// (idempotency.go).
	tokenAnswers map[string]any
	lostCalls    []string // calls whose answer Options.LostReplies lost
	loseNext     []string // calls whose next answer is lost (LoseAnswer)
	// slowNext holds, by call, how long its next answer is held back
	// (SlowAnswer).
	slowNext map[string]time.Duration
}

// servers numbers the Servers of a process: the number is the second octet
// of their private IPs (modulo 256, so names collide only after 256
// Servers) and the high bits of their instance and launch template ids.
var servers atomic.Uint64

// Start listens on a loopback port and starts the reconcile loop; Close
// stops both. ctx bounds the server's life too.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.LaunchDelay == 0 {
		opts.LaunchDelay = time.Second
	} else if opts.LaunchDelay < 0 {
		opts.LaunchDelay = 0
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.MaxGroups == 0 {
		opts.MaxGroups = 200
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("awsfake: listen: %w", err)
	}
	s := &Server{
		URL:       "http://" + ln.Addr().String(),
		opts:      opts,
		ln:        ln,
		kick:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
		groups:    map[string]*group{},
		templates: map[string]*LaunchTemplate{},
		instances: map[string]*instance{},
		images:    map[string]*Image{},
		index:     servers.Add(1) - 1,
	}
	s.dice.rate, s.dice.lost, s.dice.seed = opts.Faults, opts.LostReplies, opts.FaultSeed
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logf("awsfake: serve: %v", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.loop()
	}()
	return s, nil
}

// Close stops the server and waits for pending launches and terminations.
func (s *Server) Close() {
	s.cancel()
	_ = s.srv.Close()
	s.wg.Wait()
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// notify must be called with mu held after any state change: it wakes the
// reconcile loop and every WaitFor.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// idBase puts the Server's number above the 36 bits of its sequence, so
// ids of different Servers never meet; Server 0 keeps the historical ids.
func (s *Server) idBase() uint64 { return s.index << 36 }

// RegisterImage adds an AMI that DescribeImages reports, or renames one;
// an empty name means the id.
func (s *Server) RegisterImage(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" {
		name = id
	}
	if im := s.images[id]; im != nil {
		im.Name = name
		return
	}
	s.images[id] = &Image{ID: id, Name: name, Created: timeNow()}
}

// ensureImageLocked registers an image the Server's own helpers use, so
// that it exists as it would in AWS; a known image keeps its name.
func (s *Server) ensureImageLocked(id string) {
	if id != "" && s.images[id] == nil {
		s.images[id] = &Image{ID: id, Name: id, Created: timeNow()}
	}
}

// Image returns a registered image.
func (s *Server) Image(id string) (Image, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	im := s.images[id]
	if im == nil {
		return Image{}, false
	}
	return *im, true
}

// CreateLaunchTemplate creates a launch template whose version 1 (the
// default) uses imageID, registers that image if it is unknown (named after
// its id), and returns the template's id (lt-...).
func (s *Server) CreateLaunchTemplate(name, imageID, instanceType string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createLaunchTemplateLocked(name, imageID, instanceType)
}

func (s *Server) createLaunchTemplateLocked(name, imageID, instanceType string) string {
	s.seq++
	id := fmt.Sprintf("lt-%017x", s.idBase()+0x0abc0000+uint64(s.seq))
	s.ensureImageLocked(imageID)
	if instanceType == "" {
		instanceType = "m5.large"
	}
	s.templates[id] = &LaunchTemplate{ID: id, Name: name, DefaultVersion: 1, Versions: []TemplateVersion{{
		Number: 1, ImageID: imageID, InstanceType: instanceType, Created: time.Now().UTC(),
	}}}
	s.notify()
	return id
}

// AddLaunchTemplateVersion adds a version with a new image, copied from the
// latest one, and returns its number; what CreateLaunchTemplateVersion does,
// for tests that set the scene without the SDK. Like CreateLaunchTemplate
// it registers an unknown image; the SDK call does not, as in AWS.
func (s *Server) AddLaunchTemplateVersion(id, imageID string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt := s.templates[id]
	if lt == nil {
		return 0, fmt.Errorf("launch template %q not found", id)
	}
	s.ensureImageLocked(imageID)
	v := lt.Versions[len(lt.Versions)-1]
	v.Number, v.ImageID, v.Created = int64(len(lt.Versions)+1), imageID, time.Now().UTC()
	lt.Versions = append(lt.Versions, v)
	s.notify()
	return v.Number, nil
}

// CreateGroup creates an Auto Scaling group; the reconcile loop then
// launches its desired instances. It checks what CreateAutoScalingGroup
// checks and fails with the same messages.
func (s *Server) CreateGroup(g GroupSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.HealthCheckGracePeriod == 0 {
		g.HealthCheckGracePeriod = 300
	}
	if g.DefaultCooldown == 0 {
		g.DefaultCooldown = 300
	}
	if g.LaunchTemplateVersion == "" {
		g.LaunchTemplateVersion = "$Default"
	}
	lt := s.templates[g.LaunchTemplateID]
	if lt == nil {
		return fmt.Errorf("launch template %q not found", g.LaunchTemplateID)
	}
	if _, ok := lt.resolve(g.LaunchTemplateVersion); !ok {
		return fmt.Errorf("launch template %q has no version %q", g.LaunchTemplateID, g.LaunchTemplateVersion)
	}
	return s.createLocked(g)
}

// zoneRE matches AWS zone names such as us-east-1a.
var zoneRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+[a-z]$`)

// Subnet is the id of the fake's subnet in an AWS zone: the fake has one
// subnet per zone, named after it (subnet-us-east-1a).
func Subnet(zone string) string { return "subnet-" + zone }

// subnetZone is the inverse of Subnet; only ids of that form exist.
func subnetZone(id string) (string, bool) {
	z, ok := strings.CutPrefix(id, "subnet-")
	return z, ok && zoneRE.MatchString(z)
}

// createLocked validates and stores a group whose launch template the
// caller has resolved; errors are AWS's.
func (s *Server) createLocked(g GroupSpec) error {
	if g.Name == "" {
		return validation("1 validation error detected: Value null at 'autoScalingGroupName' failed to satisfy constraint: Member must not be null")
	}
	if s.groups[g.Name] != nil {
		// A group being deleted still holds its name, as in AWS.
		return &apiError{status: http.StatusBadRequest, code: "AlreadyExists",
			message: fmt.Sprintf("AutoScalingGroup by this name already exists - A group with the name %s already exists", g.Name)}
	}
	if g.Min > g.Max {
		return validation("Max bound, %d, must be greater than or equal to min bound, %d", g.Max, g.Min)
	}
	if g.Desired < g.Min || g.Desired > g.Max {
		return validation("Desired capacity:%d must be between the specified min size:%d and max size:%d", g.Desired, g.Min, g.Max)
	}
	zones := slices.Clone(g.Zones)
	if len(g.Subnets) > 0 {
		zones = nil
		for _, sn := range g.Subnets {
			z, ok := subnetZone(sn)
			if !ok {
				return validation("The subnet ID '%s' does not exist", sn)
			}
			if len(g.Zones) > 0 && !slices.Contains(g.Zones, z) {
				return validation("The availability zones of the specified subnets and the Auto Scaling group do not match")
			}
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	if len(zones) == 0 {
		return validation("At least one Availability Zone or VPC Subnet is required.")
	}
	if len(s.groups) >= s.opts.MaxGroups {
		return &apiError{status: http.StatusBadRequest, code: "LimitExceeded",
			message: fmt.Sprintf("You have reached your limit of %d Auto Scaling groups in this Region.", s.opts.MaxGroups)}
	}
	if g.HealthCheckType == "" {
		g.HealthCheckType = "EC2"
	}
	if len(g.TerminationPolicies) == 0 {
		g.TerminationPolicies = []string{"Default"}
	}
	g.Zones = zones
	g.Subnets = slices.Clone(g.Subnets)
	g.TerminationPolicies = slices.Clone(g.TerminationPolicies)
	g.Tags = maps.Clone(g.Tags)
	g.NoPropagate = maps.Clone(g.NoPropagate)
	s.groups[g.Name] = &group{GroupSpec: g, created: time.Now().UTC()}
	s.notify()
	return nil
}

// DeleteGroup deletes a group as DeleteAutoScalingGroup does: a group with
// instances needs force, which terminates them all (OnTerminate runs for
// each) and removes the group once they are gone; until then it is
// described with Status StatusDeleting.
func (s *Server) DeleteGroup(name string, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleteLocked(name, force)
}

func (s *Server) deleteLocked(name string, force bool) error {
	g := s.groups[name]
	if g == nil {
		return validation("AutoScalingGroup name not found - AutoScalingGroup '%s' not found", name)
	}
	if g.deleting {
		return nil // already on its way out
	}
	if !force {
		if len(g.members) > 0 {
			return &apiError{status: http.StatusBadRequest, code: "ResourceInUse",
				message: "You cannot delete an AutoScalingGroup while there are instances or pending Spot instance request(s) still in the group."}
		}
		if g.Desired > 0 {
			// A launch is owed: AWS has a scaling activity in progress.
			return &apiError{status: http.StatusBadRequest, code: "ScalingActivityInProgress",
				message: "You cannot delete an AutoScalingGroup while there are scaling activities in progress for that group."}
		}
	}
	// AWS zeroes the sizes of a group it force-deletes.
	g.deleting = true
	g.Min, g.Max, g.Desired = 0, 0, 0
	for _, id := range slices.Clone(g.members) {
		if in := s.instances[id]; active(in) {
			s.terminateLocked(in)
		}
	}
	s.dropIfGoneLocked(g)
	s.notify()
	return nil
}

// dropIfGoneLocked removes a group being deleted once its last member is.
func (s *Server) dropIfGoneLocked(g *group) {
	if g.deleting && len(g.members) == 0 && s.groups[g.Name] == g {
		delete(s.groups, g.Name)
		s.logf("awsfake: deleted group %s", g.Name)
	}
}

// Groups returns the names of the groups, those being deleted included,
// sorted.
func (s *Server) Groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.groups))
}

// GroupTags returns a group's tags (key to value), nil if there is no such
// group.
func (s *Server) GroupTags(name string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil {
		return nil
	}
	out := maps.Clone(g.Tags)
	if out == nil {
		out = map[string]string{}
	}
	return out
}

// WaitDeleted waits until the group no longer exists.
func (s *Server) WaitDeleted(ctx context.Context, name string) error {
	for {
		s.mu.Lock()
		ch, gone := s.changed, s.groups[name] == nil
		s.mu.Unlock()
		if gone {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %q not deleted: %w", name, ctx.Err())
		case <-ch:
		}
	}
}

// TerminateInstance terminates a group's instance as
// TerminateInstanceInAutoScalingGroup does: with decrement the desired
// capacity goes down by one (an error at the group's min), else the group
// launches a replacement. Terminating an instance already on its way out
// does nothing.
func (s *Server) TerminateInstance(id string, decrement bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.terminateInGroupLocked(id, decrement)
	return err
}

// SetDesired changes a group's desired capacity as the cluster autoscaler
// would (it raises max if needed).
func (s *Server) SetDesired(name string, desired int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil {
		return fmt.Errorf("group %q not found", name)
	}
	if g.deleting {
		return fmt.Errorf("group %q is being deleted", name)
	}
	g.Desired = desired
	g.Max = max(g.Max, desired)
	s.notify()
	return nil
}

// Group returns a snapshot of a group.
func (s *Server) Group(name string) (Group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[name]
	if g == nil {
		return Group{}, false
	}
	out := Group{GroupSpec: g.GroupSpec, Created: g.created}
	if g.deleting {
		out.Status = StatusDeleting
	}
	out.Zones = slices.Clone(g.Zones)
	out.Subnets = slices.Clone(g.Subnets)
	out.TerminationPolicies = slices.Clone(g.TerminationPolicies)
	out.Tags = maps.Clone(g.Tags)
	out.NoPropagate = maps.Clone(g.NoPropagate)
	for _, id := range g.members {
		out.Instances = append(out.Instances, s.instances[id].Instance)
	}
	return out, true
}

// Instance returns a snapshot of an instance, terminated ones included.
func (s *Server) Instance(id string) (Instance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil {
		return Instance{}, false
	}
	return in.Instance, true
}

// LaunchTemplate returns a copy of a launch template.
func (s *Server) LaunchTemplate(id string) (LaunchTemplate, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt := s.templates[id]
	if lt == nil {
		return LaunchTemplate{}, false
	}
	out := *lt
	out.Versions = slices.Clone(lt.Versions)
	return out, true
}

// WaitFor waits until cond, called with a snapshot of the group after every
// change, returns true.
func (s *Server) WaitFor(ctx context.Context, name string, cond func(Group) bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		g, ok := s.Group(name)
		if ok && cond(g) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %q: %w", name, ctx.Err())
		case <-ch:
		}
	}
}

// WaitStable waits until the group has exactly its desired number of
// instances, all InService.
func (s *Server) WaitStable(ctx context.Context, name string) error {
	return s.WaitFor(ctx, name, Stable)
}

// Stable reports whether a group has its desired number of instances, all
// InService.
func Stable(g Group) bool {
	if int32(len(g.Instances)) != g.Desired {
		return false
	}
	for _, in := range g.Instances {
		if in.Lifecycle != LifecycleInService {
			return false
		}
	}
	return true
}

// resolve turns "$Latest", "$Default" or a number into a version number.
func (lt *LaunchTemplate) resolve(v string) (int64, bool) {
	switch v {
	case "$Latest":
		return int64(len(lt.Versions)), true
	case "$Default", "":
		return lt.DefaultVersion, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > int64(len(lt.Versions)) {
		return 0, false
	}
	return n, true
}

func (s *Server) loop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		}
		s.reconcile()
	}
}

// active reports whether an instance counts towards the group's capacity.
func active(in *instance) bool {
	return in.Lifecycle == LifecyclePending || in.Lifecycle == LifecycleInService
}

// reconcile brings every group to its desired capacity: launches go to the
// zones with the fewest instances, and scale-in takes from the zones with the
// most, preferring instances not on the group's current version, then the
// oldest — close to the default termination policy.
func (s *Server) reconcile() {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		g := s.groups[name]
		s.reconcileGroupLocked(g)
		// after the group's launches, which draw on the pool first
		s.reconcileWarmLocked(g)
	}
}

// reconcileGroupLocked brings one group to its desired capacity.
func (s *Server) reconcileGroupLocked(g *group) {
	if s.rebalanceLocked(g) {
		return
	}
	perZone := map[string][]*instance{}
	n := int32(0)
	for _, id := range g.members {
		in := s.instances[id]
		if active(in) {
			perZone[in.Zone] = append(perZone[in.Zone], in)
			n++
		}
	}
	for ; n < g.Desired && !time.Now().Before(g.retryAt); n++ {
		zone := g.Zones[0]
		for _, z := range g.Zones[1:] {
			if len(perZone[z]) < len(perZone[zone]) {
				zone = z
			}
		}
		in := s.drawWarmLocked(g, zone)
		if in == nil {
			// a zone EC2 refuses is passed over (activities.go)
			if zone = s.launchZoneLocked(g, perZone); zone == "" {
				break
			}
			in = s.launchLocked(g, zone)
		}
		perZone[zone] = append(perZone[zone], in)
	}
	lt := s.templates[g.LaunchTemplateID]
	cur, _ := lt.resolve(g.LaunchTemplateVersion)
	curS := strconv.FormatInt(cur, 10)
	for ; n > g.Desired; n-- {
		zone, best := s.scaleInVictimLocked(g, perZone, curS)
		if zone == "" {
			break
		}
		victim := perZone[zone][best]
		perZone[zone] = slices.Delete(perZone[zone], best, best+1)
		s.terminateLocked(victim)
	}
}

// scaleInVictimLocked is the instance scale-in terminates: in the zone
// with the most instances, the one on another launch template (version)
// first, then the oldest. Scale-in passes over protected instances; with
// only those left, zone is "" and none goes.
func (s *Server) scaleInVictimLocked(g *group, perZone map[string][]*instance, curVersion string) (zone string, best int) {
	unprotected := func(in *instance) bool { return !s.protectedLocked(in.ID) }
	for _, z := range g.Zones {
		if slices.ContainsFunc(perZone[z], unprotected) && (zone == "" || len(perZone[z]) > len(perZone[zone])) {
			zone = z
		}
	}
	if zone == "" {
		return "", 0
	}
	cands := perZone[zone]
	outdated := func(in *instance) bool {
		return in.LaunchTemplateID != g.LaunchTemplateID || in.LaunchTemplateVersion != curVersion
	}
	best = slices.IndexFunc(cands, unprotected)
	for i, in := range cands {
		if !unprotected(in) {
			continue
		}
		old, bestOld := outdated(in), outdated(cands[best])
		if (old && !bestOld) || (old == bestOld && in.LaunchTime.Before(cands[best].LaunchTime)) {
			best = i
		}
	}
	return zone, best
}

// launchLocked creates a pending instance from the group's launch template
// version as resolved now, and starts its launch.
func (s *Server) launchLocked(g *group, zone string) *instance {
	in := s.newInstanceLocked(g, zone)
	s.instances[in.ID] = in
	s.launchStartedLocked(g, in)
	s.reserveLaunchLocked(in)
	s.startLocked(g, in)
	return in
}

// startLocked makes a pending instance a member of the group and starts
// its launch.
func (s *Server) startLocked(g *group, in *instance) {
	g.members = append(g.members, in.ID)
	if g.NewInstancesProtectedFromScaleIn {
		s.life().protected[in.ID] = true
	}
	s.notify()
	s.wg.Add(1)
	go s.launch(in)
}

// newInstanceLocked makes a pending instance of the group in zone from its
// launch template version as resolved now, registered nowhere yet.
func (s *Server) newInstanceLocked(g *group, zone string) *instance {
	lt := s.templates[g.LaunchTemplateID]
	vn, _ := lt.resolve(g.LaunchTemplateVersion)
	v := lt.Versions[vn-1]
	s.seq++
	ip := fmt.Sprintf("10.%d.%d.%d", s.index%256, (s.seq/250)%250, s.seq%250+2)
	tags := map[string]string{}
	for k, v := range g.Tags {
		if !g.NoPropagate[k] {
			tags[k] = v
		}
	}
	subnet := ""
	for _, sn := range g.Subnets {
		if z, _ := subnetZone(sn); z == zone {
			subnet = sn
			break
		}
	}
	in := &instance{tags: tags, subnet: subnet, Instance: Instance{
		ID:                    fmt.Sprintf("i-%017x", s.idBase()+0x0f00000+uint64(s.seq)),
		Group:                 g.Name,
		Zone:                  zone,
		ImageID:               v.ImageID,
		InstanceType:          v.InstanceType,
		LaunchTemplateID:      lt.ID,
		LaunchTemplateName:    lt.Name,
		LaunchTemplateVersion: strconv.FormatInt(vn, 10),
		GroupVersion:          g.LaunchTemplateVersion,
		PrivateIP:             ip,
		PrivateDNS:            fmt.Sprintf("ip-%s.%s.compute.internal", dashes(ip), s.opts.Region),
		LaunchTime:            time.Now().UTC().Truncate(time.Second),
		State:                 StatePending,
		Lifecycle:             LifecyclePending,
	}, launched: make(chan struct{})}
	s.eksInstanceLocked(g, in)
	return in
}

func dashes(ip string) string {
	b := []byte(ip)
	for i := range b {
		if b[i] == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

func (s *Server) launch(in *instance) {
	defer s.wg.Done()
	defer close(in.launched)
	select {
	case <-s.ctx.Done():
		return
	case <-time.After(s.opts.LaunchDelay):
	}
	s.mu.Lock()
	snap := in.Instance
	s.mu.Unlock()
	if snap.Lifecycle != LifecyclePending {
		return // terminated before it came up
	}
	var err error
	if s.opts.OnLaunch != nil {
		err = s.opts.OnLaunch(s.ctx, snap)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launchEndedLocked(in, err)
	if err != nil {
		s.logf("awsfake: launch %s in %s failed: %v", in.ID, in.Zone, err)
		// Back off before the replacement so a callback that always fails
		// does not spin.
		backoff := max(s.opts.LaunchDelay, time.Second)
		if g := s.groups[in.Group]; g != nil {
			g.retryAt = time.Now().Add(backoff)
		}
		if in.Lifecycle == LifecyclePending {
			s.removeLocked(in)
		}
		s.kickAfter(backoff)
		return
	}
	in.ok = true
	if in.Lifecycle == LifecyclePending {
		in.State, in.Lifecycle = StateRunning, LifecycleInService
		s.logf("awsfake: launched %s (%s) in %s from %s version %s", in.ID, in.PrivateDNS, in.Zone, in.LaunchTemplateID, in.LaunchTemplateVersion)
	}
	s.notify()
}

// kickAfter looks at the groups again after d: a launch held back until
// then (a failed one's back-off, a refused zone's) is tried.
func (s *Server) kickAfter(d time.Duration) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-s.ctx.Done():
		case <-time.After(d):
			s.mu.Lock()
			s.notify()
			s.mu.Unlock()
		}
	}()
}

// terminateLocked starts terminating an instance; the caller has checked it
// is active.
func (s *Server) terminateLocked(in *instance) {
	s.lbTerminatingLocked(in)
	if s.holdLocked(in) {
		return // a terminating lifecycle hook holds it (lifecycle.go)
	}
	s.shutDownLocked(in, LifecycleTerminating)
}

// shutDownLocked shuts an instance down for good, in the given lifecycle
// state until it is terminated.
func (s *Server) shutDownLocked(in *instance, lifecycle string) {
	in.State, in.Lifecycle = StateShuttingDown, lifecycle
	s.notify()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-in.launched // so OnTerminate never runs before OnLaunch
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.opts.TerminateDelay):
		}
		s.mu.Lock()
		snap, owed := in.Instance, in.ok
		s.mu.Unlock()
		if owed && s.opts.OnTerminate != nil {
			if err := s.opts.OnTerminate(s.ctx, snap); err != nil {
				s.logf("awsfake: terminate %s: %v", in.ID, err)
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.removeLocked(in)
		s.logf("awsfake: terminated %s in %s", in.ID, in.Zone)
	}()
}

// removeLocked marks an instance terminated and drops it from its group; EC2
// keeps describing it, as it does for a while after termination.
func (s *Server) removeLocked(in *instance) {
	in.State, in.Lifecycle = StateTerminated, LifecycleTerminated
	s.unreserveLocked(in)
	if g := s.groups[in.Group]; g != nil {
		g.members = slices.DeleteFunc(g.members, func(id string) bool { return id == in.ID })
		s.dropIfGoneLocked(g)
	}
	s.notify()
}

// DefaultLogf logs through the standard logger.
func DefaultLogf(format string, args ...any) { log.Printf(format, args...) }

func timeNow() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
