package fakecloud

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Kind is what a group of the cloud can do. Each kind is a Go type of its
// own whose interfaces are its capabilities, as a real provider's are: the
// plugin learns them from cloud.Capabilities, never from the kind.
type Kind int

const (
	// Remover: the run only removes machines; the cloud launches their
	// replacements on what the group launches (already the target).
	Remover Kind = iota
	// Resizable: a cloud.Scaler the run points at the target and resizes.
	Resizable
	// Rebalancing: a Group that moves machines between zones itself
	// (cloud.Rebalancer).
	Rebalancing
	// FollowsDefault: a Group that launches the template's default
	// (cloud.DefaultFollower).
	FollowsDefault
	// SelfUpdating: a Group that replaces machines itself once pointed at
	// a new version (cloud.SelfUpdater).
	SelfUpdating
	// LoadBalanced: a Group whose machines sit in a load balancer
	// (cloud.Deregisterer) and leave it before they are gone
	// (cloud.Departures).
	LoadBalanced
	// NewGroups: a Pool beside which a green group is created
	// (cloud.BlueGreen), never resized by the run.
	NewGroups
	// Managed: the cloud's service runs the update (cloud.ManagedUpdater,
	// with every control).
	Managed
)

// base is what every kind knows: the cloud, its group, the target.
type base struct {
	w      *World
	group  string
	target string
}

// provider is the provider of a group of kind k.
func (b *base) provider(k Kind, soak string) cloud.Provider {
	r := resizable{pool{b}}
	switch k {
	case Remover:
		return remover{b}
	case Resizable:
		return r
	case Rebalancing:
		return rebalancing{r}
	case FollowsDefault:
		return following{r}
	case SelfUpdating:
		return selfUpdating{r}
	case LoadBalanced:
		return loadBalanced{r}
	case NewGroups:
		return &blueGreen{pool: pool{b}}
	}
	return &service{base: b, soak: soak}
}

func (b *base) Name() string { return Name }

// lock takes the cloud and returns the group; the caller unlocks.
func (b *base) lock() *group {
	b.w.mu.Lock()
	return b.w.groups[b.group]
}

func (b *base) unlock() { b.w.mu.Unlock() }

// removeNode terminates a node's machine; the group launches a
// replacement as it does whenever it runs short of its desired size.
func (b *base) removeNode(ctx context.Context, node string) error {
	g := b.lock()
	defer b.unlock()
	b.w.call("RemoveNode %s", node)
	if m := g.machines[node]; m != nil && g.kind == LoadBalanced && !m.deregistered {
		b.w.call("cut connections of %s", node) // what a Deregisterer prevents
	}
	if err := b.w.terminate(ctx, g, node); err != nil {
		return err
	}
	return b.w.fill(ctx, g)
}

// remover removes nodes, and nothing more.
type remover struct{ *base }

func (remover) Describe() string { return "terminate the fake machine; the cloud replaces it" }

func (r remover) RemoveNode(ctx context.Context, node string) error { return r.removeNode(ctx, node) }

// pool is a group the run reads.
type pool struct{ *base }

func (pool) Describe() string { return "terminate the fake machine" }

func (p pool) GroupName() string { return p.group }

func (p pool) Sizes(context.Context) (plan.Sizes, error) {
	g := p.lock()
	defer p.unlock()
	return g.sizes, nil
}

func (p pool) Machines(_ context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	p.lock()
	defer p.unlock()
	return p.w.machinesOf(nodes, p.group), nil, nil
}

func (pool) Current(m plan.Machine, version string) bool { return m.Version == version }

// resizable is a Group: pointed at the target and resized by the run.
type resizable struct{ pool }

func (r resizable) RemoveNode(ctx context.Context, node string) error { return r.removeNode(ctx, node) }

// Setup points the group at the target. A group that follows the
// template's default launches that, whatever it is pointed at; one that
// updates itself replaces every machine it is not held from.
func (r resizable) Setup(ctx context.Context) (string, error) {
	g := r.lock()
	defer r.unlock()
	r.w.call("Setup %s", r.target)
	g.launches = r.target
	if g.kind == SelfUpdating && g.selfUpdates == "PROACTIVE" {
		return r.target, r.selfReplace(ctx, g)
	}
	return r.target, nil
}

// selfReplace is the group replacing its outdated machines itself,
// undrained; w.mu is held.
func (r resizable) selfReplace(ctx context.Context, g *group) error {
	for id, m := range g.machines {
		if m.version == g.launches {
			continue
		}
		r.w.call("replaced %s undrained", id)
		if err := r.w.terminate(ctx, g, id); err != nil {
			return err
		}
	}
	return r.w.fill(ctx, g)
}

func (r resizable) SetDesiredAndMax(ctx context.Context, desired, max int32) error {
	g := r.lock()
	defer r.unlock()
	r.w.call("SetDesiredAndMax %d %d", desired, max)
	g.sizes.Desired, g.sizes.Max = desired, max
	return r.w.fill(ctx, g)
}

func (r resizable) SetMax(_ context.Context, max int32) error {
	g := r.lock()
	defer r.unlock()
	r.w.call("SetMax %d", max)
	g.sizes.Max = max
	return nil
}

func (r resizable) Shrink(ctx context.Context, node string) error {
	g := r.lock()
	defer r.unlock()
	r.w.call("Shrink %s", node)
	if m := g.machines[node]; m != nil && g.kind == LoadBalanced && !m.deregistered {
		r.w.call("cut connections of %s", node)
	}
	g.sizes.Desired--
	return r.w.terminate(ctx, g, node)
}

// rebalancing is a Group that rebalances its zones, unless held.
type rebalancing struct{ resizable }

const rebalanceName = "FakeRebalance"

func (rebalancing) RebalanceName() string { return rebalanceName }

func (r rebalancing) RebalanceHeld(context.Context) (bool, error) {
	g := r.lock()
	defer r.unlock()
	return g.rebalanceHeld, nil
}

func (r rebalancing) RebalanceZones(context.Context) ([]string, error) {
	g := r.lock()
	defer r.unlock()
	return g.zones, nil
}

func (r rebalancing) HoldRebalance(context.Context) error    { return r.setHeld(true) }
func (r rebalancing) ReleaseRebalance(context.Context) error { return r.setHeld(false) }

func (r rebalancing) setHeld(held bool) error {
	g := r.lock()
	defer r.unlock()
	r.w.call("%s held=%v", rebalanceName, held)
	g.rebalanceHeld = held
	return nil
}

// Shrink leaves the zones uneven; a group whose rebalancing is not held
// evens them out at once, terminating a node nobody drained.
func (r rebalancing) Shrink(ctx context.Context, node string) error {
	if err := r.resizable.Shrink(ctx, node); err != nil {
		return err
	}
	g := r.lock()
	defer r.unlock()
	if !g.rebalanceHeld {
		r.w.call("%s ran unheld after Shrink %s", rebalanceName, node)
	}
	return nil
}

// following is a Group that launches the template's default.
type following struct{ resizable }

func (f following) TemplateDefault(context.Context) (bool, string, error) {
	f.lock()
	defer f.unlock()
	return true, f.w.defaultVersion, nil
}

func (f following) SetTemplateDefault(_ context.Context, version string) error {
	f.lock()
	defer f.unlock()
	f.w.call("SetTemplateDefault %s", version)
	f.w.defaultVersion = version
	return nil
}

// selfUpdating is a Group that replaces machines itself unless held.
type selfUpdating struct{ resizable }

func (s selfUpdating) SelfUpdates(context.Context) (string, error) {
	g := s.lock()
	defer s.unlock()
	return g.selfUpdates, nil
}

func (s selfUpdating) HoldUpdates(context.Context) error {
	g := s.lock()
	defer s.unlock()
	s.w.call("HoldUpdates")
	g.selfUpdates = "HELD"
	return nil
}

func (s selfUpdating) RestoreUpdates(_ context.Context, was string) (string, error) {
	g := s.lock()
	defer s.unlock()
	s.w.call("RestoreUpdates %s", was)
	g.selfUpdates = was
	return "", nil
}

// loadBalanced is a Group behind a load balancer.
type loadBalanced struct{ resizable }

func (l loadBalanced) Deregister(_ context.Context, nodes []string, _ time.Duration, _ func(string)) error {
	g := l.lock()
	defer l.unlock()
	l.w.call("Deregister %s", joinNames(nodes))
	for _, n := range nodes {
		if m := g.machines[n]; m != nil {
			m.deregistered = true
		}
	}
	return nil
}

func (l loadBalanced) MachineOf(_ context.Context, node string) (string, error) {
	g := l.lock()
	defer l.unlock()
	if g.machines[node] == nil {
		return "", nil
	}
	return node, nil
}

// Leaving: a terminated machine is gone at once.
func (l loadBalanced) Leaving(_ context.Context, machines []string) (map[string]cloud.Departure, error) {
	g := l.lock()
	defer l.unlock()
	l.w.call("Leaving %s", joinNames(machines)) // a read, logged to show the run waits
	out := map[string]cloud.Departure{}
	for _, id := range machines {
		out[id] = cloud.Departure{Gone: g.machines[id] == nil, Lifecycle: "terminated"}
	}
	return out, nil
}

// blueGreen is a Pool that stands a green group up beside it.
type blueGreen struct {
	pool
	green string // the group Machines reports too, once used
}

func (b *blueGreen) PrepareTarget(context.Context) (string, error) {
	b.lock()
	defer b.unlock()
	b.w.call("PrepareTarget %s", b.target)
	return b.target, nil
}

func (b *blueGreen) CheckQuota(context.Context) error {
	b.lock()
	defer b.unlock()
	b.w.call("CheckQuota")
	return nil
}

func (b *blueGreen) GreenName(version string) string { return b.group + "-v" + version }

// CreateGreen makes green beside blue, in blue's zones, launching
// version; one made before is found.
func (b *blueGreen) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	blue := b.lock()
	defer b.unlock()
	b.w.call("CreateGreen %s version %s, %s", name, version, sizes)
	g := b.w.groups[name]
	if g == nil {
		g = &group{name: name, nodeGroup: blue.nodeGroup, kind: NewGroups, zones: blue.zones, launches: version, machines: map[string]*machine{}}
		b.w.groups[name] = g
	}
	g.sizes = sizes
	return b.w.fill(ctx, g)
}

func (b *blueGreen) UseGreen(name string) {
	b.lock()
	defer b.unlock()
	b.green = name
}

func (b *blueGreen) Machines(_ context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	b.lock()
	defer b.unlock()
	return b.w.machinesOf(nodes, b.group, b.green), nil, nil
}

func (b *blueGreen) GroupSizes(_ context.Context, name string) (plan.Sizes, error) {
	b.lock()
	defer b.unlock()
	if g := b.w.groups[name]; g != nil {
		return g.sizes, nil
	}
	return plan.Sizes{}, fmt.Errorf("fake group %q: %w", name, cloud.ErrGroupNotFound)
}

func (b *blueGreen) SetGroupSizes(ctx context.Context, name string, s plan.Sizes) error {
	b.lock()
	defer b.unlock()
	b.w.call("SetGroupSizes %s %s", name, s)
	g := b.w.groups[name]
	if g == nil {
		return fmt.Errorf("fake group %q: %w", name, cloud.ErrGroupNotFound)
	}
	g.sizes = s
	return b.w.fill(ctx, g)
}

// DeleteGroup terminates the group's machines and deletes it.
func (b *blueGreen) DeleteGroup(ctx context.Context, name string) error {
	b.lock()
	defer b.unlock()
	b.w.call("DeleteGroup %s", name)
	g := b.w.groups[name]
	if g == nil {
		return nil
	}
	for id := range g.machines {
		if err := b.w.terminate(ctx, g, id); err != nil {
			return err
		}
	}
	delete(b.w.groups, name)
	return nil
}

// Each kind is the provider it says it is, and nothing more: what the
// plugin may do with it follows from these alone.
var (
	_ cloud.Remover         = remover{}
	_ cloud.Scaler          = resizable{}
	_ cloud.Rebalancer      = rebalancing{}
	_ cloud.DefaultFollower = following{}
	_ cloud.SelfUpdater     = selfUpdating{}
	_ cloud.Deregisterer    = loadBalanced{}
	_ cloud.Departures      = loadBalanced{}
	_ cloud.BlueGreen       = (*blueGreen)(nil)
)
