package cloud

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The fake providers below implement one capability interface each, on
// top of the one before: the compile-time checks keep them doing so, so a
// test's expectation of Capabilities follows from the type alone.
var (
	_ Remover          = (*fakeRemover)(nil)
	_ Scaler           = (*fakeGroup)(nil)
	_ Rebalancer       = (*fakeRebalancer)(nil)
	_ Departures       = (*fakeDepartures)(nil)
	_ DefaultFollower  = (*fakeFollower)(nil)
	_ Deregisterer     = (*fakeDeregisterer)(nil)
	_ BlueGreen        = (*fakeBlueGreen)(nil)
	_ ManagedUpdater   = (*fakeManaged)(nil)
	_ UpdateCanceller  = cancels{}
	_ UpdateResumer    = resumes{}
	_ UpdateRollbacker = rollsBack{}
	_ UpdateCompleter  = completes{}
)

// fakeProvider is a Provider with no capability at all.
type fakeProvider struct{ name string }

func (p *fakeProvider) Name() string     { return p.name }
func (p *fakeProvider) Describe() string { return "nothing" }

// fakeRemover removes nodes one by one.
type fakeRemover struct{ fakeProvider }

func (p *fakeRemover) RemoveNode(context.Context, string) error { return nil }

// fakeGroup is one resizable group of machines.
type fakeGroup struct {
	fakeRemover
	group string
	sizes plan.Sizes
}

func (g *fakeGroup) GroupName() string                             { return g.group }
func (g *fakeGroup) Setup(context.Context) (string, error)         { return "2", nil }
func (g *fakeGroup) Sizes(context.Context) (plan.Sizes, error)     { return g.sizes, nil }
func (g *fakeGroup) SetMax(_ context.Context, max int32) error     { g.sizes.Max = max; return nil }
func (g *fakeGroup) Current(m plan.Machine, version string) bool   { return m.Version == version }
func (g *fakeGroup) Shrink(ctx context.Context, node string) error { return g.RemoveNode(ctx, node) }
func (g *fakeGroup) SetDesiredAndMax(_ context.Context, d, m int32) error {
	g.sizes.Desired, g.sizes.Max = d, m
	return nil
}
func (g *fakeGroup) Machines(context.Context, []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	return nil, nil, nil
}

// fakeRebalancer is a group whose cloud moves machines between zones.
type fakeRebalancer struct{ fakeGroup }

func (g *fakeRebalancer) RebalanceName() string                            { return "AZRebalance" }
func (g *fakeRebalancer) RebalanceHeld(context.Context) (bool, error)      { return false, nil }
func (g *fakeRebalancer) RebalanceZones(context.Context) ([]string, error) { return nil, nil }
func (g *fakeRebalancer) HoldRebalance(context.Context) error              { return nil }
func (g *fakeRebalancer) ReleaseRebalance(context.Context) error           { return nil }

// fakeDepartures is a group whose removed machines linger.
type fakeDepartures struct{ fakeGroup }

func (g *fakeDepartures) MachineOf(context.Context, string) (string, error) { return "", nil }
func (g *fakeDepartures) Leaving(context.Context, []string) (map[string]Departure, error) {
	return nil, nil
}

// fakeFollower is a group that launches its template's default version.
type fakeFollower struct{ fakeGroup }

func (g *fakeFollower) TemplateDefault(context.Context) (bool, string, error) { return true, "1", nil }
func (g *fakeFollower) SetTemplateDefault(context.Context, string) error      { return nil }

// fakeDeregisterer is a remover whose machines sit in load balancers.
type fakeDeregisterer struct{ fakeRemover }

func (p *fakeDeregisterer) Deregister(context.Context, []string, time.Duration, func(string)) error {
	return nil
}

// fakeBlueGreen can stand a second group up beside the first.
type fakeBlueGreen struct {
	fakeGroup
	greens
}

// greens are the calls that stand a green group up and delete a group,
// to embed beside a Pool's reads.
type greens struct{}

func (greens) PrepareTarget(context.Context) (string, error)                 { return "2", nil }
func (greens) CheckQuota(context.Context) error                              { return nil }
func (greens) GreenName(version string) string                               { return "green-v" + version }
func (greens) UseGreen(string)                                               {}
func (greens) DeleteGroup(context.Context, string) error                     { return nil }
func (greens) CreateGreen(context.Context, string, string, plan.Sizes) error { return nil }
func (greens) GroupSizes(context.Context, string) (plan.Sizes, error)        { return plan.Sizes{}, nil }
func (greens) SetGroupSizes(context.Context, string, plan.Sizes) error       { return nil }

// poolReads are a Pool's reads but GroupName, to embed beside a provider
// that names its group already.
type poolReads struct{}

func (poolReads) Sizes(context.Context) (plan.Sizes, error) { return plan.Sizes{}, nil }
func (poolReads) Current(plan.Machine, string) bool         { return false }
func (poolReads) Machines(context.Context, []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	return nil, nil, nil
}

// fakeManaged is a group whose cloud service runs the update itself, with
// no control over it.
type fakeManaged struct {
	fakeProvider
	group string
}

func (m *fakeManaged) GroupName() string { return m.group }
func (m *fakeManaged) Settings(context.Context) (plan.UpdateSettings, error) {
	return plan.UpdateSettings{MaxUnavailable: "1"}, nil
}
func (m *fakeManaged) Configure(context.Context, plan.UpdateSettings) error { return nil }
func (m *fakeManaged) StartUpdate(context.Context, bool) (string, error)    { return "u-1", nil }
func (m *fakeManaged) Progress(_ context.Context, id string) (UpdateProgress, error) {
	return UpdateProgress{ID: id, State: UpdateInProgress}, nil
}

// The controls a service may offer, one type each, to embed in any mix.
type (
	cancels   struct{}
	resumes   struct{}
	rollsBack struct{}
	completes struct{}
)

func (cancels) CancelUpdate(context.Context, string) error               { return nil }
func (resumes) ResumeUpdate(context.Context, string) (string, error)     { return "u-2", nil }
func (rollsBack) RollbackUpdate(context.Context, string) (string, error) { return "u-3", nil }
func (completes) CompleteUpdate(context.Context, string) error           { return nil }

// fakeCloud is a registered cloud that owns the provider IDs with its
// scheme, binds flags, completes their values and has help of its own.
type fakeCloud struct {
	name     string
	provider Provider
	openErr  error
	bind     func(f *Flags)
	values   map[string][]string
}

func (c *fakeCloud) Name() string                    { return c.name }
func (c *fakeCloud) Owns(providerID string) bool     { return strings.HasPrefix(providerID, c.name+"://") }
func (c *fakeCloud) Validate(plan.CloudTarget) error { return nil }
func (c *fakeCloud) Help() string                    { return "remove the " + c.name + " machine" }
func (c *fakeCloud) FlagValues(flag string) []string { return c.values[flag] }
func (c *fakeCloud) BindFlags(f *Flags) {
	if c.bind != nil {
		c.bind(f)
	}
}

// Open returns a view whose Can claims every capability, so a test sees
// that OpenGroup, not the cloud, decides it.
func (c *fakeCloud) Open(_ context.Context, _ kubernetes.Interface, _ []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, Provider, error) {
	if c.openErr != nil {
		return nil, nil, c.openErr
	}
	return &plan.CloudGroup{GroupID: plan.GroupID{Provider: c.name, Group: t.Group}, Can: ^plan.Capability(0)}, c.provider, nil
}

// plainCloud is a registered cloud with no flags, values or help.
type plainCloud struct{ name string }

func (c plainCloud) Name() string                    { return c.name }
func (c plainCloud) Owns(providerID string) bool     { return strings.HasPrefix(providerID, c.name+"://") }
func (c plainCloud) Validate(plan.CloudTarget) error { return nil }
func (c plainCloud) Open(context.Context, kubernetes.Interface, []corev1.Node, plan.CloudTarget) (*plan.CloudGroup, Provider, error) {
	return nil, nil, ErrNoGroup
}

// registered makes cs the only registered clouds for the test, and puts
// the registry back after it.
func registered(t *testing.T, cs ...Cloud) {
	t.Helper()
	saved := clouds
	clouds = map[string]Cloud{}
	t.Cleanup(func() { clouds = saved })
	for _, c := range cs {
		Register(c)
	}
}
