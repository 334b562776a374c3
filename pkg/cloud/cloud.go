// Package cloud holds the providers that create and remove the machines
// behind a node group, behind one interface for planning and running; a
// provider is a package of its own that registers itself here.
package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Provider is what a run works with: the interfaces it implements beside
// this one say what the run may do with it (see Capabilities).
type Provider interface {
	// Name is what --provider takes.
	Name() string
	// Describe says in a few words what removal means, for the plan.
	Describe() string
}

// Remover is a provider that removes drained nodes one by one.
type Remover interface {
	Provider
	// RemoveNode takes a drained, cordoned node out of the group.
	RemoveNode(ctx context.Context, node string) error
}

// Pool is a provider whose nodes are the machines of one cloud group,
// which a run reads: its sizes and which machine stands for which node.
// A Pool alone is never resized by the run behind its cloud's back (an
// EKS managed node group); Group is one the run resizes itself.
type Pool interface {
	Provider
	// GroupName names the group for messages and the record.
	GroupName() string
	// Sizes reads min, desired and max (see plan.Sizes for a cloud whose
	// groups have only a target size).
	Sizes(ctx context.Context) (plan.Sizes, error)
	// Machines maps nodes to the group's machines; the machines of the
	// group that no node stands for yet come back in pending.
	Machines(ctx context.Context, nodes []*corev1.Node) (byNode map[string]plan.Machine, pending []plan.Machine, err error)
	// Current reports whether a machine runs the target configuration.
	Current(m plan.Machine, version string) bool
}

// Shrinker is a Pool the run can bring back down to sizes it recorded,
// one drained node at a time: what a scale-down needs, at the end of a
// run that scaled up and in abort, also of a scale-up a cloud's service
// made and left behind (EKS's, after its update failed).
type Shrinker interface {
	Pool
	// SetMax sets max alone.
	SetMax(ctx context.Context, max int32) error
	// Shrink takes a drained node's machine out of the group and lowers
	// the desired size by one, so nothing replaces it.
	Shrink(ctx context.Context, node string) error
}

// Scaler is a Pool the run resizes and points at the target itself (an
// Auto Scaling group): a run with it adds the Setup, ScaleUp and
// ScaleDown phases of the EKS update. Every method may be called again
// after an interruption.
type Scaler interface {
	Shrinker
	Remover
	// Setup makes the group launch the target configuration and returns
	// its version.
	Setup(ctx context.Context) (version string, err error)
	// SetDesiredAndMax sets both in one call.
	SetDesiredAndMax(ctx context.Context, desired, max int32) error
}

// Rebalancer is a Group whose cloud moves machines between zones of its
// own accord (AWS's AZRebalance launches in the emptiest zone, then
// terminates in the fullest): after a Shrink leaves the zones unbalanced it
// would terminate a node nobody drained. A run holds it off for the span of
// its Shrinks and evens the zones out itself, drained, before it lets go.
// A Group without it needs nothing.
type Rebalancer interface {
	Scaler
	// RebalanceName names the process for messages and the plan.
	RebalanceName() string
	// RebalanceHeld reports whether it is suspended now.
	RebalanceHeld(ctx context.Context) (bool, error)
	// RebalanceZones are the zones it balances the group between, also
	// those where the group runs no machine now.
	RebalanceZones(ctx context.Context) ([]string, error)
	// HoldRebalance suspends it and ReleaseRebalance resumes it; either
	// may be repeated.
	HoldRebalance(ctx context.Context) error
	ReleaseRebalance(ctx context.Context) error
}

// Deregisterer is a Provider whose machines sit in load balancers that
// keep sending them traffic, whatever Kubernetes says, until the cloud is
// told to let go (AWS: the group's target groups and Classic Load
// Balancers, with their deregistration delay). A run deregisters drained
// nodes before it removes them and waits until no load balancer holds
// them. A provider without it needs nothing.
type Deregisterer interface {
	Provider
	// Deregister takes the nodes' machines out of their load balancers and
	// returns once none holds them, or fails, naming the load balancer
	// and the machine, when timeout passes first. waiting is told what it
	// waits for. It may be repeated, also after an interruption.
	Deregister(ctx context.Context, nodes []string, timeout time.Duration, waiting func(what string)) error
}

// BlueGreen is a Pool that can stand a second, green group up beside it
// and delete the first one, blue: the blue/green strategies. It needs no
// more of blue than a Pool's reads and the sizes it sets through
// SetGroupSizes, so a group whose cloud service owns its sizes (an EKS
// managed node group) can be one without being a Group.
type BlueGreen interface {
	Pool
	// PrepareTarget makes sure the target version exists (creating it for
	// a new image) without pointing the group at it, and returns it.
	PrepareTarget(ctx context.Context) (version string, err error)
	// CheckQuota fails when the account cannot hold one group more.
	CheckQuota(ctx context.Context) error
	// GreenName names the green group of a version.
	GreenName(version string) string
	// CreateGreen creates the green group launching version, with blue's
	// zones and the given sizes, or finds the one an interrupted run
	// created.
	CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error
	// UseGreen makes Machines report the green group's machines too.
	UseGreen(name string)
	GroupSizes(ctx context.Context, group string) (plan.Sizes, error)
	SetGroupSizes(ctx context.Context, group string, s plan.Sizes) error
	// DeleteGroup deletes a group and its machines; a missing one is deleted.
	DeleteGroup(ctx context.Context, group string) error
}

// Cloud is a provider that owns the machines behind node groups. It serves
// planning (Open, which only reads) and running (the Provider it returns,
// whose interfaces say what a run may do: see Capabilities).
type Cloud interface {
	// Name is what --provider takes.
	Name() string
	// Owns reports whether a node's spec.providerID is one of its machines.
	Owns(providerID string) bool
	// Validate checks the target's values without calling the cloud.
	Validate(t plan.CloudTarget) error
	// Open connects (credentials, region), finds the group of nodes and
	// resolves the target: the plan's view of the group, and the provider
	// a run changes it with. It changes nothing. The caller fills in the
	// view's Can from the provider (see OpenGroup).
	Open(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, Provider, error)
}

// Capabilities are what a run may do with p, from the interfaces it
// implements: the one place that maps interfaces to plan.Capability.
func Capabilities(p Provider) plan.Capability {
	var can plan.Capability
	if _, ok := p.(Remover); ok {
		can |= plan.CapRemoveNodes
	}
	if _, ok := p.(Scaler); ok {
		can |= plan.CapResize
	}
	if _, ok := p.(BlueGreen); ok {
		can |= plan.CapNewGroups
	}
	if _, ok := p.(ManagedUpdater); ok {
		can |= plan.CapManagedUpdate
	}
	return can
}

// GroupName names the group p works on, "" when it has none (provider
// none).
func GroupName(p Provider) string {
	if g, ok := p.(interface{ GroupName() string }); ok {
		return g.GroupName()
	}
	return ""
}

// OpenGroup opens the nodes' group with c and fills in what the provider
// can do and the settings of its own it was opened with or resolved.
func OpenGroup(ctx context.Context, c Cloud, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, Provider, error) {
	cg, p, err := c.Open(ctx, client, nodes, t)
	if err != nil {
		return nil, nil, err
	}
	// The provider's own settings it resolved (aws's region) go into the
	// plan with those given, so that run --plan-file opens the same group.
	opts := maps.Clone(t.Options)
	if len(cg.Options) > 0 && opts == nil {
		opts = map[string]string{}
	}
	maps.Copy(opts, cg.Options)
	cg.Can, cg.Options = Capabilities(p), opts
	return cg, p, nil
}

// ErrNoGroup is behind Open's error when the nodes' machines belong to no
// group of the cloud (Karpenter's nodes, standalone machines): nothing of
// the cloud's replaces them, so provider none serves them.
var ErrNoGroup = errors.New("the machines belong to no group")

// ErrGroupNotFound is behind Open's error when the group the target names
// does not exist: mistyped, or deleted by the run that was deleting it
// (a blue/green run killed in its last phase).
var ErrGroupNotFound = errors.New("group not found")

// clouds are the providers that own machines, by name; "none" is not one.
var clouds = map[string]Cloud{}

// nodeGroupLabels are the registered clouds' node group labels
// (NodeGroupLabeler), in the order registered.
var nodeGroupLabels []string

// anyCloudsNodeGroupLabels name groups whichever cloud runs them: kOps'
// instance groups.
var anyCloudsNodeGroupLabels = []string{"kops.k8s.io/instancegroup"}

// Register makes a cloud available to --provider; a provider package calls
// it from init. A NodeGroupLabeler's labels join the keys NODEGROUP is
// looked up by.
func Register(c Cloud) {
	clouds[c.Name()] = c
	if l, ok := c.(NodeGroupLabeler); ok {
		for _, k := range l.NodeGroupLabels() {
			if !slices.Contains(nodeGroupLabels, k) {
				nodeGroupLabels = append(nodeGroupLabels, k)
			}
		}
	}
}

// NodeGroupLabels are the label keys a NODEGROUP is looked up by when
// --nodegroup-label is not given: the registered clouds' first, as
// registered (a node carrying two names its group by the first: EKS's
// before eksctl's), then kOps'.
func NodeGroupLabels() []string {
	keys := slices.Clone(nodeGroupLabels)
	for _, k := range anyCloudsNodeGroupLabels {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// NodeGroupLabeler is a cloud whose nodes carry labels naming their node
// group (EKS's, eksctl's): with it, a NODEGROUP is found by them without
// --nodegroup-label, and they complete, with no edit of another package.
type NodeGroupLabeler interface {
	NodeGroupLabels() []string
}

// Lookup returns the cloud --provider names.
func Lookup(name string) (Cloud, bool) {
	c, ok := clouds[name]
	return c, ok
}

// NoneName is the provider for nodes no cloud of ours owns.
const NoneName = "none"

// Names lists what --provider takes: every registered cloud, then none.
func Names() []string {
	var names []string
	for n := range clouds {
		names = append(names, n)
	}
	sort.Strings(names)
	return append(names, NoneName)
}

// Claimer is a cloud that knows its nodes by more than their provider IDs
// (GKE: Compute Engine instances labelled with a node pool): Detect asks
// it before the clouds that go by provider IDs alone, and picks it only
// for the nodes it claims.
type Claimer interface {
	Claims(n *corev1.Node) bool
}

// Detect picks the cloud that owns every node, or none.
func Detect(nodes []corev1.Node) string {
	if len(nodes) == 0 {
		return NoneName
	}
	owns := func(c Cloud, n *corev1.Node) bool {
		if cl, ok := c.(Claimer); ok {
			return cl.Claims(n)
		}
		return c.Owns(n.Spec.ProviderID)
	}
	names := Names()
	// Claimers first: their nodes' provider IDs are another cloud's too.
	slices.SortStableFunc(names, func(a, b string) int {
		_, ca := clouds[a].(Claimer)
		_, cb := clouds[b].(Claimer)
		return boolOrder(cb) - boolOrder(ca)
	})
	for _, name := range names {
		c, ok := clouds[name]
		if !ok {
			continue
		}
		if !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return !owns(c, &n) }) {
			return name
		}
	}
	return NoneName
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// None is the provider for clusters where something else owns the machines:
// it deletes the Node object (right for Karpenter and similar), or with
// DeleteNode false only labels the node as done.
type None struct {
	Client     kubernetes.Interface
	DeleteNode bool
}

// Name implements Provider.
func (n *None) Name() string { return NoneName }

// Describe implements Provider.
func (n *None) Describe() string {
	if n.DeleteNode {
		return "delete the Node object"
	}
	return fmt.Sprintf("leave the node cordoned and labelled %s=%s", plan.StateLabel, plan.StateDone)
}

// RemoveNode implements Provider.
func (n *None) RemoveNode(ctx context.Context, node string) error {
	if n.DeleteNode {
		err := n.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{plan.StateLabel: plan.StateDone}}})
	_, err := n.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

var _ Remover = (*None)(nil)

// PermissionProber is a Provider that can ask its cloud whether the caller
// may make each call a run with it makes. OpenGroup asks once, for every
// capability the provider has; the plan keeps what the chosen strategy
// needs. An error means the cloud failed to answer (not a denial): the plan
// says it could not check.
type PermissionProber interface {
	Provider
	ProbePermissions(ctx context.Context) (*plan.Permissions, error)
}
